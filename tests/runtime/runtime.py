#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the runtime's hard cases (issue 7): call paths a
million deep, signal handlers that interrupt the hooks, raw clone()
children, a collector that stalls or dies while writers wait for it, and a
program that lowers its own address-space limit.

Usage:
  runtime.py --cygprof CYGPROF --example EXE --test NAME [--sanitize B_SANITIZE]
             [--skip REASON] [-v] [--keep]

Each test records one of examples/deep.c, sigalrm.c, rawclone.c or
longrun.c and compares `cygprof report --format=json` with the exact counts
stated in the example's comment block (repeated below).  Exit status: 0
passed, 1 failed, 77 skipped.  Helpers come from tests/lib/cygtest.py.
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status  # noqa: E402

THREAD_SIGNAL = 8
THREAD_CLONED = 16


def calls_of(data):
    return {f['name']: f['calls'] for f in data['functions']}


def arcs_of(data):
    return {(a['caller'], a['callee']): a['calls'] for a in data['arcs']}


def record(ck, cyg, example, args, opts=(), name='cap.data'):
    capture = os.path.join(cyg.workdir, name)
    cp = cyg.record(capture, [example] + list(args), opts)
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record exit status (the program\'s)')
    if not os.path.exists(capture):
        raise Failure('record left no capture at %s' % capture)
    data, _ = cyg.report_json(capture, ck)
    return capture, cp, data


def check_calls(ck, data, want, what=''):
    got = calls_of(data)
    for name, n in sorted(want.items()):
        ck.eq(got.get(name), n, '%scalls of %s' % (what, name))


# --------------------------------------------------------------------------
# depth


def test_deep(ck, cyg, example, args):
    """Recursion 1,000,000 deep: every call counted, in the tree (before:
    65,534 and no warning anywhere)."""
    depth = 1000000
    _, cp, data = record(ck, cyg, example, [str(depth)])
    ck.eq(cp.out.strip(), 'deep: depth=%d dives=%d' % (depth, depth), 'the program\'s output')
    check_calls(ck, data, {'main': 1, 'start': 1, 'dive': depth, 'leaf': 1})
    arcs = arcs_of(data)
    for key, n in {('start', 'dive'): 1, ('dive', 'dive'): depth - 1, ('main', 'leaf'): 1}.items():
        ck.eq(arcs.get(key), n, 'arc %s -> %s' % key)
    total = sum(t['calls'] for t in data['threads'])
    ck.eq(total, depth + 3, 'calls of all threads')
    ck.check('limit' not in cp.err and 'depth' not in cp.err,
             'no limit reported by record (%r)' % cp.err.strip())
    # A limit set lower: the calls past it are counted, and every report
    # says how many are not in the tree.
    _, cp, data = record(ck, cyg, example, ['5000'], ['--max-depth', '1000'], 'lim.data')
    # frames 1..999 (start, then 998 dives); the other 4002 dives are deeper
    check_calls(ck, data, {'main': 1, 'start': 1, 'dive': 998, 'leaf': 1}, '--max-depth 1000: ')
    ck.eq(sum(t['overflow'] for t in data['threads']), 4002, '--max-depth 1000: overflow')
    ck.eq(sum(t['calls'] for t in data['threads']), 5003, '--max-depth 1000: calls of all '
          'threads (the deeper ones counted)')
    ck.eq(data.get('limits', {}).get('overflow'), 4002, '--max-depth 1000: JSON limits')
    lim = os.path.join(cyg.workdir, 'lim.data')
    for cmd in (['report'], ['report', '--format=json'], ['info'], ['gprof', '-b']):
        cp = run([cyg.exe] + cmd + [lim])
        ck.check(cp.returncode == 0 and re.search(r'\b4002 calls were deeper than the depth '
                                                 r'limit', cp.err) is not None,
                 '%s says 4002 calls are past the depth limit (%r)' % (' '.join(cmd),
                                                                       cp.err.strip()))


# --------------------------------------------------------------------------
# signal handlers


def sigalrm_counts(ck, cp):
    m = re.fullmatch(r'sigalrm: ticks=(\d+) work=(\d+)', cp.out.strip())
    if not m:
        raise Failure('unexpected output from the program: %r' % cp.out)
    return int(m.group(1)), int(m.group(2))


def test_sigalrm(ck, cyg, example, args):
    """A 20 kHz SIGALRM handler that calls and allocates: every call and
    allocation counted (before: about 85% of the handler's calls vanished
    without a counter)."""
    for opts in ((), ('--timeline',)):
        what = '%s: ' % (' '.join(opts) or 'plain')
        _, cp, data = record(ck, cyg, example, ['4000'], opts, 'sig%d.data' % len(opts))
        ticks, work = sigalrm_counts(ck, cp)
        ck.check(ticks >= 4000, what + 'the program saw 4000 ticks (%d)' % ticks)
        check_calls(ck, data, {'main': 1, 'handler': ticks, 'on_tick': ticks,
                               'tick_work': ticks, 'work': work, 'leaf': 2 * work}, what)
        tids = {t['tid'] for t in data['threads']}
        ck.eq(len(tids), 1, what + 'one thread id (the handler\'s writer has main\'s)')
        lost = sum(t.get('sig_lost', 0) for t in data['threads'])
        ck.eq(lost, 0, what + 'signal-handler calls lost')
        if opts:
            ck.eq(data['lost_events'], 0, what + 'lost events')
    if args.sanitize not in ('', 'none'):
        print('info: --memory part skipped: b_sanitize=%s owns malloc' % args.sanitize)
        return
    capture = os.path.join(cyg.workdir, 'sigm.data')
    cp = cyg.record(capture, [example, '4000'], ['--memory'])
    ck.eq(describe_status(cp.returncode), 'exit 0', '--memory: record exit status')
    ticks, _ = sigalrm_counts(ck, cp)
    mem = run([cyg.exe, 'memory', '--format=json', capture])
    if mem.returncode != 0:
        raise Failure('cygprof memory failed: %s' % mem.err.strip())
    fns = {f['name']: f for f in json.loads(mem.out)['functions']}
    tick = fns.get('on_tick', {})
    ck.eq(tick.get('self_allocations'), ticks, '--memory: allocations of on_tick')
    ck.eq(tick.get('self_bytes'), 32 * ticks, '--memory: bytes of on_tick')
    ck.eq(tick.get('self_frees'), ticks, '--memory: frees of on_tick')


# --------------------------------------------------------------------------
# raw clone()


def test_rawclone(ck, cyg, example, args):
    """clone() without CLONE_VM, with CLONE_VM and no TLS, and CLONE_VFORK:
    each child a process or thread of its own with exact counts, and the
    program never crashes (before: 2-3 crashes in 10 runs, and the children
    merged into their parent)."""
    k = 100000
    runs = (((), 'plain'), (('--timeline',), 'timeline'), (('--timeline',), 'timeline'),
            ((), 'plain'))
    for i, (opts, what) in enumerate(runs):
        what = 'run %d (%s): ' % (i + 1, what)
        _, cp, data = record(ck, cyg, example, [str(k)], opts, 'rc%d.data' % i)
        ck.eq(cp.out.strip(), 'rawclone: proc=3 thread=%d vfork=5 main=%d' % (k, k),
              what + 'the program\'s output')
        check_calls(ck, data, {'main': 1, 'proc_child': 1, 'proc_work': k,
                               'thread_child': 1, 'thread_work': k, 'vfork_child': 1,
                               'vfork_work': k, 'main_work': k}, what)
        arcs = arcs_of(data)
        for key in (('proc_child', 'proc_work'), ('thread_child', 'thread_work'),
                    ('vfork_child', 'vfork_work'), ('main', 'main_work')):
            ck.eq(arcs.get(key), k, what + 'arc %s -> %s' % key)
        ends = sorted(p['end'] for p in data['processes'])
        ck.eq(ends, ['exit 0', 'exit 3', 'exit 5'], what + 'processes and their ends')
        ck.eq(len(data['threads']), 4, what + 'threads (main, the process child, the '
              'thread sharing main\'s TLS, the vfork child)')
        if opts:
            ck.eq(data['lost_events'], 0, what + 'lost events')
        cloned = [t for t in data['threads'] if t.get('flags', 0) & THREAD_CLONED]
        if any('flags' in t for t in data['threads']):
            ck.eq(len(cloned), 3, what + 'threads flagged as made by clone()')


# --------------------------------------------------------------------------
# a collector that stalls or dies


class Recording:
    """cygprof record running longrun in the background; the program's
    stdout lines are read with the time they arrived."""

    def __init__(self, cyg, example, rounds, opts):
        self.pidfile = os.path.join(cyg.workdir, 'pid')
        self.capture = os.path.join(cyg.workdir, 'stall.data')
        cmd = [cyg.exe, 'record', '-o', self.capture] + list(opts) + \
              ['--', example, self.pidfile, str(rounds), '2000']
        print('$ ' + ' '.join(cmd))
        self.p = subprocess.Popen(cmd, cwd=cyg.workdir, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        self.lines = []
        self.buf = b''

    def read(self, timeout, first=False):
        """Lines that arrived within timeout seconds, (time, text): all of
        them, or with first the first ones to arrive."""
        end = time.monotonic() + timeout
        got = []
        while time.monotonic() < end:
            r, _, _ = select.select([self.p.stdout], [], [], max(0, end - time.monotonic()))
            if not r:
                break
            chunk = os.read(self.p.stdout.fileno(), 65536)
            if not chunk:
                break
            self.buf += chunk
            while b'\n' in self.buf:
                line, self.buf = self.buf.split(b'\n', 1)
                got.append((time.monotonic(), line.decode('utf-8', 'replace')))
            if got and first:
                break
        self.lines += got
        return got

    def wait_round(self, n, timeout=30):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            for _, line in self.read(end - time.monotonic(), first=True):
                if line == 'longrun: round=%d' % n:
                    return
            if self.p.poll() is not None and not self.buf:
                break
        raise Failure('the program did not reach round %d' % n)

    def finish(self, timeout=60):
        try:
            out, err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            self.p.kill()
            self.p.communicate()
            raise Failure('cygprof record did not end within %d s' % timeout) from e
        for line in (self.buf + out).decode('utf-8', 'replace').splitlines():
            self.lines.append((time.monotonic(), line))
        return self.p.returncode, err.decode('utf-8', 'replace')

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def test_stall(ck, cyg, example, args):
    """The collector stopped for 7 s (SIGSTOP) while a 4 KiB timeline ring
    fills: the writers wait as long as it lives, nothing is lost, recording
    resumes (before: they gave up after 5 s, and dropped to the end)."""
    rounds, k = 12, 2000
    rec = Recording(cyg, example, rounds, ['--timeline', '--ring-size', '4096'])
    try:
        rec.wait_round(2)
        os.kill(rec.p.pid, signal.SIGSTOP)
        print('stopped cygprof (pid %d) for 7 s' % rec.p.pid)
        stalled = rec.read(7.0)
        ck.check(len(stalled) <= 1, 'the program waits while the collector is stopped '
                 '(%d lines meanwhile)' % len(stalled))
        os.kill(rec.p.pid, signal.SIGCONT)
        rc, err = rec.finish()
    finally:
        rec.kill()
    ck.eq(describe_status(rc), 'exit 0', 'record exit status')
    ck.eq([line for _, line in rec.lines][-1:],
          ['longrun: done rounds=%d work=%d' % (rounds, rounds * k)], 'the program ran to its end')
    data, _ = cyg.report_json(rec.capture, ck)
    calls = 1 + rounds + rounds * k
    check_calls(ck, data, {'main': 1, 'round_': rounds, 'work': rounds * k})
    ck.eq(data['lost_events'], 0, 'lost events')
    info = cygtest.info_json(ck, cyg, rec.capture)
    ck.eq(info.get('events'), 2 * calls, 'timeline events stored (2 per call)')
    waits = sum(t.get('waits', 0) for t in info.get('threads', []))
    ck.check(waits > 0, 'the writer waited for the collector (%d waits)' % waits)


def test_gone(ck, cyg, example, args):
    """The collector killed (SIGKILL) while the writer waits on a full ring:
    the program notices at once and runs on (before: after a 5 s
    heartbeat timeout)."""
    rounds = 40
    rec = Recording(cyg, example, rounds, ['--timeline', '--ring-size', '4096'])
    try:
        rec.wait_round(2)
        os.kill(rec.p.pid, signal.SIGSTOP)
        stalled = rec.read(1.0)  # the writer blocks on its ring meanwhile
        os.kill(rec.p.pid, signal.SIGKILL)
        killed = time.monotonic()
        print('killed cygprof (pid %d) with SIGKILL' % rec.p.pid)
        after = rec.read(5.0, first=True)
        ck.check(len(stalled) <= 1, 'the program waited while the collector was stopped')
        if not after:
            ck.fail('the program did not go on within 5 s of the collector\'s death')
        else:
            took = after[0][0] - killed
            print('info: the program went on %.3f s after the collector died' % took)
            ck.check(took < 1.0, 'the program went on within 1 s of the collector\'s '
                     'death (%.3f s)' % took)
    finally:
        rec.kill()
        try:
            with open(rec.pidfile) as f:
                os.kill(int(f.read()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


# --------------------------------------------------------------------------
# a program that lowers its own RLIMIT_AS

AS_THREADS, AS_CALLS = 8, 10000


def test_aslimit(ck, cyg, example, args):
    """examples/aslower.c lowers RLIMIT_AS to 256 MiB and to 1 GiB, then
    starts 8 threads: alone and under record it exits 0, and the capture has
    every call (before: its pthread_create failed under record, which
    mapped 16 GiB into it)."""
    for mib, opts in ((256, []), (256, ['--timeline']), (1024, [])):
        argv = [str(mib), str(AS_THREADS), str(AS_CALLS)]
        want = 'aslower: limit=%d MiB threads=%d work=%d' % (mib, AS_THREADS,
                                                             AS_THREADS * AS_CALLS)
        cp = run([example] + argv)
        ck.eq((cp.returncode, cp.out.strip()), (0, want),
              'alone under %d MiB: exit 0 with every thread (stderr %r)' % (mib, cp.err))
        what = 'under %d MiB%s: ' % (mib, ' ' + ' '.join(opts) if opts else '')
        _, rec, data = record(ck, cyg, example, argv, opts,
                              name='as%d%s.data' % (mib, '-t' if opts else ''))
        ck.eq(rec.out.strip(), want, what + 'the program ran every thread under record '
              '(stderr %r)' % rec.err)
        check_calls(ck, data, {'main': 1, 'worker': AS_THREADS, 'work': AS_THREADS * AS_CALLS},
                    what)
        ck.eq(arcs_of(data).get(('worker', 'work')), AS_THREADS * AS_CALLS, what + 'arc worker -> work')
        ck.eq(len([t for t in data['threads'] if t['calls'] > 0]), 1 + AS_THREADS,
              what + 'threads recorded')
        ck.check('shm_full' not in cygtest.info_json(ck, cyg, os.path.join(
            cyg.workdir, 'as%d%s.data' % (mib, '-t' if opts else ''))).get('meta', {}),
            what + 'nothing refused for room')
        if opts:
            ck.eq(data['lost_events'], 0, what + 'lost events')


TESTS = {
    'deep': test_deep,
    'sigalrm': test_sigalrm,
    'rawclone': test_rawclone,
    'stall': test_stall,
    'gone': test_gone,
    'aslimit': test_aslimit,
}


def main():
    return cygtest.driver_main(TESTS, 'runtime', __doc__, extra=lambda ap: ap.add_argument(
        '--sanitize', default='none', help='meson\'s b_sanitize option'))


if __name__ == '__main__':
    sys.exit(main())
