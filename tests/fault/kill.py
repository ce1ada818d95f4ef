#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Kill anywhere (suite 'fault', tests fault-kill-*): a recorder, a sender
and a receiver are each SIGKILLed at 20 moments spread over their whole run,
the first second included, and every capture left is read by info, report,
replay (and memory) with counts no reader may contradict.

The program (killme.c) runs two threads for 3 s; each calls top() -> mid()
-> leaf() (leaf() allocates) K times a round and prints every round with its
CLOCK_MONOTONIC time.  For a capture whose last checkpoint was stamped at S
(its meta duration_ns after clock_start), cut off at the kill:

  * top, mid and leaf each have at least K * (the rounds printed before S)
    calls: those calls were counted before the checkpoint read them;
  * at most K * (the rounds printed before the kill + 1 per thread): the
    calls after the kill cannot be there; main and worker at most once;
    replay shows no more leaf() calls, memory no more allocations (+ the
    runtime's few of its own);
  * leaf has calls when the kill came FIRST_BOUND_S after the program's
    first printed round: the first checkpoint comes as soon as a thread has
    calls and the next ones 0.1, 0.2, 0.4 s after it;
  * every reader exits 0 and says in one line that the recording was cut
    off; none says damaged, or trims a thread whose record counts more
    events than its calls make.

  fault-kill-record    record --timeline --memory -o CAP, SIGKILLed
  fault-kill-send      record --timeline --memory --send, SIGKILLed: the
                       receiver keeps what arrived up to the last whole frame
  fault-kill-receive   receive, SIGKILLed while record --send streams: the
                       capture holds the receiver's last commit
  fault-full-tmpfs     record --timeline onto a 20 MB tmpfs (17 MB of it
                       taken by a ballast file) that fills: exit 1, one line
                       saying up to when calls and events are kept, and a
                       replay with leaf() calls (skipped without root: the
                       tmpfs cannot be mounted)

The 20 runs of a test run at once (the program sleeps 5 ms between rounds:
a run takes about 5% of a CPU), each program stopped once its recorder is
dead; then the captures are read, three at a time.
"""

import concurrent.futures
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cygtest import TIMEOUT, Failure, driver_main, replay_calls, run  # noqa: E402

RUN_MS = 3000
K = 50
PAUSE_US = 5000
# 8 moments in the first 0.4 s, the 8 of the "Done when" from 0.4 s
# to 2.2 s, 4 up to the end
MOMENTS = ([0.02, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35] +
           [round(0.4 + i * (2.2 - 0.4) / 7, 3) for i in range(8)] +
           [2.45, 2.65, 2.85, 2.97])
FIRST_BOUND_S = 0.5
LINE = re.compile(rb'^killme: thread=(\d) round=(\d+) mono_ns=(\d+)$', re.M)
TOKEN = b'0123456789abcdef-secret\n'
FNS = ('top', 'mid', 'leaf')


def mono_ns():
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def wait_until(t_ns):
    """Wait for a moment (the moment is what the test is about)."""
    while True:
        left = t_ns - mono_ns()
        if left <= 0:
            return
        time.sleep(min(left / 1e9, 0.005))


def children_of(pid):
    try:
        out = []
        for tid in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, tid)) as f:
                out += [int(x) for x in f.read().split()]
        return out
    except OSError:
        return []


def kill_quiet(pid):
    try:
        os.kill(pid, 9)
    except OSError:
        pass


class Run:
    """One program under a recorder (and a receiver), killed at a moment."""

    def __init__(self, i, moment, d):
        self.i = i
        self.moment = moment
        self.d = d
        self.cap = os.path.join(d, 'cap.data')
        self.out = os.path.join(d, 'stdout')
        self.prog = []       # pids of the program (to stop it afterwards)
        self.victim = None   # the process killed
        self.others = []     # processes to end afterwards
        self.start_ns = 0
        self.kill_ns = 0
        self.alive = False   # the victim was still running when killed
        self.rc = None       # else its exit status
        self.notes = []
        self.k = K           # the program's calls a round


def spawn_recorder(cyg, args, r, extra):
    out = open(r.out, 'wb')
    cmd = [cyg.exe, 'record', '-q', '--timeline', '--memory'] + extra + \
          ['--', args.killme, str(RUN_MS), str(K), str(PAUSE_US)]
    p = subprocess.Popen(cmd, cwd=r.d, stdout=out, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL)
    out.close()
    return p


def spawn_receiver(cyg, r, tok):
    p = subprocess.Popen([cyg.exe, 'receive', '--listen', '127.0.0.1:0', '--token-file', tok,
                          '-o', r.cap, '-f'], stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    line = p.stderr.readline().decode()
    m = re.match(r'receive: listening on port (\d+)$', line.strip())
    if not m:
        p.kill()
        p.wait()
        raise Failure('receive did not start: %r' % line)
    return p, m.group(1)


def start_run(cyg, args, r, kind, tok):
    if kind == 'record':
        r.victim = spawn_recorder(cyg, args, r, ['-o', r.cap])
    else:
        recv, port = spawn_receiver(cyg, r, tok)
        send = spawn_recorder(cyg, args, r, ['--send', '127.0.0.1:' + port, '--token-file',
                                             tok])
        r.victim, other = (send, recv) if kind == 'send' else (recv, send)
        r.others.append(other)
        r.recv = recv
    r.start_ns = mono_ns()


def kill_at(r, sender):
    """SIGKILL the victim at its moment; note the program's pids first (it
    runs on after its recorder)."""
    p = r.victim
    wait_until(r.start_ns + int(r.moment * 1e9))
    r.prog = children_of(sender.pid)
    r.rc = p.poll()
    r.alive = r.rc is None
    r.kill_ns = mono_ns()
    p.kill()
    p.wait()


def finish_run(r, kind):
    """After the kill: the receiver of a killed sender keeps what arrived
    (it sees the connection end, or never got a sender: then it is ended
    after a deadline); the program and the rest are stopped."""
    for pid in r.prog:
        kill_quiet(pid)
    if kind == 'send':
        recv = r.recv
        try:
            recv.wait(timeout=5)
        except subprocess.TimeoutExpired:
            r.notes.append('the receiver got no sender (killed before it connected)')
            recv.kill()
            recv.wait()
        r.recv_err = recv.stderr.read().decode('utf-8', 'replace')
    for p in r.others:
        if p.poll() is None:
            p.kill()
        p.wait()
        if p.stderr:
            p.stderr.close()
    if r.victim.stderr:
        r.victim.stderr.close()


def printed(r):
    """[(thread, round, mono_ns)] the program printed."""
    with open(r.out, 'rb') as f:
        return [(int(a), int(b), int(c)) for a, b, c in LINE.findall(f.read())]


def reader(cyg, cmd):
    cp = subprocess.run([cyg.exe] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        timeout=TIMEOUT)
    return cp.returncode, cp.stdout.decode('utf-8', 'replace'), \
        cp.stderr.decode('utf-8', 'replace').strip()


def check_capture(ck, cyg, r, tag, memory=True, word='cut off', window=None):
    """The readers on r.cap and the counts they may show (replay over
    --time-range window when given: a long timeline takes long to print).
    Returns leaf's calls in the report and in the replay (None when they
    did not read)."""
    lines = printed(r)
    before_kill = [x for x in lines if x[2] <= r.kill_ns]
    upper = r.k * (len(before_kill) + 2)
    got = {}
    cmds = [('info', ['info', '--format=json', r.cap]),
            ('report', ['report', '--format=json', r.cap]),
            ('replay', ['replay'] + (['--time-range', window] if window else []) + [r.cap])]
    if memory:
        cmds.append(('memory', ['memory', '--format=json', r.cap]))
    for name, cmd in cmds:
        rc, out, err = reader(cyg, cmd)
        warn = [x for x in err.splitlines() if word in x]
        if ck.check(rc == 0, '%s: %s exits 0 (%d: %s)' % (tag, name, rc, err)):
            got[name] = out
        ck.check(len(warn) == 1, '%s: %s says once that the recording was %s: %r' %
                 (tag, name, word, err))
        ck.check('damaged' not in err, '%s: %s calls nothing damaged: %r' % (tag, name, err))
        # the collector's thread records never count more events than
        # their calls make (which readers would trim, with a warning)
        ck.check('more events than' not in err, '%s: %s trims no thread: %r' % (tag, name, err))
    leaf = None
    if 'info' in got and 'report' in got:
        info = json.loads(got['info'])
        meta = info.get('meta', {})
        clk = meta.get('clock_start') or {}
        stamp = int(meta.get('duration_ns') or 0) + int(clk.get('mono_ns') or 0)
        # 1 ms for the clocks' pairing and the tick's calibration
        lower = r.k * sum(1 for x in lines if x[2] < stamp - 1000000)
        fns = {f['name']: f['calls'] for f in json.loads(got['report'])['functions']}
        leaf = fns.get('leaf', 0)
        for fn in FNS:
            n = fns.get(fn, 0)
            ck.check(lower <= n <= upper,
                     '%s: %s %d calls: at least the %d of the rounds printed before the '
                     'checkpoint, at most the %d of those printed before the kill and one more '
                     'a thread' % (tag, fn, n, lower, upper))
        for fn in ('main', 'worker'):
            ck.check(fns.get(fn, 0) <= 1, '%s: %s at most once (%d)' % (tag, fn, fns.get(fn, 0)))
        first = min((x[2] for x in lines), default=None)
        if first is not None and r.kill_ns >= first + int(FIRST_BOUND_S * 1e9):
            ck.check(leaf > 0, '%s: killed %.3f s after the first round: leaf() has calls' %
                     (tag, (r.kill_ns - first) / 1e9))
    shown = None
    if 'replay' in got:
        shown = n = replay_calls(got['replay'], 'leaf')
        ck.check(n <= upper, '%s: replay shows %d leaf() calls <= %d' % (tag, n, upper))
    if 'memory' in got:
        allocs = json.loads(got['memory'])['totals']['allocations']
        ck.check(allocs <= upper + 16, '%s: memory: %d allocations <= %d (+ the runtime\'s)' %
                 (tag, allocs, upper))
    return leaf, shown


def kill_test(kind):
    def t(ck, cyg, example, args):
        tok = os.path.join(cyg.workdir, 'token')
        with open(tok, 'wb') as f:
            f.write(TOKEN)
        os.chmod(tok, 0o600)
        runs = []
        for i, m in enumerate(MOMENTS):
            d = os.path.join(cyg.workdir, 'k%02d' % i)
            os.mkdir(d)
            runs.append(Run(i, m, d))
        ths = []
        try:
            # each run's killer starts with it: the moment is the run's own
            for r in runs:
                start_run(cyg, args, r, kind, tok)
                th = threading.Thread(target=kill_at, args=(
                    r, r.victim if kind != 'receive' else r.others[0]))
                th.start()
                ths.append(th)
        finally:
            for th in ths:
                th.join()
            # at once: a receiver that never got its sender is waited for
            ends = [threading.Thread(target=finish_run, args=(r, kind)) for r in runs]
            for th in ends:
                th.start()
            for th in ends:
                th.join()
        leafs = {}

        def one(r):
            tag = '%s killed at %.3f s' % ('receive' if kind == 'receive' else 'record', r.moment)
            late = (r.kill_ns - r.start_ns) / 1e9
            if not r.alive and r.rc == 0 and late * 1000 >= RUN_MS:
                # a loaded machine (ASan, a hog) woke this driver after the
                # program's whole run: the recording ended as it should
                print('%s: the kill came at %.3f s, after the run ended (exit 0)' % (tag, late))
                return
            if not ck.check(r.alive, '%s: it was still running when killed (exit %s at %.3f s)' %
                            (tag, r.rc, late)):
                return
            lines = printed(r)
            first = min((x[2] for x in lines), default=None)
            if not os.path.exists(r.cap):
                # record publishes the capture once the program runs (a
                # receiver once the sender says so), which a busy machine
                # may delay past the program's first rounds
                ck.check(first is None or r.kill_ns < first + int(FIRST_BOUND_S * 1e9),
                         '%s: a capture is there (killed %.3f s after the first round)' %
                         (tag, (r.kill_ns - first) / 1e9 if first else 0))
                return
            if kind == 'send':
                ck.check('kept, incomplete' in r.recv_err or r.notes,
                         '%s: the receiver kept what arrived: %r' % (tag, r.recv_err))
            leafs[r.moment] = check_capture(ck, cyg, r, tag)[0]
        # the readers of the 20 captures, three at a time
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            list(pool.map(one, runs))
        # the "Done when" (every kill from 0.4 s to 2.2 s keeps
        # calls of the innermost function) is the check above, from the
        # program's first round: a busy machine may start it late
        print('leaf() calls per kill moment: %s' % ', '.join(
            '%.2f s: %s' % (m, leafs.get(m)) for m in MOMENTS))
    return t


def test_full_tmpfs(ck, cyg, example, args):
    mnt = os.path.join(cyg.workdir, 'mnt')
    os.mkdir(mnt)
    if os.geteuid() != 0 or run(['mount', '-t', 'tmpfs', '-o', 'size=20m', 'tmpfs',
                                 mnt]).returncode:
        print('SKIP fault-full-tmpfs: cannot mount a 20 MB tmpfs (needs root)')
        sys.exit(77)
    try:
        # 17 MB of ballast: the 3 MB left fill within a second or two at
        # the program's full speed
        with open(os.path.join(mnt, 'ballast'), 'wb') as f:
            f.write(b'\0' * (17 << 20))
        r = Run(0, 0, cyg.workdir)
        r.cap = os.path.join(mnt, 'cap.data')
        stop = os.path.join(cyg.workdir, 'stop')
        out = open(r.out, 'wb')
        p = subprocess.Popen([cyg.exe, 'record', '-q', '--timeline', '-o', r.cap, '--',
                              args.killme, '60000', '5000', '0', stop], stdout=out,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        out.close()
        r.k = 5000
        deadline = time.monotonic() + 60
        # the program runs until the tmpfs is full: less free than a
        # capture's page run (the writer's next commit fails)
        while p.poll() is None and time.monotonic() < deadline:
            st = os.statvfs(mnt)
            if st.f_bavail * st.f_frsize < 128 << 10:
                break
            time.sleep(0.01)
        open(stop, 'w').close()
        _, err = p.communicate(timeout=TIMEOUT)
        err = err.decode('utf-8', 'replace').strip()
        r.kill_ns = mono_ns()
        m = re.match(r'^cygprof: record: %s: no space left on device at (\d+\.\d{3}) s; the '
                     r'capture holds the calls up to (\d+\.\d{3}) s and the events up to '
                     r'(\d+\.\d{3}) s; %s ran on to its end, exit status 0$' %
                     (re.escape(r.cap), re.escape(args.killme)), err)
        ck.check(p.returncode == 1 and m is not None,
                 'record onto the full tmpfs: exit 1, one line saying up to when calls and '
                 'events are kept (%d: %r)' % (p.returncode, err))
        if m:
            full, calls, events = (float(x) for x in m.groups())
            ck.check(calls <= events <= full, 'calls kept up to %.3f s <= events up to %.3f s '
                     '<= full at %.3f s' % (calls, events, full))
        # the replay of the last 50 ms before the calls kept (a replay of
        # all of it prints millions of lines)
        calls = float(m.group(2)) if m else 0
        window = '%dms,%dms' % (max(0, calls * 1000 - 50), calls * 1000)
        leaf, shown = check_capture(ck, cyg, r, 'full tmpfs', memory=False, word='ended early',
                                    window=window)
        ck.check(leaf, 'the report has leaf() calls (%s)' % leaf)
        ck.check(shown, 'the replay of %s has leaf() calls (%s)' % (window, shown))
    finally:
        run(['umount', '-l', mnt])


TESTS = {
    'fault-kill-record': kill_test('record'),
    'fault-kill-send': kill_test('send'),
    'fault-kill-receive': kill_test('receive'),
    'fault-full-tmpfs': test_full_tmpfs,
}


def extra(ap):
    ap.add_argument('--killme', required=True)


def call(fn, ck, cyg, example, args):
    args.killme = os.path.abspath(args.killme)
    fn(ck, cyg, example, args)


if __name__ == '__main__':
    sys.exit(driver_main(TESTS, 'fault', __doc__, extra=extra, call=call))
