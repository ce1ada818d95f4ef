#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the filters: record-time (-F, -N, -D, -t) and
report-time (--filter and friends, time ranges).

Usage:
  filter.py --cygprof CYGPROF --example EXAMPLE --test NAME [--skip REASON] [-v] [--keep]

Tests (meson names filter-TEST-O0/-O2):
  calls            examples/calls.c recorded with each record-time filter:
                   the trees hold exactly the functions and arcs left, and
                   `info` shows the filters as given
  recursion        the same on examples/recursion.c
  after-calls      the same filters applied at report time to one full
                   capture (report, replay, info agree); time ranges
  after-recursion  the same on examples/recursion.c
  time             --timeline -t 1ms of examples/timefilter.c: the timeline
                   keeps slow() and loses fast(); the trees keep every call
  unmatched        -F/-N patterns that name no function: one warning line
                   each from record, report, export, replay and annotate,
                   exit 0; record -F 999 says -F is not a frequency
"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cygtest import (  # noqa: E402
    driver_main, Failure, check_all, check_functions, describe_status, exp_calls, exp_recursion,
    exp_timefilter, info_json, record_and_check, replay_calls, replay_entries, run)


def check_filters_shown(ck, cyg, capture, opts):
    """`cygprof info` shows the record-time filters as they were given (only
    the filters: -F, -N, -D, -t and their values)."""
    kept, i = [], 0
    while i < len(opts):
        if opts[i] in ('-F', '-N', '-D', '-t'):
            kept += opts[i:i + 2]
            i += 2
        else:
            i += 1
    want = ' '.join(kept) or '(none)'
    if not kept:
        want_json = ''
    else:
        want_json = want
    meta = info_json(ck, cyg, capture).get('meta', {})
    ck.eq(meta.get('filters'), want_json, 'info --format=json: meta.filters')
    cp = run([cyg.exe, 'info', capture])
    ck.eq(cp.returncode, 0, 'info exit status')
    lines = [line for line in cp.out.splitlines() if re.match(r'filters\s*:', line)]
    got = [re.sub(r'^filters\s*:\s*', '', line) for line in lines]
    ck.eq(got, [want], 'info text: the "filters" line')


def filter_case(ck, cyg, example, base, opts, functions, arcs, roots):
    """Record `example` with `opts`; the trees hold exactly `functions`/`arcs`."""
    tag = ' '.join(opts)
    print('--- case: %s' % tag)
    exp = dict(base, functions=functions, arcs=arcs, roots=roots,
               busy=[n for n in base['busy'] if n in functions])
    capname = 'f%d.data' % ck.count
    # a pattern naming no function is said (tests the warning's text in
    # filter-unmatched)
    warn = ["cygprof: warning: record: -F 'no_such_function' matched no function the "
            "program called"] if 'no_such_function' in opts else []
    capture, data, _ = record_and_check(ck, cyg, example, exp, opts=opts, capname=capname,
                                        warnings=warn)
    n = len(ck.failures)
    ck.eq(data['lost_events'], 0, '[%s] lost_events' % tag)
    check_all(ck, data, exp, example)
    check_filters_shown(ck, cyg, capture, opts)
    if len(ck.failures) > n:
        print('--- case failed: %s' % tag)
    return capture


def filter_cases_calls():
    m, a, b, c = 'main', 'a', 'b', 'c'
    return [
        (['-F', 'b'], {b: 6, c: 30}, {(b, c): 30}, {b}),
        (['-N', 'b'], {m: 1, a: 3, c: 30}, {(m, a): 3, (a, c): 30}, {m}),
        (['-D', '2'], {m: 1, a: 3}, {(m, a): 3}, {m}),
        (['-D', '1'], {m: 1}, {}, {m}),
        (['-F', 'b', '-N', 'c'], {b: 6}, {}, {b}),
        (['-F', 'a', '-N', 'b'], {a: 3, c: 30}, {(a, c): 30}, {a}),
        (['-F', 'a', '-D', '2'], {a: 3, b: 6}, {(a, b): 6}, {a}),
        (['-N', 'a', '-D', '2'], {m: 1, b: 6}, {(m, b): 6}, {m}),
        (['-N', 'a', '-N', 'b'], {m: 1, c: 30}, {(m, c): 30}, {m}),
        (['-F', 'b', '-F', 'a'], {a: 3, b: 6, c: 30}, {(a, b): 6, (b, c): 30}, {a}),
        (['-F', '[bc]'], {b: 6, c: 30}, {(b, c): 30}, {b}),
        (['-F', 'no_such_function'], {}, {}, set()),
    ]


def test_filters_calls(ck, cyg, example):
    base = exp_calls()
    m, a, b, c = 'main', 'a', 'b', 'c'
    for opts, functions, arcs, roots in filter_cases_calls():
        filter_case(ck, cyg, example, base, opts, functions, arcs, roots)

    # The filters apply to the timeline too.
    opts = ['--timeline', '-F', 'b']
    print('--- case: %s (replay)' % ' '.join(opts))
    capture = filter_case(ck, cyg, example, base, opts, {b: 6, c: 30}, {(b, c): 30}, {b})
    cp = run([cyg.exe, 'replay', capture])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay of -F b exit status')
    got = {fn: replay_calls(cp.out, fn) for fn in (m, a, b, c)}
    ck.eq(got, {m: 0, a: 0, b: 6, c: 30}, 'replay of -F b: lines per function')


def filter_cases_recursion():
    m, r, f, e, o = 'main', 'run', 'fib', 'is_even', 'is_odd'
    return [
        (['-D', '3'], {m: 1, r: 1, f: 3, e: 2, o: 2},
         {(m, r): 1, (r, f): 3, (m, e): 1, (m, o): 1, (e, o): 1, (o, e): 1}, {m}),
        (['-N', 'fib'], {m: 1, r: 1, e: 10, o: 9},
         {(m, r): 1, (m, e): 1, (m, o): 1, (e, o): 8, (o, e): 9}, {m}),
        # is_odd hidden: an is_even called by is_odd attaches to the nearest
        # kept ancestor, another is_even (8 times) or main (is_odd(7)'s call).
        (['-N', 'is_odd'], {m: 1, r: 1, f: 65673, e: 10},
         {(m, r): 1, (r, f): 3, (f, f): 65670, (m, e): 2, (e, e): 8}, {m}),
        (['-F', 'is_*'], {e: 10, o: 9}, {(e, o): 8, (o, e): 9}, {e, o}),
        # -D counts in the tree left by -F: run is at depth 1.
        (['-F', 'run', '-D', '2'], {r: 1, f: 3}, {(r, f): 3}, {r}),
        (['-N', 'fib', '-N', 'is_*', '-D', '2'], {m: 1, r: 1}, {(m, r): 1}, {m}),
    ]


def test_filters_recursion(ck, cyg, example):
    base = exp_recursion()
    for opts, functions, arcs, roots in filter_cases_recursion():
        filter_case(ck, cyg, example, base, opts, functions, arcs, roots)


def filters_after(ck, cyg, example, cases, replay=False):
    """Record once without filters (with a timeline); report with each case's
    filters gives exactly the functions and arcs record's filters give."""
    cap = os.path.join(cyg.workdir, 'all.data')
    cp = run([cyg.exe, 'record', '-q', '--timeline', '-o', cap, '--', example])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record exit status')
    full = report_json(ck, cyg, cap, [])
    for opts, functions, arcs, roots in cases:
        tag = ' '.join(opts)
        d = report_json(ck, cyg, cap, opts)
        ck.eq(dict((f['name'], f['calls']) for f in d['functions'] if f['calls']), functions,
              '[report %s] calls per function' % tag)
        ck.eq(dict(((x['caller'], x['callee']), x['calls']) for x in d['arcs']), arcs,
              '[report %s] arcs' % tag)
        ck.eq(set(f['name'] for f in d['functions'] if f['spontaneous_calls']), roots,
              '[report %s] functions called from the root' % tag)
        a = run([cyg.exe, 'annotate', '--format=json'] + opts + [cap])
        ck.eq(a.returncode, 0, '[annotate %s] exit status' % tag)
        if a.returncode == 0:
            ck.eq(json.loads(a.out)['totals']['calls'], sum(functions.values()),
                  '[annotate %s] total calls' % tag)
        if replay:
            r = run([cyg.exe, 'replay'] + opts + [cap])
            ck.eq(describe_status(r.returncode), 'exit 0', '[replay %s] exit status' % tag)
            got = dict((fn, replay_calls(r.out, fn)) for fn in full_names(full))
            ck.eq(dict((k, v) for k, v in got.items() if v), functions,
                  '[replay %s] lines per function' % tag)
    return cap, full


def full_names(rep):
    return [f['name'] for f in rep['functions']]


def report_json(ck, cyg, cap, opts):
    cp = run([cyg.exe, 'report', '--format=json'] + list(opts) + [cap])
    if cp.returncode != 0:
        raise Failure('report --format=json %s failed: %s' % (' '.join(opts), cp.err.strip()))
    return json.loads(cp.out)


def crossing(ck, cyg, cap, tag):
    """Time ranges through a call: every call has its true times."""
    dur = int(info_json(ck, cyg, cap)['meta']['duration_ns'])
    # chrome export: every call of a window, those crossing its edges too,
    # has its true times: the durations of a wider window, marked

    def chrome(rng):
        out = os.path.join(cyg.workdir, 'w%d.json' % len(rng))
        p = run([cyg.exe, 'export', '--format=chrome', '-o', out, '--time-range', rng, cap])
        ck.eq(p.returncode, 0, tag + 'export chrome --time-range %s: exit 0' % rng)
        with open(out) as fh:
            d = json.load(fh)
        evs = d['traceEvents'] if isinstance(d, dict) else d
        return [e for e in evs if e.get('ph') == 'X' and e.get('cat') == 'function']

    whole = chrome('0,%dns' % (dur + 10**9))
    wide = dict(((e['tid'], e['ts'], e['name']), e['dur']) for e in whole)
    ck.eq([e for e in whole if 'args' in e and 'crosses' in e['args']], [],
          tag + 'chrome --time-range wider than the capture: no call crosses it')
    # the edge: inside the longest call of b (main, a and b run across it)
    b = max((e for e in whole if e['name'].startswith('b')), key=lambda e: e['dur'])
    mid = int((b['ts'] + b['dur'] / 2) * 1000)
    first = chrome('0,%dns' % mid)
    second = chrome('%dns,%dns' % (mid, dur + 10**9))
    edge = mid / 1000.0
    for name, part in (('first half', first), ('second half', second)):
        ck.eq([e['dur'] for e in part], [wide.get((e['tid'], e['ts'], e['name'])) for e in part],
              tag + 'chrome --time-range %s: every call has the duration of the whole window' % name)

    def marked(part, *how):
        return sorted((e['tid'], e['ts'], e['name']) for e in part
                      if e.get('args', {}).get('crosses') in how)
    ends, starts = marked(first, 'end', 'both'), marked(second, 'start', 'both')
    ck.check(len(ends) >= 3, tag + 'chrome --time-range: main, a and b at least cross the edge (%d)'
             % len(ends))
    ck.eq(ends, starts, tag + 'chrome --time-range: the calls marked crossing the end of the first '
          'half are those marked crossing the start of the second')
    ck.eq(sorted(k for k in wide if k[1] < edge < k[1] + wide[k]), ends,
          tag + 'chrome --time-range: they are the calls running at the edge')
    r = run([cyg.exe, 'replay', '--time-range', '%dns,' % mid, cap])
    ck.eq(r.out.count('/* entered before the range */'), len(starts),
          tag + 'replay --time-range: the calls running at its start are marked')
    r = run([cyg.exe, 'replay', '--time-range', ',%dns' % mid, cap])
    ck.eq(r.out.count('/* ends after the range */'), len(ends),
          tag + 'replay --time-range: the calls running at its end are marked')


def test_filters_after_calls(ck, cyg, example):
    cap, full = filters_after(ck, cyg, example, filter_cases_calls(), replay=True)
    calls = dict((f['name'], f['calls']) for f in full['functions'])
    dur = int(info_json(ck, cyg, cap)['meta']['duration_ns'])
    # a time range covering the whole run changes nothing; one after the end
    # keeps nothing; the first half and the second half add up to the whole
    whole = report_json(ck, cyg, cap, ['--time-range', '0,%dns' % (dur + 10**9)])
    ck.eq(dict((f['name'], f['calls']) for f in whole['functions'] if f['calls']), calls,
          '--time-range over the whole run: every call')
    # the trees' times and the timeline's are rounded apart: a ns here and there
    ck.check(abs(whole['total_self_ns'] - full['total_self_ns']) <= 1000,
             '--time-range over the whole run: all the time (%d vs %d)' %
             (whole['total_self_ns'], full['total_self_ns']))
    late = report_json(ck, cyg, cap, ['--time-range', '%dns,' % (dur + 10**9)])
    ck.eq(sum(f['calls'] for f in late['functions']), 0, '--time-range after the end: no call')
    mid = dur // 2
    h1 = report_json(ck, cyg, cap, ['--time-range', '0,%dns' % mid])
    h2 = report_json(ck, cyg, cap, ['--time-range', '%dns,' % mid])
    for name, n in calls.items():
        n1 = sum(f['calls'] for f in h1['functions'] if f['name'] == name)
        n2 = sum(f['calls'] for f in h2['functions'] if f['name'] == name)
        ck.eq(n1 + n2, n, '--time-range halves: calls of %s add up' % name)
    t = h1['total_self_ns'] + h2['total_self_ns']
    ck.check(abs(t - full['total_self_ns']) <= 1000,
             '--time-range halves: self times add up (%d vs %d)' % (t, full['total_self_ns']))
    r = run([cyg.exe, 'replay', '--time-range', '%dns,' % (dur + 10**9), cap])
    ck.eq(r.returncode, 0, 'replay --time-range after the end: exit 0')
    ck.eq(sum(replay_calls(r.out, fn) for fn in calls), 0, 'replay --time-range after the end: no call')
    crossing(ck, cyg, cap, '')
    # a schema 2 capture (blocks without their open calls) is read from its
    # start, to the same calls and times
    crossing(ck, cyg, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'data',
                                   'timeline-schema2.data'), 'schema 2: ')
    # bad values and a capture without a timeline
    for bad in (['--time-range', '5'], ['--time-range', '2s,1s'], ['-D', '0'], ['-D', 'x']):
        p = run([cyg.exe, 'report'] + bad + [cap])
        ck.eq(p.returncode, 2, 'report %s: exit 2' % ' '.join(bad))
        ck.eq(len(p.err.strip().splitlines()), 1, 'report %s: one line' % ' '.join(bad))
    nt = os.path.join(cyg.workdir, 'notl.data')
    run([cyg.exe, 'record', '-q', '-o', nt, '--', example])
    p = run([cyg.exe, 'report', '--time-range', '0,1s', nt])
    ck.eq(p.returncode, 1, 'report --time-range without a timeline: exit 1')
    ck.check('needs one (record with --timeline)' in p.err, 'it says why: %r' % p.err.strip())


def test_filters_after_recursion(ck, cyg, example):
    filters_after(ck, cyg, example, filter_cases_recursion())


def test_timefilter(ck, cyg, example):
    """--timeline -t 1ms: the timeline keeps slow() and loses fast(); the trees
    keep every call."""
    exp = exp_timefilter()
    opts = ['--timeline', '-t', '1ms']
    capture, data, _ = record_and_check(ck, cyg, example, exp, opts=opts)
    ck.eq(data['lost_events'], 0, 'lost_events')
    check_all(ck, data, exp, example)
    check_filters_shown(ck, cyg, capture, opts)
    cp = run([cyg.exe, 'replay', capture])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay exit status')
    entries = replay_entries(cp.out)
    ck.eq(replay_calls(cp.out, 'slow'), 3, 'replay with -t 1ms: slow() lines')
    ck.eq(replay_calls(cp.out, 'main'), 1, 'replay with -t 1ms: main() lines')
    # A fast() call only passes -t 1ms if it really took 1 ms (the thread was
    # preempted inside it): none may be shown with a shorter duration.
    fast = [(d, rest) for d, rest in entries if rest.startswith('fast()')]
    short = [(d, rest) for d, rest in fast if d is None or d < 1e6]
    ck.check(not short, 'replay with -t 1ms: no fast() call shorter than 1 ms (got %s)' %
             short[:5])
    ck.check(len(fast) <= 2, 'replay with -t 1ms: no fast() (got %d, each >= 1 ms)' % len(fast))
    for d, rest in entries:
        if d is not None and rest.endswith(';'):
            ck.check(d >= 1e6, 'replay with -t 1ms: leaf %r lasted %d ns >= 1 ms' % (rest, d))
    for d, rest in entries:
        if rest.startswith('slow()'):
            ck.check(d is not None and d >= 4.5e6, 'slow() lasted >= 5 ms (%s)' % d)
    info = info_json(ck, cyg, capture)
    ck.eq(info.get('events'), 2 * (3 + 1 + len(fast)),
          'info: timeline events = 2 per kept call')
    if ck.failures:
        print('--- replay output (first 30 lines)')
        print('\n'.join(cp.out.splitlines()[:30]))

    # Control: without -t every fast() call is in the timeline.
    cap2, data2, _ = record_and_check(ck, cyg, example, exp, opts=['--timeline'],
                                      capname='nofilter.data')
    check_functions(ck, data2, exp['functions'])
    cp = run([cyg.exe, 'replay', cap2])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay (no -t) exit status')
    got = {fn: replay_calls(cp.out, fn) for fn in ('main', 'fast', 'slow')}
    ck.eq(got, {'main': 1, 'fast': 1000, 'slow': 3}, 'replay without -t: lines per function')
    ck.eq(info_json(ck, cyg, cap2).get('events'), 2 * 1004, 'info: events without -t')


def warnings(cp):
    """cygprof's warning lines of a command's stderr."""
    return [line for line in cp.err.splitlines() if line.startswith('cygprof: warning:')]


def test_unmatched(ck, cyg, example):
    """A pattern that names no function is said, one line each, exit 0;
    one that does is not; a bare number to record -F is explained."""
    cap = os.path.join(cyg.workdir, 'f.data')
    cp = cyg.record(cap, [example], ['-F', '999', '-F', 'b', '-N', 'nope*', '-N', 'c'])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record -F 999: exit status')
    ck.eq(warnings(cp), [
        "cygprof: warning: record: -F 999 keeps only functions named '999': -F is a "
        "function filter (as uftrace's), not a frequency; sample rates are --sample=HZ "
        "and --cpu-freq=HZ",
        "cygprof: warning: record: -F '999' matched no function the program called",
        "cygprof: warning: record: -N 'nope*' matched no function the program called",
    ], 'record: the bare number explained, the unmatched patterns named, b and c not')
    data, _ = cyg.report_json(cap, ck)
    check_functions(ck, data, {'b': 6})
    # every name matched (c is called from inside b's scope, and hidden)
    cp = cyg.record(os.path.join(cyg.workdir, 'g.data'), [example], ['-F', 'a', '-N', 'c'])
    ck.eq(warnings(cp), [], 'record -F a -N c: no warning')

    full = os.path.join(cyg.workdir, 'full.data')
    cp = cyg.record(full, [example], ['--timeline'])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record --timeline: exit status')
    for cmd in (['report'], ['report', '--format=json'], ['export', '--format=folded', '-o',
                os.path.join(cyg.workdir, 'f.folded')], ['replay'], ['annotate']):
        name = cmd[0]
        cp = run([cyg.exe] + cmd + ['-F', 'zz', '-F', 'a', '-N', 'q*', '-N', 'c', full])
        ck.eq(describe_status(cp.returncode), 'exit 0', '%s with unmatched filters: exit'
              % ' '.join(cmd))
        ck.eq(warnings(cp), [
            "cygprof: warning: %s: -F 'zz' matched no function of the capture" % name,
            "cygprof: warning: %s: -N 'q*' matched no function of the capture" % name,
        ], '%s: the unmatched patterns named, one line each' % ' '.join(cmd))
        cp = run([cyg.exe] + cmd + ['-F', 'b', '-N', 'c', full])
        ck.eq(warnings(cp), [], '%s -F b -N c: no warning' % ' '.join(cmd))
        if name == 'export':
            os.unlink(os.path.join(cyg.workdir, 'f.folded'))


TESTS = {    'calls': test_filters_calls,
    'recursion': test_filters_recursion,
    'after-calls': test_filters_after_calls,
    'after-recursion': test_filters_after_recursion,
    'time': test_timefilter,
    'unmatched': test_unmatched,
}


def main():
    return driver_main(TESTS, 'filter', __doc__,
                       call=lambda fn, ck, cyg, example, args: fn(ck, cyg, example))


if __name__ == '__main__':
    sys.exit(main())
