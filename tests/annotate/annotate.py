#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof annotate` / `cygprof-annotate` and the debug
info lookup.

Usage:
  annotate.py --cygprof CYGPROF --annotate CYGPROF_ANNOTATE --example EXE
              --other EXE2 --source SRC --test NAME [--sanitize B_SANITIZE]
              [--skip REASON] [-v] [--keep]

The example is examples/annotate.c, built with -finstrument-functions -g;
EXE2 is the same source built at another optimization level (so with
another build-id), used as the wrong debug file.  The lines the checks look
at are found by their marker comments (/* L_CALL_B1 */ ...) in SRC, and the
expected figures are those stated in the example's comment block.

Tests:
  lines      exact calls per call line, entries at the definition lines,
             allocations at the malloc line (record --memory, unless
             b_sanitize is set), JSON and text, SOURCE selection,
             --source-dir, --prefix-map, a missing source, option errors
  deleted    `cygprof report` after the binary was deleted (names from the
             capture); annotate still exits 0 (no lines)
  debugdir   a separate debug file (objcopy --only-keep-debug) in a
             --debug-dir laid out by build-id, the binary stripped
             (strip --strip-debug): lines found; DIR/<name>.debug and
             CYGPROF_DEBUG_DIRS too; then with the binary deleted
  debuglink  .gnu_debuglink next to the binary (CRC checked): lines found; a
             debug file with the wrong CRC is refused with a warning
  recursion  (EXE examples/recurtime.c) the inclusive time of a recursive
             call line is its outermost call's (exact against the report's
             functions and arcs), no line above the run; exact calls
  function   annotate CAPTURE FUNCTION / SOURCE:LINE / a glob: only the
             function's lines (definition to closing brace), exact calls,
             entries and self time, hottest first; both executables
  mismatch   the other build's debug file at the expected build-id path (and
             by debuglink) is refused with the warning, exit 0, no lines

Exit status: 0 passed, 1 failed, 77 skipped.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, Checker, run, describe_status  # noqa: E402

SKIP = 77
GRAB_BYTES = 100

ARGS = None


def markers(src):
    lines = {}
    with open(src) as f:
        for i, text in enumerate(f, 1):
            for m in re.finditer(r'/\* (L_[A-Z0-9_]+) \*/', text):
                lines[m.group(1)] = i
    return lines


def expected(src, memory):
    m = markers(src)
    want = {}

    def put(marker, **kw):
        fig = want.setdefault(m[marker], {'calls': 0, 'entries': 0, 'alloc_bytes': 0,
                                          'allocations': 0})
        fig.update(kw)

    put('L_CALL_A1', calls=3)
    put('L_CALL_A2', calls=2)
    put('L_CALL_B1', calls=12)
    put('L_CALL_B2', calls=5)
    put('L_CALL_G', calls=4)
    put('L_DEF_MAIN', entries=1)
    put('L_DEF_A', entries=5)
    put('L_DEF_B', entries=17)
    put('L_DEF_GRAB', entries=4)
    if memory:
        put('L_MALLOC', allocations=4, alloc_bytes=4 * GRAB_BYTES)
    return want


def annotate(ck, args, status=0, exe=None, env=None, raw=True):
    # times as measured: a call of a tiny function can lose all its time to
    # overhead compensation, and "a line with calls has time" is a check of
    # what was measured (tests/overhead/ checks the compensated figures)
    cmd = [exe or ARGS.annotate] + (['--raw-times'] if raw else []) + list(args)
    print('$ ' + ' '.join(cmd))
    cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL, timeout=cygtest.TIMEOUT, env=env)
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    if cp.returncode != status:
        for line in cp.err.splitlines()[:20]:
            print('  stderr: ' + line)
        raise Failure('%s: expected exit %d, got %s' % (' '.join(cmd), status,
                                                       describe_status(cp.returncode)))
    return cp


def annotate_json(ck, args, env=None, exe=None, raw=True):
    cp = annotate(ck, ['--format=json'] + list(args), env=env, exe=exe, raw=raw)
    try:
        data = json.loads(cp.out)
    except ValueError as e:
        raise Failure('annotate output is not JSON (%s): %s' % (e, cp.out[:500])) from e
    ck.check(isinstance(data.get('files'), list), 'JSON has a files list')
    for f in data['files']:
        ck.check(isinstance(f.get('path'), str) and isinstance(f.get('lines'), list),
                 'file entries have path and lines')
        prev = 0
        for ln in f['lines']:
            for k in ('line', 'calls', 'entries', 'total_ns', 'alloc_bytes', 'samples'):
                if not cygtest.is_int(ln.get(k)):
                    raise Failure('line %r of %s lacks integer %s' % (ln, f['path'], k))
            if ln['line'] <= prev:
                raise Failure('lines of %s not sorted' % f['path'])
            prev = ln['line']
            if not any(ln[k] for k in ('calls', 'entries', 'total_ns', 'alloc_bytes',
                                       'samples')):
                raise Failure('line %d of %s has only zero figures' % (ln['line'], f['path']))
    return data, cp


def example_file(data):
    for f in data['files']:
        if f['path'].endswith('/examples/annotate.c') or f['path'].endswith('/annotate.c'):
            return f
    return None


def check_lines(ck, data, src, memory, what):
    f = example_file(data)
    if not ck.check(f is not None, '%s: annotate.c is in the output' % what):
        return
    ck.check(os.path.isabs(f['path']), '%s: path %s is absolute' % (what, f['path']))
    ck.eq(os.path.realpath(f['path']), os.path.realpath(src), '%s: path names the source' % what)
    want = expected(src, memory)
    got = {}
    for ln in f['lines']:
        fig = {k: ln[k] for k in ('calls', 'entries', 'alloc_bytes', 'allocations')}
        if any(fig.values()):
            got[ln['line']] = fig
    ck.check(cygtest.diff_table('%s: figures per line' % what, want, got),
             '%s: figures per line of annotate.c are exact' % what)
    for ln in f['lines']:
        if ln['calls']:
            ck.check(ln['total_ns'] > 0, '%s: line %d has time' % (what, ln['line']))
        else:
            ck.eq(ln['total_ns'], 0, '%s: line %d without calls has no time' % (what, ln['line']))
        ck.eq(ln['samples'], 0, '%s: samples are 0' % what)


def record(ck, cyg, capture, prog, memory, cwd=None):
    opts = ['--memory'] if memory else []
    cp = cyg.record(capture, [prog], opts=opts, cwd=cwd)
    if cp.returncode != 0:
        raise Failure('record failed (%s): %s' % (describe_status(cp.returncode), cp.err.strip()))
    ck.check('annotate: a=5 b=17 grab=4' in cp.out, 'the example printed its counts')


def memory_ok():
    return ARGS.sanitize in ('', 'none')


# --------------------------------------------------------------------------


def test_lines(ck, cyg, example, workdir):
    src = ARGS.source
    mem = memory_ok()
    cap = os.path.join(workdir, 'cap.data')
    record(ck, cyg, cap, example, mem)
    data, _ = annotate_json(ck, [cap])
    check_lines(ck, data, src, mem, 'json')
    # the same through 'cygprof annotate'
    data2, _ = annotate_json(ck, [cap], exe=None)
    cp = run([cyg.exe, 'annotate', '--raw-times', '--format=json', cap])
    ck.eq(cp.returncode, 0, 'cygprof annotate exits 0')
    ck.eq(json.loads(cp.out)['files'], data2['files'], 'cygprof annotate = cygprof-annotate')
    # SOURCE selection: by basename, by path suffix, none matching
    m = markers(src)
    data, _ = annotate_json(ck, [cap, 'annotate.c'])
    ck.eq([os.path.basename(f['path']) for f in data['files']], ['annotate.c'],
          'SOURCE annotate.c selects only that file')
    data, _ = annotate_json(ck, [cap, 'examples/annotate.c'])
    ck.eq(len(data['files']), 1, 'SOURCE examples/annotate.c selects one file')
    for exe in (None, cyg.exe):
        for arg, what in (('nosuch.c', "no source file of"), ('/nonexistent.c', "no source file of"),
                          ('no_such_function', "neither a function"),
                          ('annotate.c:1', 'no recorded function holds line 1')):
            cmd = [ARGS.annotate] if exe is None else [exe, 'annotate']
            cp = run(cmd + [cap, arg])
            ck.check(cp.returncode == 1 and len(cp.err.strip().splitlines()) == 1 and
                     arg in cp.err and what in cp.err and cp.out == '',
                     '%s %s: a one-line error naming it, exit 1 (%d, %r)'
                     % (os.path.basename(cmd[-1]), arg, cp.returncode, cp.err))
    data, _ = annotate_json(ck, ['--all', cap])
    ck.check(example_file(data) is not None, '--all shows annotate.c')

    # text: the source lines with their columns, hot marks
    cp = annotate(ck, [cap, 'annotate.c'])
    lines = cp.out.splitlines()
    ck.check(any(ln.startswith('== ') and ln.endswith('annotate.c') for ln in lines),
             'text has a header for annotate.c')
    row = [ln for ln in lines if re.search(r'\b%d  .*L_CALL_B1' % m['L_CALL_B1'], ln)]
    ck.check(len(row) == 1 and re.match(r'^[> ]\s+12\s', row[0]) is not None,
             'text: L_CALL_B1 line shows 12 calls: %r' % row)
    row = [ln for ln in lines if re.search(r'\b%d  .*L_DEF_B' % m['L_DEF_B'], ln)]
    ck.check(len(row) == 1 and re.match(r'^[> ]\s{10} \s+17\s', row[0]) is not None,
             'text: L_DEF_B line shows 17 entries in the entries column: %r' % row)
    hot = [ln for ln in lines if ln.startswith('>')]
    ck.check(1 <= len(hot) <= 5, 'text: 1 to 5 lines marked hot (%d)' % len(hot))
    data, _ = annotate_json(ck, [cap, 'annotate.c'])
    top = max(data['files'][0]['lines'], key=lambda ln: ln['self_ns'])['line']
    row = [ln for ln in lines if re.search(r'\b%d  ' % top, ln)]
    ck.check(len(row) == 1 and row[0].startswith('>'),
             'text: the line of most self time in annotate.c (%d) is marked' % top)
    # the marks go by self time: only definition lines (the functions' own time)
    defs = {m[k] for k in ('L_DEF_MAIN', 'L_DEF_A', 'L_DEF_B', 'L_DEF_GRAB')}
    head = next(ln for ln in lines if 'line  source' in ln)
    end = head.index('line  source') + 4
    marked = [int(ln[:end].split()[-1]) for ln in hot]
    ck.check(set(marked) <= defs, 'text: the marked lines are definitions (%s of %s)'
             % (marked, sorted(defs)))
    # a line's self time is the self time of the function defined there
    rep, _ = cyg.report_json(cap, ck, raw=True)
    fns = cygtest.fn_map(rep)
    byline = {ln['line']: ln for ln in data['files'][0]['lines']}
    for name, mk in (('main', 'L_DEF_MAIN'), ('a', 'L_DEF_A'), ('b', 'L_DEF_B'),
                     ('grab', 'L_DEF_GRAB')):
        ck.eq(byline.get(m[mk], {}).get('self_ns'), fns[name]['self_ns'],
              '%s: self_ns at its definition line = report\'s self_ns' % name)
    ck.eq(sum(ln['self_ns'] for ln in data['files'][0]['lines']),
          sum(fns[n]['self_ns'] for n in ('main', 'a', 'b', 'grab')),
          'self_ns of the lines add up to the functions\' self time')
    # --hot 0: no marks
    cp = annotate(ck, ['--hot', '0', cap, 'annotate.c'])
    ck.check(not any(ln.startswith('>') for ln in cp.out.splitlines()), '--hot 0 marks none')

    # sources moved: missing source note, then --source-dir and --prefix-map
    moved = os.path.join(workdir, 'moved', 'examples')
    os.makedirs(moved)
    shutil.copy(src, moved)
    orig_dir = os.path.dirname(os.path.realpath(src))
    hidden = os.path.join(workdir, 'nosrc')
    cp = annotate(ck, ['--prefix-map', '%s=%s' % (orig_dir, hidden), cap, 'annotate.c'])
    ck.check('source not found' in cp.out, 'a missing source gives a note')
    row = [ln for ln in cp.out.splitlines() if re.search(r'\s%d$' % m['L_CALL_B1'], ln)]
    ck.check(len(row) == 1 and re.match(r'^[> ]\s+12\s', row[0]) is not None,
             'missing source: counts by line number (%r)' % row)
    cp = annotate(ck, ['--prefix-map', '%s=%s' % (orig_dir, moved), cap, 'annotate.c'])
    ck.check('source not found' not in cp.out and 'L_CALL_B1' in cp.out
             and ('source read from ' + os.path.join(moved, 'annotate.c')) in cp.out,
             '--prefix-map finds the source')
    data, _ = annotate_json(ck, ['--prefix-map', '%s=%s' % (orig_dir, hidden),
                                 '--source-dir', os.path.join(workdir, 'moved'), cap,
                                 'annotate.c'])
    ck.eq(data['files'][0].get('source') if data['files'] else None,
          os.path.join(moved, 'annotate.c'), '--source-dir finds the source by suffix')

    # help, option errors
    cp = annotate(ck, ['--help'])
    ck.check('--debug-dir' in cp.out and '--source-dir' in cp.out, '--help describes options')
    cp = annotate(ck, ['--format=xml', cap], status=2)
    ck.check(cp.err.startswith('cygprof: '), 'bad --format: one-line error')
    cp = annotate(ck, ['--prefix-map', 'nonsense', cap], status=2)
    cp = annotate(ck, [os.path.join(workdir, 'nosuch.data')], status=1)
    ck.check(len(cp.err.strip().splitlines()) == 1, 'missing capture: one-line error')


def closing_brace(src, start):
    """The line of the first '}' in column 0 at or after line start."""
    with open(src) as f:
        for i, text in enumerate(f, 1):
            if i >= start and text.startswith('}'):
                return i
    return None


def test_function(ck, cyg, example, workdir):
    """annotate CAPTURE FUNCTION, SOURCE:LINE and a glob: only that
    function's lines (its DWARF range: definition line to closing brace),
    exact figures, hottest first; cygprof annotate and cygprof-annotate
    alike."""
    src = ARGS.source
    m = markers(src)
    cap = os.path.join(workdir, 'cap.data')
    record(ck, cyg, cap, example, False)
    first, last = m['L_DEF_A'], closing_brace(src, m['L_DEF_A'])
    rep, _ = cyg.report_json(cap, ck, raw=True)
    fns = cygtest.fn_map(rep)
    for args, what in ((['a'], 'FUNCTION a'), (['annotate.c:%d' % m['L_CALL_B2']], 'SOURCE:LINE'),
                       (['%s:%d' % (os.path.realpath(src), first)], 'PATH:LINE of the definition')):
        data, _ = annotate_json(ck, [cap] + args)
        ck.eq(data['files'], [], '%s: no whole file' % what)
        secs = data.get('functions', [])
        if not ck.eq([s['name'] for s in secs], ['a'], '%s: one section, a' % what):
            continue
        sec = secs[0]
        ck.eq((sec['first_line'], sec['last_line']), (first, last),
              '%s: a\'s lines, definition to closing brace' % what)
        ck.eq((sec['calls'], sec['self_ns']), (5, fns['a']['self_ns']),
              '%s: 5 calls and report\'s self time' % what)
        got = {ln['line']: (ln['calls'], ln['entries']) for ln in sec['lines']}
        ck.eq(got, {m['L_DEF_A']: (0, 5), m['L_CALL_B1']: (12, 0), m['L_CALL_B2']: (5, 0)},
              '%s: the exact calls and entries of a\'s lines' % what)
        key = {ln['line']: ln['total_ns'] + ln['self_ns'] for ln in sec['lines']}
        want = sorted(key, key=lambda k: (-key[k], k))
        ck.eq(sec['hottest'], [k for k in want if key[k]][:5], '%s: hottest first' % what)
    # text: only a's lines, in order, hottest ones first and marked
    for exe in (None, cyg.exe):
        cmd = [exe, 'annotate'] if exe else [ARGS.annotate]
        cp = run(cmd + ['--raw-times', cap, 'a'])
        ck.eq(cp.returncode, 0, '%s a: exit 0' % os.path.basename(cmd[0]))
        lines = cp.out.splitlines()
        nums = [int(x.group(1)) for x in (re.match(r'^[> ].{40,}?\s(\d+)  ', ln) for ln in lines)
                if x]
        hot_at = next((i for i, ln in enumerate(lines) if 'hottest lines' in ln), None)
        ck.check(hot_at is not None, 'text: a "hottest lines" list')
        ranked = [n for n in nums[:3]]
        ck.eq(sorted(ranked), sorted([m['L_DEF_A'], m['L_CALL_B1'], m['L_CALL_B2']]),
              'text: the 3 lines with a figure ranked first')
        ck.eq(nums[3:], list(range(first, last + 1)), 'text: then a\'s lines %d-%d whole, only'
              % (first, last))
        ck.check(any(ln.startswith('== a ') for ln in lines), 'text: a header names a')
    # a glob: the functions it matches
    data, _ = annotate_json(ck, [cap, 'gr*'])
    ck.eq([s['name'] for s in data['functions']], ['grab'], 'glob gr*: grab')
    ck.eq([(ln['line'], ln['entries']) for ln in data['functions'][0]['lines']],
          [(m['L_DEF_GRAB'], 4)], 'grab: 4 entries at its definition')


def copy_example(example, workdir, name='prog'):
    d = os.path.join(workdir, 'bin')
    os.makedirs(d, exist_ok=True)
    dst = os.path.join(d, name)
    shutil.copy(example, dst)
    return dst


def build_id(path):
    cp = run(['readelf', '-n', path])
    m = re.search(r'Build ID: ([0-9a-f]+)', cp.out)
    if not m:
        raise Failure('%s has no build-id (readelf -n)' % path)
    return m.group(1)


def keep_debug(src, dst):
    cp = run(['objcopy', '--only-keep-debug', src, dst])
    if cp.returncode != 0:
        raise Failure('objcopy --only-keep-debug failed: %s' % cp.err)


def strip_debug(path):
    cp = run(['strip', '--strip-debug', path])
    if cp.returncode != 0:
        raise Failure('strip failed: %s' % cp.err)


def bid_path(d, bid):
    p = os.path.join(d, '.build-id', bid[:2], bid[2:] + '.debug')
    os.makedirs(os.path.dirname(p), exist_ok=True)
    return p


def test_deleted(ck, cyg, example, workdir):
    prog = copy_example(example, workdir)
    cap = os.path.join(workdir, 'cap.data')
    record(ck, cyg, cap, prog, False)
    os.unlink(prog)
    data, _ = cyg.report_json(cap, ck)
    got = {f['name']: f['calls'] for f in data['functions']}
    want = {'main': 1, 'a': 5, 'b': 17, 'grab': 4}
    ck.check(cygtest.diff_table('calls after the binary was deleted', want,
                            {k: got.get(k) for k in want}),
             'report names the functions after the binary was deleted')
    data, _ = annotate_json(ck, ['--all', cap])
    ck.check(example_file(data) is None, 'annotate: no lines without the binary, exit 0')


def test_debugdir(ck, cyg, example, workdir):
    prog = copy_example(example, workdir)
    bid = build_id(prog)
    dbg = os.path.join(workdir, 'debug')
    keep_debug(prog, bid_path(dbg, bid))
    strip_debug(prog)
    mem = memory_ok()
    cap = os.path.join(workdir, 'cap.data')
    record(ck, cyg, cap, prog, mem)
    data, _ = annotate_json(ck, ['--all', cap])
    ck.check(example_file(data) is None, 'stripped binary, no --debug-dir: no lines')
    data, cp = annotate_json(ck, ['--debug-dir', dbg, cap])
    check_lines(ck, data, ARGS.source, mem, '--debug-dir (build-id)')
    ck.eq(cp.err, '', 'no warning with the right debug file')
    # a list: a directory without the file first (a missing one is an error)
    env = dict(os.environ, CYGPROF_DEBUG_DIRS=workdir + ':' + dbg)
    data, _ = annotate_json(ck, [cap], env=env)
    check_lines(ck, data, ARGS.source, mem, 'CYGPROF_DEBUG_DIRS')
    # DIR/<basename>.debug
    flat = os.path.join(workdir, 'flat')
    os.makedirs(flat)
    keep_debug(example, os.path.join(flat, 'prog.debug'))
    data, _ = annotate_json(ck, ['--debug-dir', flat, cap])
    check_lines(ck, data, ARGS.source, mem, '--debug-dir (DIR/prog.debug)')
    # cygprof memory --debug-dir gives the malloc line too
    if mem:
        cp = run([cyg.exe, 'memory', '--format=json', '--temporary', '--top', '0',
                  '--debug-dir', dbg, cap])
        ck.eq(cp.returncode, 0, 'cygprof memory --debug-dir exits 0')
        m = markers(ARGS.source)
        frames = [fr for s in json.loads(cp.out).get('stacks', []) for fr in s['frames']]
        ck.check(any(fr['name'] == 'grab' and fr['line'] == m['L_MALLOC'] for fr in frames),
                 'cygprof memory --debug-dir: grab at the malloc line')
    # the object gone: the debug file found by build-id still gives lines
    os.unlink(prog)
    data, _ = annotate_json(ck, ['--debug-dir', dbg, cap])
    check_lines(ck, data, ARGS.source, mem, 'binary deleted, --debug-dir')


def test_debuglink(ck, cyg, example, workdir):
    prog = copy_example(example, workdir)
    dbgfile = os.path.join(os.path.dirname(prog), 'prog.dbg')
    keep_debug(prog, dbgfile)
    strip_debug(prog)
    cp = run(['objcopy', '--add-gnu-debuglink=' + dbgfile, prog])
    if cp.returncode != 0:
        raise Failure('objcopy --add-gnu-debuglink failed: %s' % cp.err)
    cap = os.path.join(workdir, 'cap.data')
    record(ck, cyg, cap, prog, False)
    data, cp = annotate_json(ck, [cap])
    check_lines(ck, data, ARGS.source, False, 'debuglink')
    ck.eq(cp.err, '', 'no warning with the right debuglink file')
    # in .debug/ instead
    os.makedirs(os.path.join(os.path.dirname(prog), '.debug'))
    moved = os.path.join(os.path.dirname(prog), '.debug', 'prog.dbg')
    os.rename(dbgfile, moved)
    data, _ = annotate_json(ck, [cap])
    check_lines(ck, data, ARGS.source, False, 'debuglink in .debug/')
    # wrong CRC: one byte more at the end (same build-id)
    with open(moved, 'ab') as f:
        f.write(b'\0')
    data, cp = annotate_json(ck, ['--all', cap])
    ck.check(example_file(data) is None, 'wrong CRC: no lines')
    ck.check(re.search(r'^cygprof: warning: %s: CRC does not match .*, ignored$' %
                       re.escape(moved), cp.err, re.M) is not None,
             'wrong CRC: one warning (%r)' % cp.err)


def test_mismatch(ck, cyg, example, workdir):
    prog = copy_example(example, workdir)
    bid = build_id(prog)
    other_bid = build_id(ARGS.other)
    ck.check(bid != other_bid, 'the two builds have different build-ids')
    dbg = os.path.join(workdir, 'debug')
    wrong = bid_path(dbg, bid)
    keep_debug(ARGS.other, wrong)
    strip_debug(prog)
    cap = os.path.join(workdir, 'cap.data')
    record(ck, cyg, cap, prog, False)
    data, cp = annotate_json(ck, ['--all', '--debug-dir', dbg, cap])
    ck.check(example_file(data) is None, 'mismatched debug file: no lines of annotate.c')
    pat = r'^cygprof: warning: %s: build-id does not match %s, ignored$' % (
        re.escape(wrong), re.escape(prog))
    warns = [ln for ln in cp.err.splitlines() if re.match(pat, ln)]
    ck.eq(len(warns), 1, 'mismatched debug file: the warning once (%r)' % cp.err)
    cp = annotate(ck, ['--debug-dir', dbg, cap])
    ck.check(re.search(pat, cp.err, re.M) is not None, 'text: the warning too, exit 0')
    # by debuglink: the other build's debug file under the linked name
    os.unlink(wrong)
    linked = os.path.join(os.path.dirname(prog), 'prog.dbg')
    keep_debug(ARGS.other, linked)
    cp = run(['objcopy', '--add-gnu-debuglink=' + linked, prog])
    if cp.returncode != 0:
        raise Failure('objcopy --add-gnu-debuglink failed: %s' % cp.err)
    cap2 = os.path.join(workdir, 'cap2.data')
    record(ck, cyg, cap2, prog, False)
    data, cp = annotate_json(ck, ['--all', cap2])
    ck.check(example_file(data) is None, 'mismatched debuglink file: no lines')
    pat = r'^cygprof: warning: %s: build-id does not match %s, ignored$' % (
        re.escape(linked), re.escape(prog))
    ck.check(re.search(pat, cp.err, re.M) is not None,
             'mismatched debuglink file: the warning (%r)' % cp.err)


def test_recursion(ck, cyg, example, workdir):
    """examples/recurtime.c: a recursive call line's inclusive time is
    counted once (the outermost call from the line), not once per frame."""
    src = ARGS.source
    m = markers(src)
    cap = os.path.join(workdir, 'cap.data')
    cp = cyg.record(cap, [example])
    if cp.returncode != 0:
        raise Failure('record failed (%s): %s' % (describe_status(cp.returncode), cp.err.strip()))
    ck.check('recurtime: descend=9 ping=5 pong=4 spin=2' in cp.out, 'the example printed its counts')
    # the same rule as measured (--raw-times) and compensated (the default):
    # annotate and report take the same figures from the one read side
    for raw in (True, False):
        print('--- %s times' % ('raw' if raw else 'compensated'))
        rep, _ = cyg.report_json(cap, ck, raw=raw)
        fns = cygtest.fn_map(rep)
        arcs = {(a['caller'], a['callee']): a['self_ns'] + a['children_ns'] for a in rep['arcs']}
        data, _ = annotate_json(ck, [cap, 'recurtime.c'], raw=raw)
        if not ck.eq(len(data['files']), 1, 'recurtime.c is in the output'):
            continue
        lines = {ln['line']: ln for ln in data['files'][0]['lines']}
        run_ns = data['totals']['total_ns']
        ck.eq(run_ns, fns['main']['total_ns'], 'totals: the run is main\'s time')

        def line(marker):
            return lines.get(m[marker], {'calls': 0, 'total_ns': 0})

        for marker, calls in (('L_TOP_DESCEND', 1), ('L_REC', 8), ('L_SPIN_D', 1),
                              ('L_TOP_PING', 1), ('L_PING', 4), ('L_PONG', 4), ('L_SPIN_P', 1)):
            ck.eq(line(marker)['calls'], calls, '%s: calls' % marker)
        # exact: the outermost call from each line is a function's or an arc's time
        ck.eq(line('L_TOP_DESCEND')['total_ns'], fns['descend']['total_ns'], 'L_TOP_DESCEND = descend')
        ck.eq(line('L_TOP_PING')['total_ns'], fns['ping']['total_ns'], 'L_TOP_PING = ping')
        ck.eq(line('L_PING')['total_ns'], fns['pong']['total_ns'], 'L_PING = pong(7) = pong')
        ck.eq(line('L_SPIN_D')['total_ns'], arcs[('descend', 'spin')], 'L_SPIN_D = descend -> spin')
        ck.eq(line('L_SPIN_P')['total_ns'], arcs[('ping', 'spin')], 'L_SPIN_P = ping -> spin')
        # descend(7) lies between descend(0)'s spin and descend(8); ping(6) between
        # ping(0)'s spin and pong(7): not 8 or 4 times them
        rec = line('L_REC')['total_ns']
        ck.check(arcs[('descend', 'spin')] <= rec <= fns['descend']['total_ns'],
                 'L_REC %d within [%d, %d]' % (rec, arcs[('descend', 'spin')],
                                              fns['descend']['total_ns']))
        pong = line('L_PONG')['total_ns']
        ck.check(arcs[('ping', 'spin')] <= pong <= fns['pong']['total_ns'],
                 'L_PONG %d within [%d, %d]' % (pong, arcs[('ping', 'spin')], fns['pong']['total_ns']))
        for ln in data['files'][0]['lines']:
            ck.check(ln['total_ns'] <= run_ns, 'line %d: %d ns <= the run %d ns'
                     % (ln['line'], ln['total_ns'], run_ns))
        for name, want in (('main', 1), ('descend', 9), ('ping', 5), ('pong', 4), ('spin', 2)):
            ck.eq(fns[name]['calls'], want, '%s: calls' % name)
            ck.check(fns[name]['total_ns'] <= run_ns, '%s: total <= the run' % name)


def test_focus(ck, cyg, example, workdir):
    """multi-hot.c and multi-cold.c: by default the hot lines of each file
    shown with --context lines around, '...' where lines are left out, the
    hottest file first; --all prints whole files; the capture may come after
    the sources."""
    cap = os.path.join(workdir, 'focus.data')
    cp = cyg.record(cap, [example])
    if cp.returncode != 0:
        raise Failure('record failed (%s): %s' % (describe_status(cp.returncode), cp.err.strip()))
    hot_src = ARGS.source
    cold_src = os.path.join(os.path.dirname(hot_src), 'multi-cold.c')
    loop = markers(hot_src)['L_LOOP']
    nlines = len(open(hot_src).read().splitlines())

    def shown(out, path):
        """The source line numbers printed for path's section."""
        nums, on, end = [], False, None
        for line in out.splitlines():
            if line.startswith('== '):
                on = line[3:].endswith(os.path.basename(path))
                continue
            if on and 'line  source' in line:
                end = line.index('line  source') + 4  # the number's last column
                continue
            if on and end and line[end:end + 2] == '  ' and line[end - 6:end].strip().isdigit():
                nums.append(int(line[end - 6:end]))
        return nums
    out = annotate(ck, ['--threshold', '0', cap]).out
    files = [ln[3:] for ln in out.splitlines() if ln.startswith('== ')]
    ours = [f for f in files if f.endswith(('multi-hot.c', 'multi-cold.c'))]
    ck.check(len(ours) == 2 and ours[0].endswith('multi-hot.c'),
             'the hotter file first (%s)' % files)
    nums = shown(out, hot_src)
    ck.check(loop in nums and len(nums) < nlines - 40,
             'default: the loop line %d shown, the 60 filler lines not (%d of %d lines)'
             % (loop, len(nums), nlines))
    ck.check(all(n in nums for n in range(loop - 3, loop + 4)),
             'default: 3 lines of context around the loop line')
    ck.check('...' in out, 'default: "..." where lines are left out')
    out2 = annotate(ck, ['--threshold', '0', '--context', '0', cap]).out
    ck.check(len(shown(out2, hot_src)) < len(nums), '--context 0: fewer lines')
    out = annotate(ck, ['--all', cap]).out
    ck.eq(shown(out, hot_src), list(range(1, nlines + 1)), '--all: the whole file')
    # arguments in any order: the capture is known by its content
    a = annotate(ck, ['--threshold', '0', 'multi-hot.c', cap]).out
    b = annotate(ck, ['--threshold', '0', cap, 'multi-hot.c']).out
    ck.check(a == b and shown(a, hot_src) == nums,
             'SOURCE before CAPTURE reads the same (%d lines)' % len(shown(a, hot_src)))
    ck.check(not shown(a, cold_src), 'a SOURCE argument keeps only that file')


TESTS = {
    'lines': test_lines,
    'recursion': test_recursion,
    'deleted': test_deleted,
    'debugdir': test_debugdir,
    'debuglink': test_debuglink,
    'mismatch': test_mismatch,
    'focus': test_focus,
    'function': test_function,
}


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--annotate', required=True)
    ap.add_argument('--example', required=True)
    ap.add_argument('--other', required=True)
    ap.add_argument('--source', required=True)
    ap.add_argument('--test', required=True, choices=sorted(TESTS))
    ap.add_argument('--sanitize', default='none')
    ap.add_argument('--skip', metavar='REASON')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('-v', '--verbose', action='store_true')
    ARGS = ap.parse_args()
    cygtest.VERBOSE = ARGS.verbose or bool(os.environ.get('CYGPROF_E2E_VERBOSE'))

    if ARGS.skip:
        print('SKIP %s: %s' % (ARGS.test, ARGS.skip))
        return SKIP
    if ARGS.test in ('debugdir', 'debuglink', 'mismatch'):
        for tool in ('objcopy', 'strip', 'readelf'):
            if not shutil.which(tool):
                print('SKIP %s: %s not found' % (ARGS.test, tool))
                return SKIP
    ARGS.annotate = os.path.abspath(ARGS.annotate)
    example = os.path.abspath(ARGS.example)
    ck = Checker()
    workdir = tempfile.mkdtemp(prefix='cygprof-annotate-%s-' % ARGS.test)
    try:
        TESTS[ARGS.test](ck, cygtest.Cygprof(os.path.abspath(ARGS.cygprof), workdir), example,
                         workdir)
    except Failure as e:
        ck.fail(str(e))
    finally:
        if ARGS.keep or (ck.failures and os.environ.get('CYGPROF_E2E_KEEP')):
            print('kept %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    if ck.failures:
        print('FAIL %s (%s): %d of %d checks failed' %
              (ARGS.test, os.path.basename(example), len(ck.failures), max(ck.count, 1)))
        return 1
    print('PASS %s (%s): %d checks' % (ARGS.test, os.path.basename(example), ck.count))
    return 0


if __name__ == '__main__':
    sys.exit(main())
