#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof gprof`: gmon.out files read by GNU gprof, and
the text layout of gprof printed by cygprof itself.

Usage:
  gprof.py --cygprof CYGPROF --example EXE --test NAME [--example2 EXE]
           [--skip REASON] [-v] [--keep]

Each test records an example of examples/, reads `cygprof report
--format=json` (the exact reference), then:

  gmon      `cygprof gprof --gmon-out gmon.out`, then `gprof -b -p -q EXE
            gmon.out`: the call counts gprof prints (flat profile and call
            graph, recursion as N+R) equal the report's, less the calls that
            come from outside the executable (gprof shows those functions
            <spontaneous>); time is accumulated; every function's self time
            in the histogram (read from gmon.out, mapped with nm as gprof
            does) is within one tick of the report's, the total too.
            Also `cygprof gprof -b` parsed by the same parser: counts equal
            the report's (spontaneous calls included there).
  forkexec  one gmon file for the one executable of fork + exec of itself
            (3 processes), counts summed over the processes.
  multi     `sh -c 'EXE; EXE2'`: one file per executable, FILE and FILE.PID.

Exit status: 0 passed, 1 failed, 77 skipped (gprof or nm missing).
Helpers come from tests/lib/cygtest.py.
"""

import argparse
import os
import re
import shutil
import struct
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, Checker, Cygprof, run, describe_status, diff_table  # noqa: E402

SKIP = 77


# --------------------------------------------------------------------------
# gprof's text output


CYCLE_RE = re.compile(r'\s+<cycle \d+>$')
FLAT_RE = re.compile(r'^\s*(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)'
                     r'(?:\s+(\d+)\s+(\d+\.\d+)\s+(\d+\.\d+))?\s+(\S.*)$')
PRIMARY_RE = re.compile(r'^\[(\d+)\]\s+(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)'
                        r'(?:\s+(\d+)(?:\+(\d+))?)?\s+(\S.*?) \[(\d+)\]$')


def strip_name(name):
    return CYCLE_RE.sub('', name.strip())


def parse_gprof(text):
    """The flat profile and call graph of gprof's output (-p -q, -b or not).

    Returns dict with 'flat': name -> {self, calls}, 'graph': name ->
    {called, rec}, 'no_time': bool, 'sample': seconds per sample."""
    res = {'flat': {}, 'graph': {}, 'no_time': False, 'sample': None}
    section = None
    for line in text.split('\n'):
        if line.startswith('Flat profile:'):
            section = 'flat'
            continue
        if 'Call graph' in line and line.startswith('\t'):
            section = 'graph'
            continue
        if line.startswith('\f'):
            section = None
            continue
        if section == 'flat':
            m = re.match(r'^Each sample counts as (\S+) seconds', line)
            if m:
                res['sample'] = float(m.group(1))
            if 'no time accumulated' in line:
                res['no_time'] = True
            m = FLAT_RE.match(line)
            if m:
                res['flat'][strip_name(m.group(7))] = {
                    'self': float(m.group(3)),
                    'calls': int(m.group(4)) if m.group(4) else 0}
        elif section == 'graph':
            m = PRIMARY_RE.match(line)
            if m and 'as a whole' not in m.group(7):
                res['graph'][strip_name(m.group(7))] = {
                    'called': int(m.group(5)) if m.group(5) else 0,
                    'rec': int(m.group(6)) if m.group(6) else 0}
    return res


def check_counts(ck, parsed, data, what, spontaneous_shown):
    """Counts of gprof's text against the report: called + rec is the calls
    (less the spontaneous ones unless spontaneous_shown), rec the
    self-recursive calls, the flat column the called part."""
    want_cg, got_cg, want_flat, got_flat = {}, {}, {}, {}
    for f in data['functions']:
        if not f['calls']:
            continue
        name = f['name']
        total = f['calls'] - (0 if spontaneous_shown else f.get('spontaneous_calls', 0))
        rec = f.get('recursive_calls', 0)
        want_cg[name] = '%d+%d' % (total - rec, rec)
        want_flat[name] = total - rec
        g = parsed['graph'].get(name)
        got_cg[name] = '%d+%d' % (g['called'], g['rec']) if g else None
        fl = parsed['flat'].get(name)
        got_flat[name] = fl['calls'] if fl else (0 if total - rec == 0 else None)
    ck.check(diff_table('%s: call graph called+self per function' % what, want_cg, got_cg),
             '%s: call graph counts equal the report\'s (%d functions)' % (what, len(want_cg)))
    ck.check(diff_table('%s: flat profile calls per function' % what, want_flat, got_flat),
             '%s: flat profile counts equal the report\'s' % what)


# --------------------------------------------------------------------------
# gmon.out itself


def read_gmon(path):
    with open(path, 'rb') as f:
        b = f.read()
    if len(b) < 20 or b[:4] != b'gmon':
        raise Failure('%s: no gmon header' % path)
    version = struct.unpack_from('<i', b, 4)[0]
    if version != 1:
        raise Failure('%s: version %d, not 1' % (path, version))
    off, hists, arcs = 20, [], []
    while off < len(b):
        tag = b[off]
        off += 1
        if tag == 0:
            low, high, n, rate = struct.unpack_from('<QQII', b, off)
            dimen = b[off + 24:off + 39].rstrip(b'\0').decode()
            off += 40
            bins = struct.unpack_from('<%dH' % n, b, off)
            off += 2 * n
            hists.append(dict(low=low, high=high, rate=rate, bins=bins, dimen=dimen))
        elif tag == 1:
            arcs.append(struct.unpack_from('<QQI', b, off))
            off += 20
        else:
            raise Failure('%s: unexpected tag %d at offset %d' % (path, tag, off - 1))
    return hists, arcs


def function_symbols(exe):
    """(address, name) of the executable's functions, sorted, as gprof sees
    them: text symbols (nm types T, t, W)."""
    cp = run(['nm', '--defined-only', exe])
    if cp.returncode != 0:
        raise Failure('nm %s failed' % exe)
    syms = {}
    for line in cp.out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in 'TtWw':
            syms.setdefault(int(parts[0], 16), parts[2])
    return sorted(syms.items())


def hist_self_ns(ck, path, exe):
    """Per function name: histogram ticks, and the rate."""
    hists, _ = read_gmon(path)
    ck.eq(len(hists), 1, '%s: one histogram record' % os.path.basename(path))
    if not hists:
        return {}, 0
    h = hists[0]
    ck.eq(h['dimen'], 'seconds', 'histogram dimension')
    syms = function_symbols(exe)
    addrs = [a for a, _ in syms]
    scale = (h['high'] - h['low']) / len(h['bins'])
    ticks = {}
    import bisect
    for i, c in enumerate(h['bins']):
        if not c:
            continue
        lo = h['low'] + int(scale * i)
        k = bisect.bisect_right(addrs, lo) - 1
        name = syms[k][1] if k >= 0 else '?'
        ticks[name] = ticks.get(name, 0) + c
    return ticks, h['rate']


def check_times(ck, path, exe, data, what):
    ticks, rate = hist_self_ns(ck, path, exe)
    if not rate:
        ck.fail('%s: histogram rate is 0' % what)
        return
    tick_ns = 1e9 / rate
    print('info: %s: prof_rate %d Hz (tick %g ns), %d ticks' %
          (what, rate, tick_ns, sum(ticks.values())))
    fns = {f['name']: f for f in data['functions']}
    for name, t in sorted(ticks.items()):
        ck.check(name in fns, '%s: histogram time in %s, a reported function' % (what, name))
    for name, f in sorted(fns.items()):
        got = ticks.get(name, 0) * tick_ns
        ck.check(abs(got - f['self_ns']) <= tick_ns,
                 '%s: %s self %d ns within one tick (%g ns) of the report\'s %d ns' %
                 (what, name, got, tick_ns, f['self_ns']))
    total = sum(ticks.values()) * tick_ns
    ck.check(abs(total - data['total_self_ns']) <= tick_ns,
             '%s: total self %d ns within one tick of the report\'s %d ns' %
             (what, total, data['total_self_ns']))
    ck.check(sum(ticks.values()) > 0, '%s: time accumulated in the histogram' % what)


# --------------------------------------------------------------------------
# running things


def gprof_text(ck, exe, gmon):
    cp = run(['gprof', '-b', '-p', '-q', exe, gmon])
    if cp.returncode != 0:
        raise Failure('gprof failed (%s): %s' % (describe_status(cp.returncode), cp.err.strip()))
    if cygtest.VERBOSE:
        print(cp.out)
    return cp.out


def export(ck, cyg, capture, out):
    # as measured, as the report it is checked against (record_and_check)
    cp = run([cyg.exe, 'gprof', '--raw-times', '--gmon-out', out, capture])
    if cp.returncode != 0:
        raise Failure('cygprof gprof --gmon-out failed (%s): %s' %
                      (describe_status(cp.returncode), cp.err.strip()))
    return [line for line in cp.out.splitlines() if line.strip()]


WROTE_RE = re.compile(r'^cygprof: wrote (\S+) for (\S+) \((\d+) process(?:es)?\)$')


def check_gprof_run(ck, example, gmon, data, what):
    text = gprof_text(ck, example, gmon)
    parsed = parse_gprof(text)
    ck.check(not parsed['no_time'], '%s: gprof does not print "no time accumulated"' % what)
    ck.check(parsed['sample'] is not None and parsed['sample'] > 0,
             '%s: gprof prints the sample period (%r)' % (what, parsed['sample']))
    check_counts(ck, parsed, data, 'gprof ' + what, spontaneous_shown=False)
    # gprof's own total (2 decimals) agrees with the report's
    total_flat = sum(f['self'] for f in parsed['flat'].values())
    ck.check(abs(total_flat - data['total_self_ns'] / 1e9) <= 0.01 * max(1, len(parsed['flat'])),
             '%s: gprof flat self seconds add up to the report\'s total (%.2f vs %.6f)' %
             (what, total_flat, data['total_self_ns'] / 1e9))
    check_times(ck, gmon, example, data, what)


def test_gmon(exp_name):
    def t(ck, cyg, example, example2):
        exp = cygtest.EXPECT[exp_name]()
        capture, data, _ = cygtest.record_and_check(ck, cyg, example, exp)
        cygtest.check_functions(ck, data, exp['functions'])
        gmon = os.path.join(cyg.workdir, 'gmon.out')
        lines = export(ck, cyg, capture, gmon)
        ck.eq(len(lines), 1, 'one file written (%r)' % lines)
        m = WROTE_RE.match(lines[0]) if lines else None
        if ck.check(m is not None, 'the "wrote" line: %r' % lines):
            ck.eq(m.group(1), gmon, 'file name')
            ck.eq(m.group(2), example, 'executable')
            ck.eq(int(m.group(3)), 1, 'processes')
        check_gprof_run(ck, example, gmon, data, exp_name)

        # the text layout, parsed as gprof's own output
        cp = run([cyg.exe, 'gprof', '-b', capture])
        if cp.returncode != 0:
            raise Failure('cygprof gprof -b failed: %s' % cp.err.strip())
        parsed = parse_gprof(cp.out)
        check_counts(ck, parsed, data, 'cygprof gprof -b', spontaneous_shown=True)
        ck.check(not parsed['no_time'], 'text: time accumulated')
        ck.check('\f\nIndex by function name\n' in cp.out, 'text: index by function name')
        ck.check('explanation' not in cp.out, 'text -b: no explanations')
        cp = run([cyg.exe, 'gprof', capture])
        ck.check(cp.returncode == 0 and 'Call graph (explanation follows)' in cp.out,
                 'text without -b: the explanations')
        full = parse_gprof(cp.out)
        ck.eq(full['graph'], parsed['graph'], 'text with and without -b: same call graph')
    return t


def test_forkexec(ck, cyg, example, example2):
    exp = cygtest.EXPECT['forkexec']()
    capture, data, _ = cygtest.record_and_check(ck, cyg, example, exp)
    gmon = os.path.join(cyg.workdir, 'gmon.out')
    lines = export(ck, cyg, capture, gmon)
    ck.eq(len(lines), 1, 'fork child and exec\'d image of the same executable: one file '
          '(%r)' % lines)
    m = WROTE_RE.match(lines[0]) if lines else None
    if ck.check(m is not None, 'the "wrote" line: %r' % lines):
        ck.eq((m.group(1), m.group(2), int(m.group(3))), (gmon, example, 3),
              'file, executable, processes')
    ck.eq(sorted(os.listdir(cyg.workdir)), sorted(['cap.data', 'gmon.out']),
          'files in the directory')
    check_gprof_run(ck, example, gmon, data, 'forkexec')


def test_multi(ck, cyg, example, example2):
    """Two executables run by a shell: one file each, named by pid."""
    sh = shutil.which('sh')
    if not sh:
        raise Failure('no sh')
    capture = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(capture, [sh, '-c', '"$0"; "$1"', example, example2])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record exit status')
    data, _ = cyg.report_json(capture, ck)
    gmon = os.path.join(cyg.workdir, 'gmon.out')
    lines = export(ck, cyg, capture, gmon)
    got = [WROTE_RE.match(line) for line in lines]
    ck.check(len(got) == 2 and all(got), 'two "wrote" lines (%r)' % lines)
    if len(got) != 2 or not all(got):
        return
    pids = {}
    for p in data['processes']:
        pids.setdefault(os.path.basename(p['command'].split(' ')[0]), p['pid'])
    ck.eq((got[0].group(1), got[0].group(2), got[0].group(3)), (gmon, example, '1'),
          'first file: FILE for the first executable')
    pid2 = pids.get(os.path.basename(example2))
    ck.eq((got[1].group(1), got[1].group(2), got[1].group(3)),
          ('%s.%s' % (gmon, pid2), example2, '1'), 'second file: FILE.PID')
    for line in lines:
        ck.check(os.path.exists(WROTE_RE.match(line).group(1)), 'file exists: %s' % line)
    for m, exe in zip(got, (example, example2)):
        text = gprof_text(ck, exe, m.group(1))
        parsed = parse_gprof(text)
        ck.check(not parsed['no_time'], '%s: time accumulated' % os.path.basename(exe))
        want = cygtest.exp_calls() if 'calls' in exe else cygtest.exp_recursion()
        for name, calls in want['functions'].items():
            g = parsed['graph'].get(name)
            n = (g['called'] + g['rec']) if g else 0
            ck.eq(n, calls - (1 if name == 'main' else 0),
                  '%s: %s calls from gprof' % (os.path.basename(exe), name))


TESTS = {
    'calls': test_gmon('calls'),
    'recursion': test_gmon('recursion'),
    'threads': test_gmon('threads'),
    'forkexec': test_forkexec,
    'multi': test_multi,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--example', required=True)
    ap.add_argument('--example2')
    ap.add_argument('--test', required=True, choices=sorted(TESTS))
    ap.add_argument('--skip', metavar='REASON')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()
    cygtest.VERBOSE = args.verbose or bool(os.environ.get('CYGPROF_E2E_VERBOSE'))

    if args.skip:
        print('SKIP %s: %s' % (args.test, args.skip))
        return SKIP
    for tool in ('gprof', 'nm'):
        if not shutil.which(tool):
            print('SKIP %s: %s (GNU binutils) is not installed' % (args.test, tool))
            return SKIP
    cygprof = os.path.abspath(args.cygprof)
    example = os.path.abspath(args.example)
    example2 = os.path.abspath(args.example2) if args.example2 else None

    ck = Checker()
    workdir = tempfile.mkdtemp(prefix='cygprof-gprof-%s-' % args.test)
    try:
        TESTS[args.test](ck, Cygprof(cygprof, workdir), example, example2)
    except Failure as e:
        ck.fail(str(e))
    finally:
        if args.keep or (ck.failures and os.environ.get('CYGPROF_E2E_KEEP')):
            print('kept %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    if ck.failures:
        print('FAIL %s (%s): %d of %d checks failed' %
              (args.test, os.path.basename(example), len(ck.failures), max(ck.count, 1)))
        return 1
    print('PASS %s (%s): %d checks' % (args.test, os.path.basename(example), ck.count))
    return 0


if __name__ == '__main__':
    sys.exit(main())
