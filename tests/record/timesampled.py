#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof record --time=sampled`.

Usage:
  timesampled.py --cygprof CYGPROF --example EXAMPLE --test NAME [--skip REASON] [-v] [--keep]

EXAMPLE is one of the shared examples (tests/example-NAME-O0/-O2); its expected
counts are tests/lib/cygtest.py's (EXPECT, named by the example's file name).

Tests:
  time-sampled         record EXAMPLE with --time=exact (the default) and with
                       --time=sampled: every function's calls and every
                       arc's calls are the same both ways and equal the
                       example's stated counts; the processes end the same
                       way and the thread counts match; the sampled
                       capture (--no-cpu: no CPU samples either) says
                       "time": "sampled" (the exact one "exact") and holds
                       no time (every self_ns, total_ns
                       and arc time 0); `report` says in its headers that
                       times were not measured, and prints the calls
  time-sampled-errors  --time with another value, and --timeline or
                       -i timeline with --time=sampled, are usage errors
                       (exit 2, one line, nothing recorded)
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)

NOTE = 'times: not measured (record --time=sampled; add --sample for sampled times)'


def example_name(example):
    """tests/example-calls-O2 -> calls"""
    base = os.path.basename(example)
    if base.startswith('example-'):
        base = base[len('example-'):]
    return base.rsplit('-O', 1)[0]


def arc_map(data):
    return {(a['caller'], a['callee']): a['calls'] for a in data['arcs']}


def test_time_sampled(ck, cyg, example, args):
    name = example_name(example)
    if name not in cygtest.EXPECT:
        raise cygtest.Failure('no expected counts for example %r' % name)
    exp = cygtest.EXPECT[name]()
    caps = {}
    for mode in ('exact', 'sampled'):
        # --no-cpu: no clock and no samples, so no time at all (with the
        # runtime's CPU samples the times are theirs: tests/cputime)
        opts = [] if mode == 'exact' else ['--time=sampled', '--no-cpu']
        cap, data, _ = cygtest.record_and_check(ck, cyg, example, exp, opts, 'cap-%s.data' % mode)
        ck.eq(data['meta'].get('time'), mode, '%s: the capture\'s "time"' % mode)
        cygtest.check_functions(ck, data, exp['functions'])
        cygtest.check_arcs(ck, data, exp['arcs'], exp['roots'])
        cygtest.check_processes(ck, data, exp['ends'], example)
        if exp['threads'] is not None:
            ck.eq(len(data['threads']), exp['threads'], '%s: number of threads' % mode)
        caps[mode] = (cap, data)

    exact, sampled = caps['exact'][1], caps['sampled'][1]
    # every function and every arc, not only those the example states
    ck.check(cygtest.diff_table('calls per function, exact vs sampled',
                            {f['name']: f['calls'] for f in exact['functions']},
                            {f['name']: f['calls'] for f in sampled['functions']}),
             'every function\'s calls are the same with --time=sampled (%d functions)' %
             len(exact['functions']))
    ck.check(cygtest.diff_table('calls per arc, exact vs sampled', arc_map(exact),
                            arc_map(sampled), lambda k: '%s -> %s' % k),
             'every arc\'s calls are the same with --time=sampled (%d arcs)' %
             len(exact['arcs']))
    ck.eq(sorted(p['end'] for p in sampled['processes']),
          sorted(p['end'] for p in exact['processes']), 'process ends, exact vs sampled')
    ck.eq(sum(t['calls'] for t in sampled['threads']),
          sum(t['calls'] for t in exact['threads']), 'calls of all threads, exact vs sampled')

    timed = [f['name'] for f in sampled['functions'] if f['self_ns'] or f['total_ns']]
    ck.check(not timed, 'sampled: no function has a time (got %s)' % timed)
    timed = ['%s -> %s' % (a['caller'], a['callee']) for a in sampled['arcs']
             if a['self_ns'] or a['children_ns']]
    ck.check(not timed, 'sampled: no arc has a time (got %s)' % timed)
    ck.eq(sampled['total_self_ns'], 0, 'sampled: total_self_ns')
    busy = [n for n in exp['busy'] if n in cygtest.fn_map(exact)]
    ck.check(any(cygtest.fn_map(exact)[n]['total_ns'] > 0 for n in busy),
             'exact: the busy functions have times (%s)' % busy)

    cap = caps['sampled'][0]
    for opts, where in ((['--flat'], 'flat profile'), (['--graph'], 'call graph'),
                        (['--tree'], 'tree')):
        cp = cygtest.run([cyg.exe, 'report'] + opts + [cap])
        ck.eq(cp.returncode, 0, 'report %s exit status' % ' '.join(opts))
        ck.check(NOTE in cp.out, 'report %s: the %s says times were not measured' %
                 (' '.join(opts), where))
        ck.check('Times are exact' not in cp.out and 'exact instrumented' not in cp.out,
                 'report %s: no claim of exact times' % ' '.join(opts))
    cp = cygtest.run([cyg.exe, 'report', '--flat', cap])
    rows = {}
    for line in cp.out.splitlines():
        f = line.split()
        # % self, cumul%, self time and total time "-", calls, "-" "-", name
        if len(f) == 8 and f[2:4] == ['-', '-'] and f[4].isdigit():
            rows[f[7]] = int(f[4])
    want = {k: v for k, v in exp['functions'].items() if ' ' not in k}
    ck.check(cygtest.diff_table('flat profile calls (text)', want,
                            {k: rows.get(k) for k in want}),
             'report --flat prints the exact calls')
    cp = cygtest.run([cyg.exe, 'report', '--flat', caps['exact'][0]])
    ck.check(NOTE not in cp.out and 'Times are CPU time per call path' in cp.out,
             'report on an exact-time capture: no note, the time model\'s times')


def test_errors(ck, cyg, example, args):
    d = cyg.workdir
    cap = os.path.join(d, 'err.data')
    for opts, what in ((['--time=fast'], '--time with an unknown value'),
                       (['--time'], '--time without a value'),
                       (['--time=sampled', '--timeline'], '--time=sampled --timeline'),
                       (['--timeline', '--time=sampled'], '--timeline --time=sampled'),
                       (['-i', 'timeline', '--time=sampled'], '-i timeline --time=sampled')):
        cp = cygtest.run([cyg.exe, 'record', '-o', cap] + opts + ['--', example])
        cygtest.expect_error(ck, cp, 'record ' + what, 2)
        ck.check(not os.path.exists(cap), 'record %s: no capture written' % what)
    cp = cygtest.run([cyg.exe, 'record', '--help'])
    ck.check('--time=exact|sampled' in cp.out, 'record --help names --time=exact|sampled')


TESTS = {
    'time-sampled': test_time_sampled,
    'time-sampled-errors': test_errors,
}

if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'timesampled', __doc__))
