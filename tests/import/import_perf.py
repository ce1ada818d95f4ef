#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof import-perf`.

Usage:
  import_perf.py --cygprof CYGPROF --example EXAMPLE --test NAME --dump HELPER
                 --fixture tests/data/perf-script.txt [-v] [--keep]

EXAMPLE is examples/threads.c; HELPER is tests/import/psamples-dump.c, which
prints a capture's clock, processes, threads and perf samples as JSON and
sets a meta key.  The fixture is a hand-written `perf script` text whose
pids, tids and times are placeholders, filled from the capture recorded in
the test (its own pid, tids, thread lifetimes and meta "clock_start"; a
capture without the pairing gets one first).

Tests:
  import-ok      the samples of the recorded threads land with the right
                 thread, time, weight (cpu-clock and task-clock: the period;
                 cycles: 0), flags and stack frames (innermost
                 CYGPROF_FRAME_IP, then CYGPROF_FRAME_RA, kernel frames
                 dropped and flagged); equal chains share their nodes, which
                 continue the capture's ids; one sample before the capture
                 and one of another process are skipped and counted in the
                 summary line; a second import is refused
  import-errors  malformed input lines (no time, a bad pid, a chain line
                 without an address or outside a sample, no event): one
                 line naming the line number, exit 1, the capture unchanged;
                 a capture without a clock pairing is refused in one line
"""

import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status  # noqa: E402

MONO0 = 5000 * 10**9 + 123000  # a made-up pairing: CLOCK_MONOTONIC ns at the start
IP, RA = 2, 1


def run_in(cmd, data):
    print('$ ' + ' '.join(cmd) + ' < input')
    cp = subprocess.run(cmd, input=data.encode(), stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=cygtest.TIMEOUT)
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    if cp.returncode != 0:
        print('  -> exit %d: %s' % (cp.returncode, cp.err.strip()))
    return cp


def dump(args, cap):
    cp = run([args.dump, cap])
    if cp.returncode != 0:
        raise Failure('psamples-dump %s failed (%s): %s' %
                      (cap, describe_status(cp.returncode), cp.err.strip()))
    return json.loads(cp.out)


def sha(path):
    with open(path, 'rb') as f:
        return hashlib.sha256(f.read()).hexdigest()


def record(cyg, example, args, pair=True):
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [example, '200'])
    if cp.returncode != 0:
        raise Failure('record failed (%s): %s' % (describe_status(cp.returncode), cp.err.strip()))
    d = dump(args, cap)
    if d['clock_start'] is None and pair:
        cp = run([args.dump, cap, 'set', 'clock_start', 'tsc=0 mono_ns=%d real_ns=0' % MONO0])
        if cp.returncode != 0:
            raise Failure('psamples-dump set failed: %s' % cp.err.strip())
        d = dump(args, cap)
    return cap, d


def mono0(d):
    return int([f for f in d['clock_start'].split() if f.startswith('mono_ns=')][0][8:])


def usec(ns):
    """A perf script time (seconds, 6 decimals) at or after ns."""
    us = (ns + 999) // 1000
    return '%d.%06d' % (us // 10**6, us % 10**6), us * 1000


def fixture(args, d):
    """The filled fixture and the samples it should give."""
    m0 = mono0(d)
    proc = d['procs'][0]
    threads = sorted((t for t in d['threads'] if t['proc_idx'] == proc['idx']),
                     key=lambda t: t['start_ns'])
    main = [t for t in threads if t['tid'] == proc['pid']][0]
    other = [t for t in threads if t['tid'] != proc['pid'] and t['end_ns'] > t['start_ns'] + 10000]
    if not other:
        raise Failure('no second thread living more than 10 us: %s' % threads)
    w = other[0]
    sub, want = {'pid': proc['pid'], 'tid0': main['tid'], 'tid1': w['tid']}, {}

    def at(name, t, lo, hi):
        s, ns = usec(m0 + lo + (hi - lo) * t // 100)
        sub[name] = s
        want[name] = ns - m0

    mend = main['end_ns'] or proc['end_ns']
    at('t0', 10, main['start_ns'], mend)
    at('t1', 20, main['start_ns'], mend)
    at('t2', 30, w['start_ns'], w['end_ns'])
    at('t3', 60, w['start_ns'], w['end_ns'])
    # nanoseconds (perf script --ns)
    t4 = m0 + main['start_ns'] + (mend - main['start_ns']) * 9 // 10
    sub['t4ns'] = '%d.%09d' % (t4 // 10**9, t4 % 10**9)
    want['t4ns'] = t4 - m0
    sub['tbefore'] = usec(m0 - 10**9)[0]
    with open(args.fixture) as f:
        text = f.read()
    for k, v in sub.items():
        text = text.replace('{%s}' % k, str(v))
    chain_a = [[IP, 0x401136], [RA, 0x401190], [RA, 0x7f0000029d90]]
    exp = [
        (want['t0'], 250000, main['idx'], 1, chain_a),
        (want['t1'], 250000, main['idx'], 1, chain_a),
        (want['t2'], 1000000, w['idx'], 3, [[IP, 0x401200], [RA, 0x7f00000094ac]]),
        (want['t3'], 0, w['idx'], 1, [[IP, 0x401300]]),
        (want['t4ns'], 250000, main['idx'], 1, chain_a),
    ]
    exp.sort(key=lambda e: e[0])
    return text, exp, proc['pid'], {main['idx']: main['tid'], w['idx']: w['tid']}


def test_ok(ck, cyg, example, args):
    cap, d = record(cyg, example, args)
    text, exp, pid, tids = fixture(args, d)
    before = d['nstacks']
    cp = run_in([cyg.exe, 'import-perf', cap], text)
    if not ck.eq(cp.returncode, 0, 'import-perf exit'):
        return
    ck.eq(cp.out.count('\n'), 1, 'one summary line')
    ck.check('imported 5 of 7 samples (6 stack nodes)' in cp.out and
             '1 outside the recording' in cp.out and '1 of processes it did not record' in cp.out,
             'summary: %r' % cp.out)
    ck.eq(cp.err, '', 'nothing on stderr')
    a = dump(args, cap)
    ck.eq(a['nstacks'], before + 6, 'stack nodes: the capture\'s and 6 more')
    got = [(s['t_ns'], s['weight_ns'], s['thread_idx'], s['flags'], s['frames'])
           for s in a['psamples']]
    ck.eq(got, exp, 'samples (t_ns, weight_ns, thread_idx, flags, frames)')
    for s in a['psamples']:
        ck.eq((s['pid'], s['tid']), (pid, tids.get(s['thread_idx'])), 'pid and tid')
    # the ids made here continue the capture's: every node of a sample is new
    # and equal chains share them
    ck.eq(len(set(json.dumps(s['frames']) for s in a['psamples'])), 3, 'distinct chains')
    # a second import is refused and changes nothing
    h = sha(cap)
    cp = run_in([cyg.exe, 'import-perf', cap], text)
    ck.eq(cp.returncode, 1, 'second import exit')
    ck.check('already holds imported perf samples' in cp.err and cp.err.count('\n') == 1,
             'second import: one line: %r' % cp.err)
    ck.eq(sha(cap), h, 'capture unchanged by the refused import')
    # the report still reads it
    cp = run([cyg.exe, 'report', cap])
    ck.eq(cp.returncode, 0, 'report of the capture after the import')


BAD = [
    ('x 1/1 12.5 cpu-clock:\n', 1, 'no \'SECONDS.FRACTION:\' time'),
    ('threads 1/x 12.5: 1 cpu-clock:\n', 1, 'malformed PID/TID'),
    ('\tzz main+0x1 (/x)\n', 1, 'call chain line outside a sample'),
    ('threads 1/1 12.5: 1000 cpu-clock:\n\t  401136 f (/x)\n\tnothex f (/x)\n', 3,
     'without a hexadecimal address'),
    ('threads 1/1 12.5: 1000\n', 1, 'no \'EVENT:\''),
    ('threads 1/1 12.5: 1 cpu-clock:\n\t1 f (/x)\nthreads 1/1 12.6: 1 cpu-clock:\n', 3,
     'without the blank line'),
    ('', 0, 'holds no samples'),
]


def test_errors(ck, cyg, example, args):
    cap, d = record(cyg, example, args, pair=False)
    if d['clock_start'] is None:
        h = sha(cap)
        cp = run_in([cyg.exe, 'import-perf', cap], 'x 1/1 1.5: 1 cpu-clock:\n\t1 f (/x)\n\n')
        ck.eq(cp.returncode, 1, 'no clock pairing: exit')
        ck.eq(cp.err, 'cygprof: %s: capture has no clock pairing; record it with this cygprof\n'
              % cap, 'no clock pairing: the message')
        ck.eq(sha(cap), h, 'no clock pairing: capture unchanged')
        cp = run([args.dump, cap, 'set', 'clock_start', 'tsc=0 mono_ns=%d real_ns=0' % MONO0])
        ck.eq(cp.returncode, 0, 'set the pairing')
    h = sha(cap)
    for text, line, what in BAD:
        cp = run_in([cyg.exe, 'import-perf', cap], text)
        ck.eq(cp.returncode, 1, '%r: exit' % text)
        ck.eq(cp.err.count('\n'), 1, '%r: one line' % text)
        if line:
            ck.check(('line %d:' % line) in cp.err and what in cp.err,
                     '%r: names line %d and %r: %r' % (text, line, what, cp.err))
        else:
            ck.check(what in cp.err, '%r: says %r: %r' % (text, what, cp.err))
        ck.eq(sha(cap), h, '%r: capture unchanged' % text)
    left = [f for f in os.listdir(cyg.workdir) if f.startswith('.cap.data')]
    ck.eq(left, [], 'no temporary file left')
    cp = run_in([cyg.exe, 'import-perf', '--bogus', cap], '')
    ck.eq(cp.returncode, 2, 'unknown option: exit 2')
    cp = run_in([cyg.exe, 'import-perf', os.path.join(cyg.workdir, 'none.data')], '')
    ck.eq(cp.returncode, 1, 'missing capture: exit 1')


TESTS = {'import-ok': test_ok, 'import-errors': test_errors}


def main():
    def extra(ap):
        ap.add_argument('--dump', required=True, help='tests/import/psamples-dump')
        ap.add_argument('--fixture', required=True, help='tests/data/perf-script.txt')
    return cygtest.driver_main(TESTS, 'import', __doc__, extra=extra)


if __name__ == '__main__':
    sys.exit(main())
