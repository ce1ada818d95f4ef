#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof export --format=callgrind` and `--format=pprof`.

Usage:
  callgrind_pprof.py --cygprof CYGPROF --example EXE --test NAME [--skip REASON] [-v] [--keep]

Each test records the example and reads `cygprof report --format=json` (the
exact reference), then:

  callgrind        export, read as a reader of the format would: every
                   function's self cost the report's self time; the calls=
                   lines add up to each function's calls less those from a
                   thread's root; the functions' file names and declaration
                   lines are there (-g build).
  callgrind-annotate
                   `callgrind_annotate` (valgrind) reads it: its program
                   total equals the report's total self time, every
                   function's self and inclusive time (--inclusive=yes) the
                   report's (skipped without callgrind_annotate).
  pprof            export, gunzip and decode the profile.proto with the small
                   reader below: the gzip header is cygprof's, the sums of
                   calls/count and time/nanoseconds equal the report's
                   (per function too, charging each sample to its innermost
                   location), every location names a function with its file,
                   a caller's at the source line of its call.
  pprof-go         `go tool pprof -top -nodefraction=0 -edgefraction=0`
                   reads it: every function with its calls (skipped
                   without go, Debian package golang-go).
  pprof-samples    (EXE tests/sampling's sampling-prog-cyg) record --sample:
                   samples/count and cpu/nanoseconds add up to the report's
                   samples and sampled ns, each function's innermost samples
                   to its own (those outside the call trees in one sample of
                   their own); skipped where perf events cannot be opened.
  pprof-plain      (EXE sampling-prog-plain, no instrumentation) record
                   --sample: the samples by their own stacks add up to the
                   report's samples and sampled ns, spin under main most.
  pprof-memory     (EXE built by tests/memory) record --memory: alloc_objects
                   and alloc_space add up to `cygprof memory --format=json`'s
                   totals, per innermost function too; leaked_space to its
                   leaked bytes; with --memory peak, peak_space to the peak.
  errors           --memory on a capture without memory events: one line,
                   exit 1; an existing file that is not a callgrind output
                   is refused without -f, replaced with -f; a callgrind
                   output is replaced, a pprof output is not.
"""
import gzip
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run  # noqa: E402


def record(ck, cyg, example, opts=()):
    cap = os.path.join(cyg.workdir, 'cap.cyg')
    cp = cyg.record(cap, [example], opts)
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    return cap


def export(cyg, cap, fmt, out, extra=()):
    cp = run([cyg.exe, 'export', '--format', fmt, '-o', out] + list(extra) + [cap])
    if cp.returncode != 0:
        raise Failure('export --format %s failed: %s' % (fmt, cp.err.strip()))


# --------------------------------------------------------------------------
# callgrind


def parse_callgrind(path):
    """Self cost per function, calls per callee, and the functions' files
    and lines, read from the file as a reader of the format would."""
    names = {'fn': {}, 'fl': {}}
    selfc, calls, place = {}, {}, {}
    fn = fl = cfn = None
    pending_calls = False

    def name(kind, val):
        m = re.match(r'\((\d+)\)(?: (.*))?$', val)
        if not m:
            return val
        if m.group(2) is not None:
            names[kind][m.group(1)] = m.group(2)
        return names[kind][m.group(1)]

    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if line.startswith('fl='):
                fl = name('fl', line[3:])
            elif line.startswith('fn='):
                fn = name('fn', line[3:])
                first = True
            elif line.startswith('cfn='):
                cfn = name('fn', line[4:])
            elif line.startswith(('cfl=', 'cfi=')):
                name('fl', line[4:])
            elif line.startswith('calls='):
                calls[cfn] = calls.get(cfn, 0) + int(line[6:].split()[0])
                pending_calls = True
            elif line[:1].isdigit() and fn is not None:
                pos, cost = line.split()
                if pending_calls:
                    pending_calls = False
                else:
                    selfc[fn] = selfc.get(fn, 0) + int(cost)
                    if first:
                        place[fn] = (fl, int(pos))
                        first = False
    return selfc, calls, place


def parse_annotate(text):
    """callgrind_annotate's program total and per function costs."""
    total, per = None, {}
    for line in text.splitlines():
        m = re.match(r'\s*([\d,]+)\s+(?:\([^)]*\)\s+)?(.*)$', line)
        if not m:
            continue
        v = int(m.group(1).replace(',', ''))
        rest = m.group(2)
        if rest.startswith('PROGRAM TOTALS'):
            total = v
            continue
        m2 = re.match(r'(.*):(\S+) \[.*\]$', rest)
        if m2:
            per[m2.group(2)] = v
    return total, per


def test_callgrind(ck, cyg, example, args):
    cap = record(ck, cyg, example)
    # as measured: compensated, a call site's time is scaled from its call
    # path's and may differ from it by rounding (1 ns)
    data, _ = cyg.report_json(cap, ck, raw=True)
    out = os.path.join(cyg.workdir, 'callgrind.out.1')
    export(cyg, cap, 'callgrind', out, ['--raw-times'])
    with open(out, 'rb') as f:
        ck.eq(f.read(19), b'# callgrind format\n', 'the file starts with the callgrind mark')
    fns = cygtest.fn_map(data)
    selfc, calls, place = parse_callgrind(out)
    ck.eq(selfc, {n: f['self_ns'] for n, f in fns.items()}, 'self ns per function in the file')
    want_calls = {n: f['calls'] - f['spontaneous_calls'] for n, f in fns.items()
                  if f['calls'] - f['spontaneous_calls']}
    ck.eq(calls, want_calls, 'calls= lines per callee (less calls from a thread root)')
    src = os.path.basename(example).split('-')[1]
    for n, f in fns.items():
        fl, ln = place.get(n, (None, 0))
        ck.check(fl and fl.endswith('.c') and os.path.basename(fl).startswith(src[:4]) and ln > 0,
                 '%s has its file and declaration line (%r:%r)' % (n, fl, ln))


def need(tool, package):
    """The optional tool's path; the test is skipped (exit 77) without it."""
    path = shutil.which(tool)
    if not path:
        print('SKIP: %s is not installed (Debian package %s)' % (tool, package))
        sys.exit(cygtest.SKIP)
    return path


def test_callgrind_annotate(ck, cyg, example, args):
    """callgrind_annotate (valgrind) reads the export: its totals are the
    report's."""
    tool = need('callgrind_annotate', 'valgrind')
    cap = record(ck, cyg, example)
    # as measured: compensated, a call site's time is scaled from its call
    # path's and may differ from it by rounding (1 ns)
    data, _ = cyg.report_json(cap, ck, raw=True)
    out = os.path.join(cyg.workdir, 'callgrind.out.1')
    export(cyg, cap, 'callgrind', out, ['--raw-times'])
    fns = cygtest.fn_map(data)
    cp = run([tool, '--threshold=100', out])
    ck.eq(cp.returncode, 0, 'callgrind_annotate exit status')
    total, per = parse_annotate(cp.out)
    ck.eq(total, data['total_self_ns'], 'callgrind_annotate PROGRAM TOTALS = total self ns')
    ck.eq(per, {n: f['self_ns'] for n, f in fns.items() if f['self_ns']},
          'callgrind_annotate self ns per function')
    cp = run([tool, '--threshold=100', '--inclusive=yes', out])
    _, per = parse_annotate(cp.out)
    ck.eq(per, {n: f['total_ns'] for n, f in fns.items() if f['total_ns']},
          'callgrind_annotate --inclusive=yes ns per function = report total_ns')


# --------------------------------------------------------------------------
# pprof: a small profile.proto reader


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << s
        s += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of a message: ints for varints, bytes for
    length-delimited fields."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], 'little'), i + 8
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], 'little'), i + 4
        else:
            raise Failure('pprof: bad wire type %d' % wt)
        out.append((f, wt, v))
    return out


def packed(v, wt):
    if wt == 0:
        return [v]
    i, out = 0, []
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def decode_profile(path):
    raw = open(path, 'rb').read()
    data = gzip.decompress(raw)
    p = {'sample_type': [], 'sample': [], 'mapping': [], 'location': {}, 'function': {},
         'strings': [], 'raw': raw, 'default': 0, 'period_type': None}
    for f, wt, v in fields(data):
        if f == 1:
            d = dict((ff, vv) for ff, _, vv in fields(v))
            p['sample_type'].append((d.get(1, 0), d.get(2, 0)))
        elif f == 2:
            locs, vals = [], []
            for ff, w, vv in fields(v):
                if ff == 1:
                    locs += packed(vv, w)
                elif ff == 2:
                    vals += packed(vv, w)
            p['sample'].append((locs, vals))
        elif f == 3:
            p['mapping'].append(dict((ff, vv) for ff, _, vv in fields(v)))
        elif f == 4:
            d, lines = {}, []
            for ff, _, vv in fields(v):
                if ff == 4:
                    lines.append(dict((a, c) for a, _, c in fields(vv)))
                else:
                    d[ff] = vv
            d['lines'] = lines
            p['location'][d.get(1, 0)] = d
        elif f == 5:
            d = dict((ff, vv) for ff, _, vv in fields(v))
            p['function'][d.get(1, 0)] = d
        elif f == 6:
            p['strings'].append(v.decode())
        elif f == 11:
            p['period_type'] = dict((ff, vv) for ff, _, vv in fields(v))
        elif f == 14:
            p['default'] = v
    s = p['strings']
    p['types'] = ['%s/%s' % (s[t], s[u]) for t, u in p['sample_type']]
    return p


def leaf_name(p, locs):
    loc = p['location'][locs[0]]
    return p['strings'][p['function'][loc['lines'][0][1]][2]]


def test_pprof(ck, cyg, example, args):
    cap = record(ck, cyg, example)
    data, _ = cyg.report_json(cap, ck)
    out = os.path.join(cyg.workdir, 'profile.pb.gz')
    export(cyg, cap, 'pprof', out)
    p = decode_profile(out)
    ck.eq(p['raw'][:29], b'\x1f\x8b\x08\x08\0\0\0\0\0\x03cygprof-profile.pb\0',
          'the gzip header is cygprof\'s')
    ck.eq(p['strings'][:1], [''], 'the string table starts with ""')
    ck.eq(p['types'], ['calls/count', 'time/nanoseconds'], 'sample types')
    ck.eq(p['strings'][p['default']], 'time', 'default sample type')
    sums = [sum(v[k] for _, v in p['sample']) for k in range(2)]
    fns = cygtest.fn_map(data)
    ck.eq(sums[0], sum(f['calls'] for f in fns.values()), 'sum of calls/count = report calls')
    ck.eq(sums[1], data['total_self_ns'], 'sum of time/nanoseconds = report total self ns')
    per_calls, per_self = {}, {}
    for locs, vals in p['sample']:
        n = leaf_name(p, locs)
        per_calls[n] = per_calls.get(n, 0) + vals[0]
        per_self[n] = per_self.get(n, 0) + vals[1]
    ck.eq(per_calls, {n: f['calls'] for n, f in fns.items()}, 'calls per innermost function')
    ck.eq(per_self, {n: f['self_ns'] for n, f in fns.items()}, 'self ns per innermost function')
    for fid, fn in p['function'].items():
        name = p['strings'][fn.get(2, 0)]
        fl = p['strings'][fn.get(4, 0)]
        ck.check(fl.endswith('.c') and fn.get(5, 0) > 0,
                 'function %s has its file and line (%r:%r)' % (name, fl, fn.get(5, 0)))
    ck.check(all(loc.get(2) for loc in p['location'].values()) and p['mapping'],
             'every location has a mapping')
    depth = max(len(locs) for locs, _ in p['sample'])
    ck.check(depth >= 2, 'samples are call paths (deepest %d)' % depth)
    # a caller's frame is at the line of its call
    srcs, bad, seen = {}, [], 0
    for locs, _ in p['sample']:
        for inner, outer in zip(locs, locs[1:]):
            callee = leaf_name(p, [inner])
            loc = p['location'][outer]
            fn = p['function'][loc['lines'][0][1]]
            fl, ln = p['strings'][fn.get(4, 0)], loc['lines'][0].get(2, 0)
            if fl not in srcs:
                srcs[fl] = open(fl).read().split('\n') if os.path.isfile(fl) else []
            text = srcs[fl][ln - 1] if 0 < ln <= len(srcs[fl]) else ''
            seen += 1
            if not re.search(r'\b%s\s*\(' % re.escape(callee), text):
                bad.append('%s:%d %r does not call %s' % (fl, ln, text, callee))
    ck.check(seen and not bad, 'callers\' locations are at their calls (%d): %s' % (seen, bad))


def test_pprof_go(ck, cyg, example, args):
    """`go tool pprof -top` reads the export: every function with its calls
    (-nodefraction=0 -edgefraction=0: pprof drops small nodes otherwise)."""
    go = need('go', 'golang-go')
    cap = record(ck, cyg, example)
    data, _ = cyg.report_json(cap, ck)
    out = os.path.join(cyg.workdir, 'profile.pb.gz')
    export(cyg, cap, 'pprof', out)
    cp = run([go, 'tool', 'pprof', '-top', '-sample_index=calls', '-nodefraction=0',
              '-edgefraction=0', out], timeout=300)
    ck.eq(cp.returncode, 0, 'go tool pprof -top exit status')
    for n, f in cygtest.fn_map(data).items():
        ck.check(re.search(r'^\s*%d\b.*\s%s\s*$' % (f['calls'], re.escape(n)), cp.out,
                           re.M) is not None, 'go tool pprof -top shows %s %d' % (n, f['calls']))


def test_pprof_memory(ck, cyg, example, args):
    cap = record(ck, cyg, example, ['--memory'])
    cp = run([cyg.exe, 'memory', '--format=json', cap])
    if cp.returncode != 0:
        raise Failure('cygprof memory --format=json failed: %s' % cp.err.strip())
    m = json.loads(cp.out)
    tot = m.get('totals', m)
    out = os.path.join(cyg.workdir, 'mem.pb.gz')
    export(cyg, cap, 'pprof', out, ['--memory', 'allocated'])
    p = decode_profile(out)
    ck.eq(p['types'], ['alloc_objects/count', 'alloc_space/bytes', 'leaked_space/bytes'],
          'sample types')
    ck.eq(p['strings'][p['default']], 'alloc_space', 'default sample type')
    sums = [sum(v[k] for _, v in p['sample']) for k in range(3)]
    ck.eq(sums[0], tot['allocations'], 'sum of alloc_objects = allocations')
    ck.eq(sums[1], tot['allocated_bytes'], 'sum of alloc_space = allocated bytes')
    ck.eq(sums[2], tot['leaked_bytes'], 'sum of leaked_space = leaked bytes')
    ck.check(sums[0] > 0, 'the example allocates')
    per = {}
    for locs, vals in p['sample']:
        n = leaf_name(p, locs)
        per[n] = per.get(n, 0) + vals[1]
    ck.eq({n: b for n, b in per.items() if b},
          {f['name']: f['self_bytes'] for f in m['functions'] if f['self_bytes']},
          'alloc_space per innermost function = memory self bytes')
    export(cyg, cap, 'pprof', out, ['--memory', 'peak'])
    p = decode_profile(out)
    ck.eq(p['types'][2], 'peak_space/bytes', '--memory peak: third sample type')
    ck.eq(p['strings'][p['default']], 'peak_space', '--memory peak: default sample type')
    ck.eq(sum(v[2] for _, v in p['sample']), tot['peak_bytes'], 'sum of peak_space = peak bytes')


def test_pprof_samples(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.cyg')
    cp = cyg.record(cap, [example], ['--sample=1000'])
    if cp.returncode != 0:
        if 'perf' in cp.err or 'sampl' in cp.err:
            print('SKIP: record --sample: %s' % cp.err.strip())
            sys.exit(cygtest.SKIP)
        raise Failure('record --sample failed: %s' % cp.err.strip())
    data, _ = cyg.report_json(cap, ck)
    sm = data.get('samples') or {}
    if not sm.get('samples'):
        print('SKIP: no perf samples recorded')
        sys.exit(cygtest.SKIP)
    out = os.path.join(cyg.workdir, 'prof.pb.gz')
    export(cyg, cap, 'pprof', out, ['--weight', 'samples'])
    p = decode_profile(out)
    ck.eq(p['types'], ['calls/count', 'time/nanoseconds', 'samples/count', 'cpu/nanoseconds'],
          'sample types')
    ck.eq(p['strings'][p['default']], 'samples', 'default sample type (--weight samples)')
    sums = [sum(v[k] for _, v in p['sample']) for k in range(4)]
    ck.eq(sums[0], sum(f['calls'] for f in data['functions']), 'sum of calls')
    ck.eq(sums[1], data['total_self_ns'], 'sum of time')
    ck.eq(sums[2], sm['samples'], 'sum of samples/count = report samples')
    ck.eq(sums[3], sm['sampled_ns'], 'sum of cpu/nanoseconds = report sampled ns')
    per = {}
    for locs, vals in p['sample']:
        if vals[2]:
            n = leaf_name(p, locs)
            per[n] = per.get(n, 0) + vals[2]
    # a sample the report charges to a function may be on no call path
    # (its stack leaves the tree): then it is in the sample of its own
    want = {f['name']: f['samples'] for f in data['functions'] if f.get('samples')}
    outside = per.pop('[samples outside the call trees]', 0)
    # samples in cygprof's runtime are the profiler's, charged to no function
    ck.eq(per.pop('[profiler overhead]', 0), sm['overhead']['samples'],
          'the pprof\'s [profiler overhead] samples are the report\'s overhead')
    over = {n: (v, want.get(n, 0)) for n, v in per.items() if v > want.get(n, 0)}
    ck.check(not over, 'no function has more samples on paths than in the report: %s' % over)
    ck.eq(outside, sm['samples'] - sum(per.values()) - sm['overhead']['samples'],
          'the samples outside the call trees')
    ck.check(per.get('spin', 0) * 2 > sm['samples'],
             'spin: most samples on its path (%d of %d)' % (per.get('spin', 0), sm['samples']))


def test_pprof_plain(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.cyg')
    cp = cyg.record(cap, [example], ['--sample=1000'])
    if cp.returncode != 0:
        if 'perf' in cp.err or 'sampl' in cp.err:
            print('SKIP: record --sample: %s' % cp.err.strip())
            sys.exit(cygtest.SKIP)
        raise Failure('record --sample failed: %s' % cp.err.strip())
    data, _ = cyg.report_json(cap, ck)
    sm = data.get('samples') or {}
    if not sm.get('samples'):
        print('SKIP: no perf samples recorded')
        sys.exit(cygtest.SKIP)
    out = os.path.join(cyg.workdir, 'prof.pb.gz')
    export(cyg, cap, 'pprof', out)
    p = decode_profile(out)
    ck.eq(p['types'], ['samples/count', 'cpu/nanoseconds'], 'sample types without call trees')
    ck.eq(p['strings'][p['default']], 'samples', 'default sample type')
    sums = [sum(v[k] for _, v in p['sample']) for k in range(2)]
    ck.eq(sums[0], sm['samples'], 'sum of samples/count = report samples')
    ck.eq(sums[1], sm['sampled_ns'], 'sum of cpu/nanoseconds = report sampled ns')
    spin = sum(v[0] for locs, v in p['sample']
               if leaf_name(p, locs) == 'spin' and
               'main' in [leaf_name(p, [l]) for l in locs[1:]])
    ck.check(spin * 2 > sums[0], 'spin under main: %d of %d samples' % (spin, sums[0]))


def test_errors(ck, cyg, example, args):
    cap = record(ck, cyg, example)
    out = os.path.join(cyg.workdir, 'x.pb.gz')
    cp = run([cyg.exe, 'export', '--format', 'pprof', '--memory', 'allocated', '-o', out, cap])
    ck.eq(cp.returncode, 1, '--memory without memory events: exit status')
    ck.eq(len(cp.err.strip().splitlines()), 1, '--memory without memory events: one line')
    ck.check(not os.path.exists(out), 'no output is left behind')
    txt = os.path.join(cyg.workdir, 'notes.txt')
    with open(txt, 'w') as f:
        f.write('my notes\n')
    cp = run([cyg.exe, 'export', '--format', 'callgrind', '-o', txt, cap])
    ck.check(cp.returncode != 0 and len(cp.err.strip().splitlines()) == 1,
             'an existing non-callgrind file is refused with one line (exit %d)' % cp.returncode)
    ck.eq(open(txt).read(), 'my notes\n', 'the file is left alone')
    cg = os.path.join(cyg.workdir, 'callgrind.out')
    export(cyg, cap, 'callgrind', cg)
    export(cyg, cap, 'callgrind', cg)
    ck.check(True, 'an earlier callgrind output is replaced')
    export(cyg, cap, 'pprof', txt, ['-f'])
    ck.eq(open(txt, 'rb').read(2), b'\x1f\x8b', '-f replaces the file')
    cp = run([cyg.exe, 'export', '--format', 'callgrind', '-o', txt, cap])
    ck.check(cp.returncode != 0, 'a pprof output is not replaced by a callgrind one')


TESTS = {
    'callgrind': test_callgrind,
    'callgrind-annotate': test_callgrind_annotate,
    'pprof': test_pprof,
    'pprof-go': test_pprof_go,
    'pprof-memory': test_pprof_memory,
    'pprof-samples': test_pprof_samples,
    'pprof-plain': test_pprof_plain,
    'errors': test_errors,
}


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'export', __doc__))
