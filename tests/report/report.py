#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the readers `cygprof report`, `replay` and `info`
beyond the exact counts (tests/record/): errors, the replayed trace, the
processes that info lists.

Usage:
  report.py --cygprof CYGPROF --example EXAMPLE --test NAME [--skip REASON] [-v] [--keep]

Tests (meson names report-TEST):
  errors           report of a missing, random, truncated or empty file:
                   one line, exit 1, never a crash; a mistyped command
                   (`cygprof reprot`): "did you mean report?", exit 2
  replay           replay of a --timeline capture of calls shows a(), b(),
                   c() in order; without timeline it is an error (exit 1)
  info-forkexec    info of forkexec: every process, its end and its command
  pager            on a terminal, report goes through the pager (PAGER, here a
                   script that keeps what it reads and its LESS), not with
                   --no-pager, CYGPROF_PAGER=cat, or a pipe for stdout
  lacks            a capture without timeline, memory, counters or samples:
                   each command that shows one of them exits 1 in one line
                   naming what to record
  flat             the flat profile of timefilter: each time in its own
                   unit (fast's tens of ns not 0.00), exact to the digit;
                   -n/--limit and --min-percent give exact row counts, in
                   text and JSON (functions_hidden); --tree's TOTAL% column
  tree             report --tree of timefilter (main calls fast() 1000 times
                   first, then slow() 3 times, 5 ms each): slow ranked
                   first, --sort calls puts fast first, --min-percent 50
                   hides fast and says so; JSON in the same order;
                   --color=always marks slow's share, never and a pipe do not
  sysheaders       (EXAMPLE: tests/report/stl.cpp, --excluded: the same
                   built with -finstrument-functions-exclude-file-list=
                   /usr/include) the STL instrumented: record's summary is
                   followed by one warning, report's header has one, both
                   giving the share of the calls not main's or fill's (the
                   STL's, in /usr/include) and naming the option; built
                   with it: main 1, fill 20, 21 calls, no warning
"""

import json
import os
import random
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cygtest import (  # noqa: E402
    driver_main, Failure, check_all, describe_status, exp_forkexec, expect_error, info_json,
    record_and_check, run)


def truncate_capture(path):
    """Truncate a capture (a file, or the largest file of a directory) to half."""
    if os.path.isdir(path):
        files = [os.path.join(path, f) for f in os.listdir(path)]
        files = [f for f in files if os.path.isfile(f)]
        if not files:
            raise Failure('capture directory %s holds no file' % path)
        path = max(files, key=os.path.getsize)
    size = os.path.getsize(path)
    with open(path, 'r+b') as f:
        f.truncate(size // 2)
    return path, size


def test_errors_report(ck, cyg, example):
    d = cyg.workdir
    # a mistyped command: the nearest names, git's way; no guess for a word
    # far from every command
    for typed, want in (('reprot', 'report'), ('repot', 'report'), ('memroy', 'memory'),
                        ('exprot', 'export'), ('hmtl', 'html')):
        for argv in ([typed], ['help', typed]):
            cp = run([cyg.exe] + argv)
            expect_error(ck, cp, 'cygprof %s' % ' '.join(argv), 2)
            ck.check(cp.err.rstrip().endswith("': did you mean %s?" % want),
                     'cygprof %s: did you mean %s? (%r)' % (' '.join(argv), want, cp.err))
    for typed in ('foo', 'xx', 'reportreport'):
        cp = run([cyg.exe, typed])
        expect_error(ck, cp, 'cygprof %s' % typed, 2)
        ck.eq(cp.err.strip(), "cygprof: unknown command '%s' (see 'cygprof --help')" % typed,
              'cygprof %s: no guess' % typed)
    cp = run([cyg.exe, 'report', '--format=json', os.path.join(d, 'missing.data')])
    expect_error(ck, cp, 'report of a missing file', 1)

    rnd = os.path.join(d, 'random.data')
    with open(rnd, 'wb') as f:
        f.write(random.Random(1234).randbytes(65536))
    cp = run([cyg.exe, 'report', '--format=json', rnd])
    expect_error(ck, cp, 'report of random bytes', 1)

    empty = os.path.join(d, 'empty.data')
    open(empty, 'wb').close()
    cp = run([cyg.exe, 'report', '--format=json', empty])
    expect_error(ck, cp, 'report of an empty file', 1)

    cap = os.path.join(d, 'trunc.data')
    rec = cyg.record(cap, [example])
    if rec.returncode != 0 or not os.path.exists(cap):
        raise Failure('could not record a capture to truncate (%s)' %
                      describe_status(rec.returncode))
    cp = run([cyg.exe, 'report', '--format=json', cap])
    ck.eq(cp.returncode, 0, 'report of the intact capture')
    path, size = truncate_capture(cap)
    print('info: truncated %s from %d to %d bytes' % (path, size, size // 2))
    cp = run([cyg.exe, 'report', '--format=json', cap])
    expect_error(ck, cp, 'report of a truncated capture', 1)
    cp = run([cyg.exe, 'report', cap])
    expect_error(ck, cp, 'text report of a truncated capture', 1)


def test_replay(ck, cyg, example):
    d = cyg.workdir
    cap = os.path.join(d, 'timeline.data')
    rec = cyg.record(cap, [example], ['--timeline'])
    ck.eq(rec.returncode, 0, 'record --timeline exit status')
    cp = run([cyg.exe, 'replay', cap])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay exit status')
    lines = cp.out.splitlines()
    first = {}
    for fn in ('a', 'b', 'c'):
        pat = re.compile(r'(?<![\w:])%s\(\)' % fn)
        hits = [i for i, line in enumerate(lines) if pat.search(line)]
        want = {'a': 3, 'b': 6, 'c': 30}[fn]
        ck.check(len(hits) >= want, 'replay shows %s() on at least %d lines (got %d)' %
                 (fn, want, len(hits)))
        first[fn] = hits[0] if hits else None
    if None not in first.values():
        ck.check(first['a'] < first['b'] < first['c'],
                 'replay order: first a() before first b() before first c() (%s)' % first)
    if ck.failures:
        print('--- replay output (first 40 lines)')
        print('\n'.join(lines[:40]))

    plain = os.path.join(d, 'plain.data')
    rec = cyg.record(plain, [example])
    ck.eq(rec.returncode, 0, 'record (no timeline) exit status')
    cp = run([cyg.exe, 'replay', plain])
    expect_error(ck, cp, 'replay of a capture without timeline', 1)


def test_info_forkexec(ck, cyg, example):
    exp = exp_forkexec()
    capture, data, _ = record_and_check(ck, cyg, example, exp)
    check_all(ck, data, exp, example)
    cp = run([cyg.exe, 'info', capture])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'info exit status')
    lines = cp.out.splitlines()
    ck.eq(lines[:1], ['# capture: %s' % capture], 'info: first line')
    cmd = [re.sub(r'^command\s*:\s*', '', l) for l in lines if re.match(r'command\s*:', l)]
    ck.eq(cmd, [example], 'info: the command line')
    ck.check('processes (3):' in lines, 'info: "processes (3):"')
    ck.check('threads (3):' in lines, 'info: "threads (3):"')
    for p in data['processes']:
        row = re.compile(r'^\s*%d\s+\d+\s+%s\s+%s' % (p['pid'], re.escape(p['end']),
                                                    re.escape(p['command'])))
        ck.check(any(row.match(l) for l in lines),
                 'info: a process row "%d ... %s %s"' % (p['pid'], p['end'], p['command']))
    ends = sorted(re.findall(r'^\s*\d+\s+\d+\s+(exit \d+|signal \d+|exec|unknown)\s',
                             cp.out, re.M))
    ck.eq(ends, sorted(exp['ends']), 'info: the ends of the process table')
    total = sum(exp['functions'].values())
    tot = [l for l in lines if l.startswith('totals:')]
    ck.check(len(tot) == 1 and tot[0].startswith('totals: %d calls, 0 events, 0 lost' % total),
             'info: totals line with %d calls (got %r)' % (total, tot))

    info = info_json(ck, cyg, capture)
    ck.eq(info.get('file'), capture, 'info json: file')
    ck.eq(info.get('meta', {}).get('command'), example, 'info json: meta.command')
    ck.eq(info.get('meta', {}).get('mode'), 'profile', 'info json: meta.mode')
    ck.eq(info.get('processes'), data['processes'], 'info json: processes = report\'s')
    keys = ('idx', 'tid', 'pid', 'name', 'calls', 'events', 'lost', 'unpaired', 'unwound')
    ith = [{k: t.get(k) for k in keys} for t in info.get('threads', [])]
    rth = [{k: t.get(k) for k in keys} for t in data['threads']]
    ck.eq(ith, rth, 'info json: threads = report\'s')
    ck.eq(len(ith), 3, 'info json: 3 threads')
    ck.eq(info.get('lost_events'), data['lost_events'], 'info json: lost_events')
    ck.eq(info.get('calls'), total, 'info json: calls (all entries)')
    ck.eq(info.get('calls'), sum(f['calls'] for f in data['functions']),
          'info json: calls = the sum of the report\'s calls')
    ck.eq(info.get('calls'), sum(t.get('calls', 0) for t in info.get('threads', [])),
          'info json: calls = the sum over threads')
    if os.path.isfile(capture):
        ck.eq(info.get('size'), os.path.getsize(capture), 'info json: size is the file\'s size')
    flags = {t['pid'] if t.get('flags', 0) & 4 else None for t in info.get('threads', [])}
    child = [p['pid'] for p in data['processes'] if p['end'] == 'exit 7']
    ck.eq(flags - {None}, set(child), 'info json: flag 4 marks the fork child\'s thread')


def tree_rows(out):
    """(indent, name, calls) of each row of report --tree's text."""
    rows = []
    # CALLS is the 6th figure (PCT% TOTAL unit SELF unit CALLS ...): the
    # WAITING and BLOCKED columns may follow it
    for line in out.splitlines():
        m = re.match(r'^.* : ((?:[| ] )*)(\+-)?(\S.*)$', line)
        if m and not line.startswith('#'):
            calls = int(line.split(':')[0].split()[5])
            rows.append((len(m.group(1)) // 2 + (1 if m.group(2) else 0), m.group(3), calls))
    return rows


def test_pager(ck, cyg, example):
    import pty
    cap = os.path.join(cyg.workdir, 'p.data')
    ck.eq(cyg.record(cap, [example]).returncode, 0, 'record')
    kept = os.path.join(cyg.workdir, 'paged.txt')
    pager = os.path.join(cyg.workdir, 'pager.sh')
    with open(pager, 'w') as f:
        f.write('#!/bin/sh\necho "LESS=$LESS" > %s.env\ncat > %s\n' % (kept, kept))
    os.chmod(pager, 0o755)
    want = run([cyg.exe, 'report', cap]).out  # a pipe: no pager

    def on_tty(argv, env):
        if os.path.exists(kept):
            os.unlink(kept)
        master, slave = pty.openpty()
        e = dict(os.environ, PAGER=pager, NO_COLOR='1')  # the text as into a pipe
        e.pop('CYGPROF_PAGER', None)
        e.pop('LESS', None)
        e.update(env)
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=e)
        os.close(slave)
        out = b''
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
        os.close(master)
        return p.wait(), out.decode('utf-8', 'replace').replace('\r\n', '\n')

    rc, out = on_tty([cyg.exe, 'report', cap], {})
    paged = open(kept).read() if os.path.exists(kept) else None
    ck.check(rc == 0 and paged == want and out == '',
             'report on a terminal: all of it through PAGER, nothing else on the terminal '
             '(exit %d, %d bytes paged, %d shown)' % (rc, len(paged or ''), len(out)))
    ck.eq(open(kept + '.env').read().strip() if os.path.exists(kept + '.env') else None,
          'LESS=FRX', 'the pager gets LESS=FRX')
    for how, argv, env in (('--no-pager', [cyg.exe, '--no-pager', 'report', cap], {}),
                           ('report --no-pager', [cyg.exe, 'report', '--no-pager', cap], {}),
                           ('CYGPROF_PAGER=cat', [cyg.exe, 'report', cap],
                            {'CYGPROF_PAGER': 'cat'})):
        rc, out = on_tty(argv, env)
        ck.check(rc == 0 and not os.path.exists(kept) and out == want,
                 '%s: straight to the terminal (exit %d)' % (how, rc))
    # on a terminal, colour by default (decided before the pager took it)
    rc, out = on_tty([cyg.exe, 'report', cap], {'NO_COLOR': ''})
    paged = open(kept).read() if os.path.exists(kept) else ''
    ck.check(rc == 0 and '\x1b[' in paged, 'report on a terminal: coloured through the pager')


def test_lacks(ck, cyg, example):
    cap = os.path.join(cyg.workdir, 'plain.data')
    ck.eq(cyg.record(cap, [example]).returncode, 0, 'record (calls only)')
    for cmd, what in ((['replay'], 'timeline'), (['memory'], 'memory events'),
                      (['counters'], 'counters'), (['samples'], 'perf samples'),
                      (['export', '--format=pprof', '--memory', 'allocated', '-o',
                        os.path.join(cyg.workdir, 'm.pb.gz')], 'memory events')):
        cp = run([cyg.exe] + cmd + [cap])
        lines = cp.err.strip().splitlines()
        ck.check(cp.returncode == 1 and len(lines) == 1 and ('has no %s' % what) in lines[0]
                 and 'record with' in lines[0],
                 '%s without %s: exit 1, one line naming what to record (%d: %r)' %
                 (' '.join(cmd[:2]), what, cp.returncode, cp.err))
        ck.eq(cp.out, '', '%s without %s: nothing on stdout' % (' '.join(cmd[:2]), what))


def test_tree(ck, cyg, example):
    cap = os.path.join(cyg.workdir, 'tf.data')
    ck.eq(cyg.record(cap, [example]).returncode, 0, 'record timefilter')

    # slow() sleeps: its 15 ms are blocked time, in its total with
    # --times=wall only; by default (CPU time) it has the few us of its
    # system calls
    def slow_total(*opts):
        cp = run([cyg.exe, 'report', '--format=json'] + list(opts) + [cap])
        fs = [f for f in json.loads(cp.out)['functions'] if f['name'] == 'slow'] \
            if cp.returncode == 0 else []
        return fs[0]['total_ns'] if fs else -1
    t = slow_total()
    ck.check(0 <= t < 3000000, 'report (CPU time): slow, asleep 15 ms, has %d ns' % t)
    t = slow_total('--times=wall')
    ck.check(t >= 15000000, 'report --times=wall: slow has its 15 ms asleep (%d ns)' % t)

    def tree(*opts):
        cp = run([cyg.exe, 'report', '--tree', '--times=wall'] + list(opts) + [cap])
        ck.eq(cp.returncode, 0, 'report --tree %s: exit 0' % ' '.join(opts))
        return cp.out
    out = tree('--min-percent', '0')
    ck.eq(tree_rows(out), [(0, 'main', 1), (1, 'slow', 3), (1, 'fast', 1000)],
          'report --tree: slow (15 ms) ranked before fast, though called after it')
    ck.check('hidden' not in out, '--min-percent 0: nothing hidden')
    ck.eq(tree_rows(tree('--min-percent', '0', '--sort', 'calls')),
          [(0, 'main', 1), (1, 'fast', 1000), (1, 'slow', 3)], '--sort calls: fast first')
    ck.eq(tree_rows(tree('--min-percent', '0', '--sort', 'name')),
          [(0, 'main', 1), (1, 'fast', 1000), (1, 'slow', 3)], '--sort name: A..Z')
    out = tree('--min-percent', '50')
    ck.eq(tree_rows(out), [(0, 'main', 1), (1, 'slow', 3)], '--min-percent 50 hides fast')
    ck.check(re.search(r'^# 1 call path under 50% of the thread\'s time hidden', out, re.M)
             is not None, '--min-percent 50: says one path is hidden')
    cp = run([cyg.exe, 'report', '--format=json', '--tree', '--times=wall', '--min-percent', '0',
              cap])
    ck.eq(cp.returncode, 0, 'report --format=json --tree: exit 0')
    try:
        tr = json.loads(cp.out)['tree']
    except (ValueError, KeyError) as e:
        ck.check(False, 'report --format=json --tree: a tree (%s)' % e)
        return
    ck.eq([(p['depth'] - 1, p['name'], p['calls']) for t in tr for p in t['paths']],
          [(0, 'main', 1), (1, 'slow', 3), (1, 'fast', 1000)], 'JSON tree: the text\'s order')
    ids = {p['id']: p for t in tr for p in t['paths']}
    ck.check(all(p['parent'] == 0 or p['parent'] in ids for p in ids.values()),
             'JSON tree: every parent is a listed path')
    # the folded export lists the call paths in the same order (main calls
    # fast first: only the sort puts slow before it)
    folded = os.path.join(cyg.workdir, 'tree.folded')
    cp = run([cyg.exe, 'export', '--format=folded', '--times=wall', '-o', folded, cap])
    ck.eq(cp.returncode, 0, 'export --format=folded: exit 0')
    rows = [ln.rsplit(' ', 1)[0] for ln in open(folded).read().splitlines()] \
        if os.path.exists(folded) else []
    ck.eq(rows, ['main', 'main;slow', 'main;fast'], 'folded export: the tree\'s order')
    cp = run([cyg.exe, 'report', '--tree', '--min-percent', '200', cap])
    expect_error(ck, cp, 'report --min-percent 200', 2)
    # colour: the hot path (slow, ~98% of the time) in bold red, on demand
    out = tree('--min-percent', '0', '--color=always')
    ck.check('\x1b[1;31mslow\x1b[m' in out, '--color=always: slow in bold red')
    ck.check('\x1b' not in tree('--min-percent', '0', '--color=never'), '--color=never: plain')
    ck.check('\x1b' not in tree('--min-percent', '0'), '--color=auto into a pipe: plain')
    cp = run([cyg.exe, 'report', '--color=always', '--times=wall', '--flat', cap])
    ck.check(re.search(r'\x1b\[1;31m *\d+\.\d+\x1b\[m .* slow$', cp.out, re.M) is not None,
             'flat profile: the share of slow in bold red')
    cp = run([cyg.exe, 'report', '--color=sometimes', cap])
    expect_error(ck, cp, 'report --color=sometimes', 2)


FLAT_ROW = re.compile(r'^\s*([\d.]+)\s+([\d.]+)\s+([\d.]+\s+(?:ns|us|ms|s))\s+'
                      r'([\d.]+\s+(?:ns|us|ms|s))\s+(\d+)\s+([\d.]+\s+(?:ns|us|ms|s))\s+'
                      r'([\d.]+\s+(?:ns|us|ms|s))\s+(\S+)$')


def fmt_time(ns):
    """report's per-row time: its own unit (report-print.c fmt_time())."""
    if ns < 999.9995:
        return '%7.3f ns' % ns
    if ns < 999999.5:
        return '%7.3f us' % (ns / 1e3)
    if ns < 999999999.5:
        return '%7.3f ms' % (ns / 1e6)
    return '%7.3f  s' % (ns / 1e9)


def flat_rows(out):
    """{name: (self%, cumul%, self, total, calls, self/call, total/call)} of
    the flat profile, and the rows' names in order."""
    rows, names = {}, []
    for line in out.splitlines():
        if line.startswith('Call graph') or 'Call graph' in line:
            break
        m = FLAT_ROW.match(line)
        if m:
            rows[m.group(8)] = m.groups()[:7]
            names.append(m.group(8))
    return rows, names


def test_flat(ck, cyg, example):
    """The flat profile of timefilter (main calls fast() 1000 times, then
    slow() 3 times): every time with its own unit, so fast's per-call time
    (tens of ns) is not 0.00; -n/--limit and --min-percent keep exact row
    counts, in text and JSON; --tree has a percent column.  Times as
    measured (--raw-times: never clamped to 0), the expected rows computed
    from the JSON of the same capture, whatever the time model makes of
    slow()'s sleep."""
    cap = os.path.join(cyg.workdir, 'tf.data')
    ck.eq(cyg.record(cap, [example]).returncode, 0, 'record timefilter')
    data, _ = cyg.report_json(cap, ck, raw=True)
    fns = {f['name']: f for f in data['functions']}
    ck.eq({n: fns[n]['calls'] for n in ('main', 'fast', 'slow') if n in fns},
          {'main': 1, 'fast': 1000, 'slow': 3}, 'JSON: the calls')
    if len(fns) != 3:
        raise Failure('timefilter has 3 functions, the JSON %d' % len(fns))
    order = [f['name'] for f in data['functions']]  # --sort self
    total = data['total_self_ns']

    def flat(*opts, status=0):
        cp = run([cyg.exe, 'report', '--flat', '--raw-times'] + list(opts) + [cap])
        ck.eq(cp.returncode, status, 'report --flat %s: exit %d' % (' '.join(opts), status))
        return cp
    out = flat().out
    rows, names = flat_rows(out)
    ck.eq(names, order, 'flat: one row per function, in the JSON\'s order (self time)')
    for name in names:
        f, r = fns[name], rows[name]
        ck.eq(int(r[4]), f['calls'], 'flat: %s called %d times' % (name, f['calls']))
        ck.eq(r[0], '%.2f' % (100.0 * f['self_ns'] / total), 'flat: %s\'s share' % name)
        ck.eq([' '.join(x.split()) for x in (r[2], r[3], r[5], r[6])],
              [' '.join(fmt_time(x).split()) for x in
               (f['self_ns'], f['total_ns'], f['self_ns'] / f['calls'],
                f['total_ns'] / f['calls'])],
              'flat: %s\'s times, each in its own unit, exact to the digit' % name)
    r = rows.get('fast')
    if ck.check(r is not None, 'flat: a row for fast'):
        ck.check(float(r[5].split()[0]) > 0 and r[5].split()[1] in ('ns', 'us'),
                 'flat: fast\'s self/call is a non-zero figure in ns or us (%s)' % r[5])
    # -n / --limit: exactly N rows, and a line saying how many more
    for opts, n in ((['-n', '2'], 2), (['--limit', '1'], 1), (['--limit=0'], 3), (['-n', '5'], 3)):
        out = flat(*opts).out
        ck.eq(flat_rows(out)[1], order[:n], '%s: the first %d rows' % (' '.join(opts), n))
        more = 3 - n
        ck.eq(('(%d more function%s: -n 0 shows all)' % (more, '' if more == 1 else 's')) in out,
              more > 0, '%s: says %d more' % (' '.join(opts), more))
    # --min-percent: the functions with at least that share of the self time
    for pct in (50, 10, 0.001):
        want = [n for n in order if fns[n]['self_ns'] * 100.0 >= pct * total]
        out = flat('--min-percent', str(pct)).out
        ck.eq(flat_rows(out)[1], want, '--min-percent %g: %s' % (pct, want))
        under = 3 - len(want)
        ck.eq(('(%d function%s under %g%% of the self time hidden'
               % (under, '' if under == 1 else 's', pct)) in out, under > 0,
              '--min-percent %g: says %d hidden' % (pct, under))
    ck.eq(flat_rows(flat('--min-percent', '0').out)[1], order, '--min-percent 0: all rows')
    ck.eq(flat_rows(flat('--min-percent', '50', '--sort', 'calls').out)[1], ['fast'],
          '--min-percent 50 --sort calls: fast has 1000 of 1004 calls')
    # JSON: the same rows, unchanged fields, what was left out counted
    want50 = [n for n in order if fns[n]['self_ns'] * 2 >= total]
    for opts, want in ((['-n', '2'], order[:2]), (['--min-percent', '50'], want50), ([], order)):
        cp = run([cyg.exe, 'report', '--format=json', '--raw-times'] + opts + [cap])
        d = json.loads(cp.out)
        ck.eq([f['name'] for f in d['functions']], want, 'JSON %s: the rows' % ' '.join(opts))
        ck.eq(d['functions_hidden'], 3 - len(want), 'JSON %s: functions_hidden' % ' '.join(opts))
        ck.check(all(isinstance(f['self_ns'], int) for f in d['functions']),
                 'JSON %s: ns integers' % ' '.join(opts))
    expect_error(ck, flat('-n', 'x', status=2), 'report -n x', 2)
    # --tree: each path's share of its thread's time
    cp = run([cyg.exe, 'report', '--tree', '--raw-times', '--min-percent', '0', cap])
    ck.check('# TOTAL%  TOTAL TIME' in cp.out, '--tree: a TOTAL% column')
    pct = {ln.split(' : ')[1].lstrip('|+- '): ln.split()[0]
           for ln in cp.out.splitlines() if ' : ' in ln and not ln.startswith('#')}
    ck.eq(pct.get('main'), '100.00%', '--tree: main is 100% of its thread')
    t = {p['name']: p for tr in json.loads(run([cyg.exe, 'report', '--format=json', '--tree',
                                                 '--raw-times', '--min-percent', '0', cap]).out)['tree']
         for p in tr['paths']}
    for name in ('slow', 'fast'):
        if name in t and 'main' in t:
            ck.eq(pct.get(name), '%.2f%%' % (100.0 * t[name]['total_ns'] / t['main']['total_ns']),
                  '--tree: %s\'s share of main\'s time, to 0.01%%' % name)


def test_sysheaders(ck, cyg, example, args):
    stl = os.path.join(cyg.workdir, 'stl.data')
    cp = cyg.record(stl, [example])
    ck.eq(cp.returncode, 0, 'record of the STL build: exit status (%s)' % cp.err.strip())
    data, _ = cyg.report_json(stl, ck)
    calls = {f['name']: f['calls'] for f in data['functions']}
    ck.eq(calls.get('main'), 1, 'calls of main')
    fill = [n for n in calls if n.startswith('fill(')]
    ck.eq([calls[n] for n in fill], [20], 'calls of fill()')
    total = sum(calls.values())
    ck.check(total > 1000000, 'the STL\'s calls are recorded (%d calls)' % total)
    pct = (total - 21) * 100 // total
    want = ('%d%% of the calls are of functions defined in system headers (/usr/include, '
            'such as the STL\'s templates), where the hooks cost more than the functions '
            'themselves: their times are not trustworthy; build with '
            '-finstrument-functions-exclude-file-list=/usr/include' % pct)
    lines = [ln for ln in cp.err.splitlines() if ln.strip()]
    ck.eq(lines[1:], ['cygprof: warning: ' + want], 'record: the summary, then the warning')
    cp = run([cyg.exe, 'report', stl])
    ck.eq([ln for ln in cp.out.splitlines() if 'system headers' in ln], ['Warning: %s.' % want],
          'report: the warning in the header')
    ck.check(cp.out.index('Warning: ') < cp.out.index('Flat profile'),
             'report: the warning comes before the flat profile')

    excl = os.path.join(cyg.workdir, 'excl.data')
    cp = cyg.record(excl, [os.path.abspath(args.excluded)])
    ck.eq(cp.returncode, 0, 'record of the build excluding /usr/include: exit status')
    lines = [ln for ln in cp.err.splitlines() if ln.strip()]
    ck.check(len(lines) == 1 and ' 21 calls' in lines[0],
             'record: 21 calls, the summary alone (%r)' % lines)
    data, _ = cyg.report_json(excl, ck)
    calls = {f['name']: f['calls'] for f in data['functions'] if f['calls']}
    ck.eq(sorted(calls.values()), [1, 20], 'excluded: calls of main and fill (%r)' % calls)
    cp = run([cyg.exe, 'report', excl])
    ck.check('system headers' not in cp.out, 'excluded: report has no warning')


TESTS = {
    'flat': test_flat,
    'sysheaders': test_sysheaders,
    'errors': test_errors_report,
    'replay': test_replay,
    'info-forkexec': test_info_forkexec,
    'tree': test_tree,
    'lacks': test_lacks,
    'pager': test_pager,
}


def main():
    return driver_main(TESTS, 'report', __doc__,
                       extra=lambda ap: ap.add_argument('--excluded'),
                       call=lambda fn, ck, cyg, example, args:
                       fn(ck, cyg, example, args) if fn is test_sysheaders
                       else fn(ck, cyg, example))


if __name__ == '__main__':
    sys.exit(main())
