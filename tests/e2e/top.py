#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof top` (the live view), through its
non-interactive mode `top --once`.

Usage:
  top.py --cygprof CYGPROF --example CALLS-O2 --threads THREADS-O2
         --longrun LONGRUN-O2 --test NAME
         [--skip REASON] [-v] [--keep]

CALLS-O2 is examples/calls.c (main 1, a 3, b 6, c 30 calls); THREADS-O2 is
examples/threads.c (4 workers calling work N times, main once more);
LONGRUN-O2 is examples/longrun.c.

Tests:
  top-once      top --once --format=json on calls: main 1, a 3, b 6, c 30
                calls, sorted by self time (the hottest first), and the self
                times those of report --format=json on the capture the same
                run kept (-o); the interval of the one snapshot is the total;
                -n 1 keeps only the hottest; the text form names the four;
                the program's stdout passes through, its exit status is top's
  top-threads   top --once on threads 200: work 801 calls merged over the
                threads, 6 threads counted
  top-live      top without --once on longrun (10 rounds of 2000 work calls,
                100 ms apart) with snapshots every 200 ms: several snapshots,
                work's calls never going down, its last-interval calls
                summing to the 20000 of the last one
  top-tty       top in a real terminal (tmux) on longrun: the view with its
                key line comes, p pauses it, q stops the program (SIGTERM:
                exit 143) and leaves the last snapshot on the screen; skipped
                without tmux
  top-errors    no program, --format without --once, a bad --format, a
                bad --limit: one line, exit 2; a missing program: exit 127
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402
from e2e import Failure, run, describe_status, expect_error  # noqa: E402


def top_json(cyg, prog_args, opts=()):
    cp = run([cyg.exe, 'top', '--once', '--format=json'] + list(opts) + ['--'] +
             list(prog_args), cwd=cyg.workdir)
    if cp.returncode != 0:
        raise Failure('top --once failed (%s): %s' % (describe_status(cp.returncode),
                                                     cp.err.strip()))
    # the program's own stdout comes first: the snapshot is the last line(s)
    start = cp.out.find('{"elapsed_ns"')
    if start < 0:
        raise Failure('no JSON snapshot in the output:\n%s' % cp.out[:500])
    try:
        return json.loads(cp.out[start:]), cp
    except ValueError as e:
        raise Failure('top output is not JSON (%s):\n%s' % (e, cp.out[start:start + 500]))


def check_sorted(ck, fns):
    selfs = [f['self_ns'] for f in fns]
    ck.check(selfs == sorted(selfs, reverse=True),
             'functions sorted by self time, hottest first (%s)' % selfs)


def t_once(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'top.cyg')
    data, cp = top_json(cyg, [example], ['-o', cap])
    ck.check(cp.out.startswith('calls: a=3 b=6 c=30\n'), "the program's stdout passes through")
    ck.eq(data.get('exit_status'), 0, 'exit_status')
    ck.eq(data.get('threads'), 1, 'threads')
    fns = data['functions']
    calls = {f['name']: f['calls'] for f in fns}
    ck.eq(calls, {'main': 1, 'a': 3, 'b': 6, 'c': 30}, 'calls per function')
    check_sorted(ck, fns)
    ck.eq(data['interval_ns'], data['elapsed_ns'], 'one snapshot: the interval is the run')
    for f in fns:
        ck.eq((f['interval_calls'], f['interval_self_ns']), (f['calls'], f['self_ns']),
              '%s: one snapshot: the interval is the total' % f['name'])
    # the same run's capture, through the report: the same self times
    rep, _ = cyg.report_json(cap, ck)
    want = {f['name']: (f['calls'], f['self_ns'], f['total_ns']) for f in rep['functions']}
    for f in fns:
        w = want.get(f['name'])
        if not w:
            ck.fail('%s: not in the report of the capture' % f['name'])
            continue
        ck.eq(f['calls'], w[0], '%s: calls as the report' % f['name'])
        ck.check(abs(f['self_ns'] - w[1]) <= 10 and abs(f['total_ns'] - w[2]) <= 10,
                 '%s: self %d total %d ns as the report (%d, %d) within 10 ns' %
                 (f['name'], f['self_ns'], f['total_ns'], w[1], w[2]))
    hottest = max(rep['functions'], key=lambda f: f['self_ns'])['name']
    ck.eq(fns[0]['name'], hottest, 'the hottest function first')
    # -n 1: only the hottest
    one, _ = top_json(cyg, [example], ['-n', '1'])
    ck.eq(len(one['functions']), 1, '-n 1: one function')
    cp = run([cyg.exe, 'top', '--once', '--', example], cwd=cyg.workdir)
    ck.eq(cp.returncode, 0, 'text: exit status')
    lines = cp.out.splitlines()
    head = [i for i, ln in enumerate(lines) if ln.rstrip().endswith('function')]
    rows = [ln.split()[-1] for ln in lines[head[0] + 1:] if ln.strip()] if head else []
    ck.eq(sorted(rows), ['a', 'b', 'c', 'main'], 'text: the four functions')
    ck.eq(os.listdir(cyg.workdir), ['top.cyg'], 'nothing left behind but the -o capture')


def t_threads(ck, cyg, example, args):
    data, _ = top_json(cyg, [os.path.abspath(args.threads), '200'])
    ck.eq(data['threads'], 6, 'threads')
    calls = {f['name']: f['calls'] for f in data['functions']}
    ck.eq(calls.get('work'), 801, 'work: calls merged over the threads')
    check_sorted(ck, data['functions'])


def t_live(ck, cyg, example, args):
    pidfile = os.path.join(cyg.workdir, 'pid')
    os.environ['CYGPROF_CHECKPOINT_MS'] = '200'
    try:
        cp = run([cyg.exe, 'top', '-n', '0', '--', os.path.abspath(args.longrun), pidfile,
                  '10', '2000'], cwd=cyg.workdir)
    finally:
        del os.environ['CYGPROF_CHECKPOINT_MS']
    ck.eq(cp.returncode, 0, 'exit status')
    totals, last = [], []
    for ln in cp.out.splitlines():
        f = ln.split()
        if len(f) == 5 and f[4] == 'work':
            totals.append(int(f[1]))
            last.append(int(f[3]))
    ck.check(len(totals) >= 3, 'several snapshots (%d)' % len(totals))
    ck.check(totals == sorted(totals), 'work: calls never go down (%s)' % totals)
    ck.eq(totals[-1] if totals else None, 20000, 'work: calls at the end')
    ck.eq(sum(last), 20000, 'work: the intervals add up to the total')


def tmux(sock, *a):
    return subprocess.run(['tmux', '-L', sock] + list(a), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=30)


def wait_pane(sock, what, timeout=20):
    end = time.time() + timeout
    while time.time() < end:
        out = tmux(sock, 'capture-pane', '-p', '-t', 'top').stdout.decode('utf-8', 'replace')
        if what in out:
            return out
        time.sleep(0.2)
    raise Failure('the terminal never showed %r; it shows:\n%s' % (what, out))


def t_tty(ck, cyg, example, args):
    if not shutil.which('tmux'):
        print('SKIP top-tty: no tmux')
        sys.exit(e2e.SKIP)
    sock = 'cygprof-top-%d' % os.getpid()
    done = os.path.join(cyg.workdir, 'exit')
    # the program's own stdout would scroll the view: the view alone on the tty
    cmd = ('CYGPROF_CHECKPOINT_MS=200 %s top -- sh -c \'exec "$0" "$@" >/dev/null\' '
           '%s %s 200 2000; echo $? > %s; sleep 30' %
           (cyg.exe, os.path.abspath(args.longrun), os.path.join(cyg.workdir, 'pid'), done))
    tmux(sock, 'new-session', '-d', '-s', 'top', '-x', '120', '-y', '40', cmd)
    try:
        out = wait_pane(sock, 'q: quit  p: pause')
        ck.check('work' in out and 'round_' in out, 'the view shows work and round_')
        tmux(sock, 'send-keys', '-t', 'top', 'p')
        wait_pane(sock, '(paused: p resumes)')
        ck.ok('p pauses the view')
        tmux(sock, 'send-keys', '-t', 'top', 'q')
        end = time.time() + 20
        while not os.path.exists(done) and time.time() < end:
            time.sleep(0.2)
        status = open(done).read().strip() if os.path.exists(done) else None
        ck.eq(status, '143', 'q: the program stopped by SIGTERM, top exits 128+15')
        out = wait_pane(sock, 'function')
        ck.check('work' in out, 'the last snapshot stays on the screen')
    finally:
        tmux(sock, 'kill-server')


def t_errors(ck, cyg, example, args):
    for what, argv in (('no program', ['top', '--once']),
                       ('--format without --once', ['top', '--format=json', '--', example]),
                       ('bad --format', ['top', '--once', '--format=xml', '--', example]),
                       ('bad --limit', ['top', '--once', '-n', 'x', '--', example]),
                       ('unknown option', ['top', '--bogus', '--', example])):
        expect_error(ck, run([cyg.exe] + argv, cwd=cyg.workdir), what, 2)
    expect_error(ck, run([cyg.exe, 'top', '--once', '--', os.path.join(cyg.workdir, 'nope')],
                         cwd=cyg.workdir), 'missing program', 127)


TESTS = {'top-once': t_once, 'top-threads': t_threads, 'top-live': t_live,
         'top-tty': t_tty, 'top-errors': t_errors}


def extra(ap):
    ap.add_argument('--threads', required=True)
    ap.add_argument('--longrun', required=True)


if __name__ == '__main__':
    sys.exit(e2e.driver_main(TESTS, 'top', __doc__, extra))
