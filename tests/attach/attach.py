#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of cygprof record --attach PID (issue 12, point 3;
docs/attach.md).

Usage:
  attach.py --cygprof CYGPROF --example EXAMPLE --test NAME
            [--fake-runtime LIB] [--plain LONGRUN] [--skip REASON] [-v]

EXAMPLE is tests/attach/attachme.c (the refusals take examples/longrun.c);
LIB is tests/attach/fake-runtime.c, a stand-in runtime that logs what it is
asked.  attachme, uselib and longrun run until the test tells them to stop
(a file PATH.stop): a test takes no longer than its checks need.

Tests:
  attach-refuse  one stderr line and exit 1 for: a pid that does not exist,
                 an uninstrumented program (/bin/sleep), a program profiled
                 by record already; exit 2 for --attach with a program, a
                 bad pid, --duration without --attach, --attach with
                 --memory.
  attach-inject  the injection against the stand-in runtime: attach to
                 attachme for 2 s; cygprof exits 0, attachme runs on and
                 exits 0 with its normal output; the runtime got the
                 collector's mapping (its size and magic), one seed per
                 thread (main's outermost frame main, each worker's worker),
                 and the hooks: the calls it counted between attach_start
                 and attach_end (meta) within 5% of the program's own
                 counter over the same time; a second attach while the first
                 runs is refused (the runtime says -EBUSY); after the detach
                 an attach again works, without --duration, until SIGINT;
                 attachme ending while attached ends the attach (exit 0, "attached
                 until the end", meta attach_exited 1).
  attach-lib     an uninstrumented program (tests/attach/uselib.c) whose
                 shared library is instrumented: attached (not refused), the
                 library's calls reach the (stand-in) runtime, paired; the
                 program exits 0.
  attach-run     the real runtime: attach to attachme for 2 s, a thread
                 started once attached: the capture's calls
                 of work() per second within 5% of the program's counter
                 over [attach_start, attach_end]; every thread seen (the
                 late one too); call paths start at main, worker or
                 late_worker (the seeds); meta attach_pid; attachme runs on
                 and exits 0; CPU samples were taken (work() has some) and
                 the workers' 1 ms sleeps are their blocked time; the
                 attached runtime calibrated its hooks (info's overhead:
                 one image, 2000 calls, 11 rounds, plain mode, o_in and
                 o_out above 0), so report has no "no calibration" line
  attach-twice   a second attach while the first runs (until SIGINT) is
                 refused with "already being profiled" (the runtime's
                 cygprof_attach_state read through /proc/PID/mem); after the
                 detach, attaching again works or is refused in one line;
                 either way attachme exits 0.
  attach-top     top --attach --once --format=json for 2 s: the snapshot
                 names the process, is final, has the calls of the capture
                 it writes, within 5% of the program's counter; as text its
                 header says detached; --memory and --duration refused.
  attach-send    record --attach --send to cygprof receive over loopback:
                 nothing written where record runs, the received capture's
                 calls within 5% of the program's counter; --send with -o
                 refused.
  attach-kill-during  (burst.c) the attach measured (to its "attached"
                 line, and how long the program is traced: TracerPid); 32
                 SIGKILLs at i/32 of the traced time after the program is
                 seen traced, and 8 SIGTERMs over the whole attach, dealt
                 over four programs: none dies, each finishes the round it
                 ran meanwhile, a SIGTERM leaves no temporary file;
                 attached again with the same capture name: exactly its
                 two rounds, no temporary file left.
  attach-kill-anywhere  (burst.c) 20 SIGKILLs of record --attach
                 --duration 1.5 spread over its whole run: the program
                 lives; each published capture opens, its unit() calls
                 are those of its burst() calls within a round a thread
                 (in flight at the checkpoint) and no more rounds than
                 ran; attached
                 again: exact, no temporary file left.
"""

import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, expect_error  # noqa: E402


class Skip(Exception):
    """The test cannot run here (exit 77 with the reason)."""


def wait_pid(pidfile, proc):
    end = time.monotonic() + 30
    while time.monotonic() < end and proc.poll() is None:
        if os.path.exists(pidfile):
            with open(pidfile) as f:
                text = f.read()
            if text.endswith('\n'):
                return int(text)
        time.sleep(0.01)
    raise Failure('the program did not write its pid')


def wait_exec(proc, path):
    """Wait until proc has exec'd path (its /proc/PID/exe)."""
    want = os.path.realpath(path)
    end = time.monotonic() + 30
    while time.monotonic() < end and proc.poll() is None:
        try:
            if os.path.realpath('/proc/%d/exe' % proc.pid) == want:
                return
        except OSError:
            pass
        time.sleep(0.01)
    raise Failure('%s was not started' % path)


def start(cmd, cwd):
    print('$ ' + ' '.join(cmd))
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def test_refuse(ck, cyg, example, args):
    d = cyg.workdir
    # a pid that does not exist: the highest possible pid is never in use
    with open('/proc/sys/kernel/pid_max') as f:
        pid_max = int(f.read())
    cp = run([cyg.exe, 'record', '--attach', str(pid_max)])
    expect_error(ck, cp, 'no such process', 1)
    ck.check('no process %d' % pid_max in cp.err, 'names the missing pid: %r' % cp.err)
    cp = run([cyg.exe, 'record', '--attach', 'x'])
    expect_error(ck, cp, 'bad pid', 2)
    cp = run([cyg.exe, 'record', '--attach', '1', '--', example])
    expect_error(ck, cp, 'pid and program', 2)

    # uninstrumented
    p = start(['/bin/sleep', '30'], d)
    try:
        wait_exec(p, '/bin/sleep')
        cp = run([cyg.exe, 'record', '--attach', str(p.pid)])
        expect_error(ck, cp, 'uninstrumented', 1)
        ck.check('not built with -finstrument-functions' in cp.err,
                 'says the program is not instrumented: %r' % cp.err)
    finally:
        p.kill()
        p.wait()

    # already profiled by record
    pidfile = os.path.join(d, 'pid-rec')
    p = start([cyg.exe, 'record', '-q', '-o', os.path.join(d, 'rec.data'), '--',
               example, pidfile, '30', '200'], d)
    try:
        pid = wait_pid(pidfile, p)
        cp = run([cyg.exe, 'record', '--attach', str(pid)])
        expect_error(ck, cp, 'already profiled', 1)
        ck.check('already being profiled' in cp.err, 'says it is profiled: %r' % cp.err)
        open(pidfile + '.stop', 'w').close()  # longrun: done with it, stop
        ck.eq(p.wait(timeout=60), 0, 'the recorded program and its record end normally')
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()

    cp = run([cyg.exe, 'record', '--duration', '1', '--', example])
    expect_error(ck, cp, '--duration without --attach', 2)
    cp = run([cyg.exe, 'record', '--attach', '1', '--memory'])
    expect_error(ck, cp, '--attach with --memory', 2)


# ---- attaching to attachme ----------------------------------------------


# attachme runs until told to stop (the file COUNTFILE.stop), at the
# latest for this many seconds
ATTACHME_LIMIT = 60


def start_attachme(d, tag, threads=3):
    """attachme running until stop_attachme(): (process, pid, count file)."""
    pidfile = os.path.join(d, 'pid-' + tag)
    countfile = os.path.join(d, 'count-' + tag)
    print('$ attachme %s %s %s %d' % (pidfile, countfile, ATTACHME_LIMIT, threads))
    p = subprocess.Popen([EXAMPLE[0], pidfile, countfile, str(ATTACHME_LIMIT), str(threads)],
                         cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL,
                         universal_newlines=True)
    return p, wait_pid(pidfile, p), countfile


def stop_attachme(countfile):
    """Tell attachme to stop (it looks every 20 ms)."""
    open(countfile + '.stop', 'w').close()


def finish_attachme(ck, p, countfile):
    """Stop attachme: it exits 0 with its last line."""
    stop_attachme(countfile)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Failure('attachme did not end')
    ck.eq(p.returncode, 0, 'attachme exits normally after the detach (stderr %r)' % err)
    ck.check(out.startswith('attachme: done work='), 'attachme prints its summary: %r' % out)


def counts(countfile, past=None):
    """The program's own counter lines: [(mono_ns, work, late)]; with past, once
    the program has written a line at or after CLOCK_MONOTONIC past (it writes
    one every 20 ms while it runs: wait for it, up to a minute)."""
    deadline = time.monotonic() + 60
    while True:
        rows = []
        with open(countfile) as f:
            for line in f:
                v = line.split()
                if len(v) == 3:
                    rows.append(tuple(int(x) for x in v))
        if past is None or (rows and rows[-1][0] >= past) or time.monotonic() > deadline:
            return rows
        time.sleep(0.005)


def counter_at(rows, t, col=1):
    """The program's counter at CLOCK_MONOTONIC t, between two lines."""
    for (t0, *v0), (t1, *v1) in zip(rows, rows[1:]):
        if t0 <= t <= t1:
            a, b = v0[col - 1], v1[col - 1]
            return a + (b - a) * (t - t0) / max(t1 - t0, 1)
    raise Failure('no counter line around %d (lines from %d to %d)' %
                  (t, rows[0][0] if rows else 0, rows[-1][0] if rows else 0))


def attach_window(ck, cyg, cap):
    meta = cygtest.info_json(ck, cyg, cap)['meta']
    for k in ('attach_pid', 'attach_start', 'attach_end'):
        if k not in meta:
            raise Failure('the capture has no meta %s: %r' % (k, meta))
    return meta, int(meta['attach_start']), int(meta['attach_end'])


def within(ck, got, want, what, share=0.05):
    ck.check(want > 0 and abs(got - want) <= share * want,
             '%s: %d, the program counted %.0f (%.2f%% off, at most %g%%)' %
             (what, got, want, 100.0 * abs(got - want) / max(want, 1), share * 100))


def attach_bg(cyg, pid, cap, seconds):
    """record --attach in the background; returns once it says it attached."""
    cmd = [cyg.exe, 'record', '--attach', str(pid), '-o', cap]
    if seconds is not None:
        cmd += ['--duration', str(seconds)]
    print('$ ' + ' '.join(cmd))
    a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, universal_newlines=True)
    line = a.stderr.readline()
    if 'attached to process %d' % pid not in line:
        out, err = a.communicate(timeout=60)
        raise Failure('record --attach did not attach (exit %s): %r' % (a.returncode, line + err))
    return a


def end_bg(ck, a, what):
    try:
        out, err = a.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        a.kill()
        a.communicate()
        raise Failure('%s: record --attach did not end' % what)
    ck.eq(a.returncode, 0, '%s: record --attach exits 0 (stderr %r)' % (what, err))
    ck.check('detached from process' in err, '%s: says it detached: %r' % (what, err))
    return err


def use_fake_runtime(args):
    """cygprof (and what else this test starts) takes the stand-in runtime."""
    if not args.fake_runtime:
        raise Failure('--fake-runtime is needed')
    os.environ['CYGPROF_RUNTIME'] = os.path.abspath(args.fake_runtime)


def exe_base(pid, exe):
    """Where exe's first mapping starts in process pid (its load bias: the
    examples are PIE, or 0 for a fixed executable)."""
    with open('/proc/%d/maps' % pid) as f:
        for line in f:
            v = line.split()
            if len(v) >= 6 and v[2] == '00000000' and os.path.realpath(v[5]) == exe:
                return int(v[0].split('-')[0], 16)
    raise Failure('%s is not mapped in process %d' % (exe, pid))


def nm_addrs(exe):
    out = subprocess.run(['nm', exe], stdout=subprocess.PIPE, universal_newlines=True,
                         check=True).stdout
    addrs = {}
    for line in out.splitlines():
        v = line.split()
        if len(v) == 3 and v[1] in 'tT':
            addrs[v[2]] = int(v[0], 16)
    return addrs


def test_inject(ck, cyg, example, args):
    d = cyg.workdir
    use_fake_runtime(args)
    p, pid, countfile = start_attachme(d, 'inject')
    log = '/tmp/cygprof-fakert-%d.log' % pid
    try:
        base = exe_base(pid, os.path.realpath(example))
        tids = sorted(int(t) for t in os.listdir('/proc/%d/task' % pid))
        cap = os.path.join(d, 'inject.data')
        a = attach_bg(cyg, pid, cap, 2)
        # attached: a second attach finds the runtime attached (-EBUSY)
        cp = run([cyg.exe, 'record', '--attach', str(pid), '-o', os.path.join(d, 'x.data')])
        expect_error(ck, cp, 'attach while attached', 1)
        ck.check('already being profiled' in cp.err, 'says it is profiled: %r' % cp.err)
        end_bg(ck, a, 'first attach')
        meta, t0, t1 = attach_window(ck, cyg, cap)
        ck.eq(meta['attach_pid'], pid, 'meta attach_pid (a number)')
        ck.check(1.5e9 < t1 - t0 < 10e9, 'the attach lasted about 2 s: %.3f s' % ((t1 - t0) / 1e9))
        with open(log) as f:
            lines = [l.split() for l in f]
        print('runtime log: %r' % [' '.join(l)[:80] for l in lines])
        att = [l for l in lines if l[0] == 'attach_fd']
        ck.eq(len(att), 1, 'cygprof_attach_fd called once')
        if att:
            ck.check(int(att[0][1]) >= 64 << 20, 'it maps the collector\'s memfd: %r' % att[0])
        seeds = {int(l[1]): [int(x, 16) - base for x in l[3:]] for l in lines if l[0] == 'seed'}
        ck.eq(sorted(seeds), tids, 'one seed per thread')
        nm = nm_addrs(example)
        for tid, fns in seeds.items():
            want = 'main' if tid == pid else 'worker'
            ck.check(fns and fns[0] == nm[want],
                     'thread %d: the outermost frame is %s: %r' % (tid, want, fns))
            ck.check(set(fns) <= {nm[n] for n in ('main', 'worker', 'round_', 'work', 'tick')},
                     'thread %d: only open instrumented functions: %r' % (tid, fns))
        det = [l for l in lines if l[0] == 'detach']
        ck.eq(len(det), 1, 'cygprof_detach called once')
        if det:
            rows = counts(countfile, t1)
            work = counter_at(rows, t1) - counter_at(rows, t0)
            ticks = (t1 - t0) / 20e6
            # the stand-in counts every enter: work, round_ (1 in 200), tick
            within(ck, int(det[0][1]) - ticks, work * 201 / 200, 'calls the hooks saw')
        # attached again after the detach, without --duration: until SIGINT
        a = attach_bg(cyg, pid, os.path.join(d, 'again.data'), None)
        a.send_signal(signal.SIGINT)
        end_bg(ck, a, 'attach after a detach, ended by SIGINT')
        with open(log) as f:
            ck.eq(sum(1 for l in f if l.startswith('detach')), 2, 'detached twice')
        finish_attachme(ck, p, countfile)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if os.path.exists(log):
            os.unlink(log)

    # the process ends while attached: cygprof ends too, and says so
    p, pid, countfile = start_attachme(d, 'short')
    log = '/tmp/cygprof-fakert-%d.log' % pid
    try:
        cap = os.path.join(d, 'short.data')
        a = attach_bg(cyg, pid, cap, 60)
        finish_attachme(ck, p, countfile)
        try:
            out, err = a.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            a.kill()
            a.communicate()
            raise Failure('record --attach did not end with the process')
        ck.eq(a.returncode, 0, 'attached until the end: exit 0 (stderr %r)' % err)
        ck.check('attached until the end of process %d' % pid in err,
                 'says the process ended while attached: %r' % err)
        meta, t0, t1 = attach_window(ck, cyg, cap)
        ck.eq(meta.get('attach_exited'), '1', 'meta attach_exited')
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if os.path.exists(log):
            os.unlink(log)


def test_lib(ck, cyg, example, args):
    """uselib, not instrumented, calls its instrumented library."""
    d = cyg.workdir
    use_fake_runtime(args)
    pidfile = os.path.join(d, 'pid-lib')
    print('$ %s %s 60' % (example, pidfile))
    p = subprocess.Popen([example, pidfile, '60'], cwd=d, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         universal_newlines=True)
    pid = wait_pid(pidfile, p)
    log = '/tmp/cygprof-fakert-%d.log' % pid
    try:
        a = attach_bg(cyg, pid, os.path.join(d, 'lib.data'), 1)
        end_bg(ck, a, 'attach')
        with open(log) as f:
            det = [l.split() for l in f if l.startswith('detach')]
        ck.eq(len(det), 1, 'detached once')
        if det:
            enters, exits = int(det[0][1]), int(det[0][2])
            ck.check(enters > 1000, 'the library\'s calls went to the runtime: %d' % enters)
            ck.check(abs(enters - exits) <= 4, 'enters %d and exits %d pair' % (enters, exits))
        open(pidfile + '.stop', 'w').close()  # uselib: done with it, stop
        out, err = p.communicate(timeout=60)
        ck.eq(p.returncode, 0, 'uselib exits normally (stderr %r)' % err)
        ck.check(out.startswith('uselib: done'), 'uselib prints its summary: %r' % out)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if os.path.exists(log):
            os.unlink(log)


def functions_of(data):
    return {f['name']: f for f in data['functions']}


def test_run(ck, cyg, example, args):
    d = cyg.workdir
    p, pid, countfile = start_attachme(d, 'run')
    try:
        tids = sorted(int(t) for t in os.listdir('/proc/%d/task' % pid))
        cap = os.path.join(d, 'run.data')
        a = attach_bg(cyg, pid, cap, 2)
        open(countfile + '.late', 'w').close()  # a thread started while attached
        end_bg(ck, a, 'attach')
        finish_attachme(ck, p, countfile)
        meta, t0, t1 = attach_window(ck, cyg, cap)
        ck.eq(meta.get('attach_pid'), pid, 'meta attach_pid (a number)')
        rows = counts(countfile)
        data, _ = cyg.report_json(cap, ck)
        fns = functions_of(data)
        got = fns.get('work', {}).get('calls', 0)
        within(ck, got, counter_at(rows, t1) - counter_at(rows, t0), 'calls of work()')
        ck.check(fns.get('late_work', {}).get('calls', 0) > 0,
                 'the thread started while attached is recorded: %r' % fns.get('late_work'))
        seen = sorted(t['tid'] for t in data['threads'] if t['calls'] > 0)
        ck.check(set(tids) <= set(seen) and len(seen) == len(tids) + 1,
                 'every thread seen, and the late one: %r (threads at the attach %r)' %
                 (seen, tids))
        roots = sorted(n for n, f in fns.items() if f.get('spontaneous_calls'))
        ck.check(set(roots) <= {'main', 'worker', 'late_worker'},
                 'call paths start at main or a thread function (seeded): %r' % roots)
        arcs = {(x['caller'], x['callee']) for x in data['arcs']}
        for arc in (('main', 'tick'), ('worker', 'round_'), ('round_', 'work'),
                    ('late_worker', 'late_work')):
            ck.check(arc in arcs, 'arc %s -> %s' % arc)
        # the runtime's CPU samples and switches, attached too
        ck.check(data['cpu_sampler'] in ('perf', 'timer', 'perf+timer'),
                 'attached: CPU samples taken (%s)' % data['cpu_sampler'])
        ck.check(fns.get('work', {}).get('cpu_samples', 0) > 0,
                 'attached: work() has CPU samples: %r' % fns.get('work'))
        if data['cpu_sampler'] != 'timer':  # perf allowed here: switches tracked
            ck.check(fns.get('worker', {}).get('blocked_ns', 0) > 0,
                     'attached: the workers\' sleeps are blocked time: %r' % fns.get('worker'))
        # the runtime loaded by dlopen calibrates its own hooks, not the
        # program's libc's empty ones
        ov = cygtest.info_json(ck, cyg, cap).get('overhead') or {}
        ck.eq((ov.get('images'), ov.get('calls'), ov.get('rounds'), ov.get('mode')),
              (1, 2000, 11, 'plain'), 'attached: the calibration (images, calls, rounds, mode)')
        ck.check(ov.get('in_ns', 0) > 0 and ov.get('out_ns', 0) > 0,
                 'attached: o_in and o_out measured: %r' % ov)
        cp = run([cyg.exe, 'report', cap])
        ck.check(cp.returncode == 0 and 'no calibration' not in cp.out,
                 'attached: report does not say "no calibration" (%r)' %
                 [ln for ln in cp.out.splitlines() if 'calibration' in ln])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_twice(ck, cyg, example, args):
    d = cyg.workdir
    p, pid, countfile = start_attachme(d, 'twice')
    try:
        # attached until SIGINT, once the second attach is refused
        a = attach_bg(cyg, pid, os.path.join(d, 'one.data'), None)
        cp = run([cyg.exe, 'record', '--attach', str(pid), '-o', os.path.join(d, 'two.data')])
        expect_error(ck, cp, 'attach while attached', 1)
        ck.check('already being profiled' in cp.err, 'says it is profiled: %r' % cp.err)
        ck.check(not os.path.exists(os.path.join(d, 'two.data')), 'the refusal writes nothing')
        a.send_signal(signal.SIGINT)
        end_bg(ck, a, 'first attach')
        cp = run([cyg.exe, 'record', '--attach', str(pid), '-o', os.path.join(d, 'three.data'),
                  '--duration', '0.5'])
        ck.check(cp.returncode == 0 or (cp.returncode == 1 and len(cp.err.splitlines()) == 1),
                 'attaching again after the detach works or is refused in one line: %s %r' %
                 (cp.returncode, cp.err))
        finish_attachme(ck, p, countfile)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# ---- attaching to burst: exact counts -------------------------------------

BURST_CALLS = 5000
BURST_THREADS = 2


def start_burst(d, tag, threads=BURST_THREADS, prefix=()):
    """burst (tests/attach/burst.c) waiting for its rounds: (process, pid, pidfile)."""
    pidfile = os.path.join(d, 'burst-' + tag)
    cmd = list(prefix) + [EXAMPLE[0], pidfile, str(BURST_CALLS), str(threads)]
    print('$ ' + ' '.join(cmd))
    p = subprocess.Popen(cmd, cwd=d, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, universal_newlines=True)
    return p, wait_pid(pidfile, p), pidfile


def burst_go(pidfile, k, proc, wait=True):
    """Start round k; wait until burst says it is done."""
    open('%s.go%d' % (pidfile, k), 'w').close()
    if wait:
        burst_done(pidfile, k, proc)


def burst_done(pidfile, k, proc):
    end = time.monotonic() + 60
    while not os.path.exists('%s.done%d' % (pidfile, k)):
        if proc.poll() is not None:
            raise Failure('burst ended (%s) in round %d' % (proc.returncode, k))
        if time.monotonic() > end:
            raise Failure('burst did not finish round %d' % k)
        time.sleep(0.005)


def finish_burst(ck, p, pidfile, rounds):
    open(pidfile + '.stop', 'w').close()
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Failure('burst did not end')
    ck.eq(p.returncode, 0, 'burst exits normally (stderr %r)' % err)
    ck.eq(out.strip(), 'burst: done rounds=%d' % rounds, 'burst ran every round')


def check_burst_capture(ck, cyg, cap, rounds, threads=BURST_THREADS):
    """Exactly the calls of `rounds` rounds, on their call paths."""
    data, _ = cyg.report_json(cap, ck)
    fns = functions_of(data)
    ck.eq(fns.get('unit', {}).get('calls', 0), rounds * BURST_CALLS * (threads + 1),
          'calls of unit(): every call of the attached rounds, no more')
    ck.eq(fns.get('burst', {}).get('calls', 0), rounds * (threads + 1), 'calls of burst()')
    arcs = {(x['caller'], x['callee']) for x in data['arcs']}
    for arc in (('main', 'burst'), ('worker', 'burst'), ('burst', 'unit')):
        ck.check(arc in arcs, 'arc %s -> %s: %r' % (arc + (sorted(arcs),)))
    return data


def in_ring_wait(pid):
    """A thread of pid waits in a syscall the runtime's full-ring wait makes
    (sched_yield or futex: /proc/PID/task/TID/syscall)."""
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/syscall' % (pid, tid)) as f:
                nr = f.read().split()[0]
        except (OSError, IndexError):
            continue
        if nr in ('24', '202'):
            return True
    return False


def test_kill(ck, cyg, example, args):
    """An attacher SIGKILLed: the program runs on, and the next attach takes
    it over and records every call exactly."""
    d = cyg.workdir
    full = args.test == 'attach-kill-full'
    p, pid, pf = start_burst(d, 'kill')
    try:
        cmd = [cyg.exe, 'record', '--attach', str(pid), '-o', os.path.join(d, 'a.data')]
        if full:
            cmd += ['--timeline', '--ring-size', '128']
        print('$ ' + ' '.join(cmd))
        a = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, universal_newlines=True)
        line = a.stderr.readline()
        if 'attached to process %d' % pid not in line:
            a.kill()
            raise Failure('record --attach did not attach: %r' % line)
        k = 1
        if full:
            # the collector stopped: the rings fill and their writers wait
            # (lossless); then it dies, and they must run on
            a.send_signal(signal.SIGSTOP)
            burst_go(pf, k, p, wait=False)
            end = time.monotonic() + 30
            while not in_ring_wait(pid):
                if os.path.exists('%s.done%d' % (pf, k)) or time.monotonic() > end:
                    a.kill()
                    raise Failure('no thread of burst waits for the stopped collector')
                time.sleep(0.005)
            ck.check(not os.path.exists('%s.done%d' % (pf, k)),
                     'burst waits while its collector is stopped')
        else:
            burst_go(pf, k, p)
        a.kill()
        a.wait()
        print('attacher killed')
        if full:
            burst_done(pf, k, p)
            ck.check(True, 'the writers waiting on a full ring ran on once the collector died')
        k += 1
        burst_go(pf, k, p)  # with its attacher dead, burst runs on
        ck.check(p.poll() is None, 'burst runs on after its attacher died')
        cap = os.path.join(d, 'b.data')
        cmd = [cyg.exe, 'record', '--attach', str(pid), '-o', cap]
        print('$ ' + ' '.join(cmd))
        b = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, universal_newlines=True)
        line = b.stderr.readline()
        if 'attached to process %d' % pid not in line:
            out, err = b.communicate(timeout=60)
            raise Failure('the attach after a killed attacher failed (exit %s): %r' %
                          (b.returncode, line + err))
        ck.check('taken over from cygprof process %d, which died' % a.pid in line,
                 'says it took over from the dead attacher: %r' % line)
        k += 1
        burst_go(pf, k, p)
        k += 1
        burst_go(pf, k, p)
        b.send_signal(signal.SIGINT)
        end_bg(ck, b, 'attach after the killed one')
        check_burst_capture(ck, cyg, cap, 2)
        # detached properly this time: attached again as usual
        cap = os.path.join(d, 'c.data')
        c = attach_bg(cyg, pid, cap, None)
        k += 1
        burst_go(pf, k, p)
        c.send_signal(signal.SIGINT)
        end_bg(ck, c, 'third attach')
        check_burst_capture(ck, cyg, cap, 1)
        finish_burst(ck, p, pf, k)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


# attach-kill-during: kills spread over an attach, on this many programs at
# once (attaches to one program cannot overlap: ptrace is exclusive)
DURING_KILLS = 32
DURING_TERMS = 8
DURING_TARGETS = 4


def temporaries(d, name):
    """The temporary files of capture `name` in d (.NAME.PID-START.XXXXXX)."""
    return sorted(f for f in os.listdir(d) if f.startswith('.%s.' % name))


def tracer_of(pid):
    """The TracerPid of process pid (0: none, or no such process)."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('TracerPid:'):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def wait_traced(pid, a, deadline):
    """Wait until attacher a traces pid (its threads stopped: the injection
    begins).  False when a said it attached (on its standard error, a
    non-blocking pipe) or ended first, or at the deadline."""
    while time.monotonic() < deadline and a.poll() is None:
        if tracer_of(pid) == a.pid:
            return True
        try:
            if os.read(a.stderr.fileno(), 4096):
                return False
        except BlockingIOError:
            pass
    return False


def attach_duration(cyg, pid, d):
    """(D, W): seconds from starting record --attach to its "attached" line
    (the whole attach: start, refusals, capture, injection), and how long it
    traced the program (its threads stopped, the calls made: TracerPid
    names it, from first seen to last); then detached."""
    import threading
    cmd = [cyg.exe, 'record', '--attach', str(pid), '-o', os.path.join(d, 'measure.data'), '-f']
    t0 = time.monotonic()
    a = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, universal_newlines=True)
    seen = []
    done = []

    def poll():
        while not done:
            if tracer_of(pid) == a.pid:
                seen.append(time.monotonic())
    th = threading.Thread(target=poll)
    th.start()
    line = a.stderr.readline()
    took = time.monotonic() - t0
    done.append(1)
    th.join()
    a.send_signal(signal.SIGINT)
    a.communicate(timeout=120)
    if 'attached to process %d' % pid not in line:
        raise Failure('record --attach did not attach: %r' % line)
    return took, (seen[-1] - seen[0]) if seen else 0.0


def during_worker(cyg, d, pid, pf, proc, moments, sig, out):
    """Signal an attacher of pid at each of moments: (seconds, after its
    start or, with traced, after it began to trace pid); after each, burst
    runs a round.  Appends one dict per signal."""
    for k, (at, traced) in enumerate(moments, 1):
        cmd = [cyg.exe, 'record', '--attach', str(pid), '-o', os.path.join(d, 'k.data'), '-f']
        a = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
        os.set_blocking(a.stderr.fileno(), False)
        # the program busy meanwhile: a round runs while it is attached
        open('%s.go%d' % (pf, out['round'] + 1), 'w').close()
        missed = traced and not wait_traced(pid, a, time.monotonic() + 60)
        if not missed:
            time.sleep(at)
        a.send_signal(sig)
        if sig == signal.SIGTERM:
            # SIGTERM is handled: it ends the attach (or cygprof before it)
            try:
                a.wait(timeout=120)
            except subprocess.TimeoutExpired:
                a.kill()
        a.wait()
        a.stderr.close()
        out['round'] += 1
        # its own temporary file, if it left one (the name has its pid)
        mine = [f for f in temporaries(d, 'k.data') if '.%d-' % a.pid in f]
        row = {'at': at, 'sig': sig, 'alive': proc.poll() is None, 'left': mine,
               'missed': missed}
        try:
            burst_done(pf, out['round'], proc)
            row['round'] = True
        except Failure as e:
            row['round'] = str(e)
        out['rows'].append(row)
        if not row['alive']:
            return


def test_kill_during(ck, cyg, example, args):
    """record --attach SIGKILLed (and SIGTERMed) at moments spread over its
    attach: the program never dies and runs its rounds; attached again, its
    capture holds exactly the calls of its rounds, and no temporary file of
    the killed attachers stays behind."""
    d = cyg.workdir
    targets = []
    try:
        for i in range(DURING_TARGETS):
            td = os.path.join(d, 't%d' % i)
            os.mkdir(td)
            p, pid, pf = start_burst(td, 'during')
            targets.append({'dir': td, 'proc': p, 'pid': pid, 'pf': pf, 'round': 0,
                            'rows': []})
        t0 = targets[0]
        m = sorted(attach_duration(cyg, t0['pid'], t0['dir']) for _ in range(3))
        dur, traced = m[1]
        if traced <= 0:
            traced = dur / 4  # never seen traced: a quarter of the attach
        print('attach duration: %.1f ms, of which the program was traced %.1f ms '
              '(of %s)' % (dur * 1e3, traced * 1e3,
                           ['%.1f/%.1f' % (x * 1e3, y * 1e3) for x, y in m]))
        # SIGKILL i at i/32 of the time the program is traced (the stop, the
        # injected calls, the hooks: when a dying attacher can harm it; its
        # capture's temporary file exists all along), SIGTERM j at
        # (j + 0.5)/8 of the whole attach; dealt round-robin over the
        # programs, each program's in turn
        plan = [[] for _ in targets]
        for i in range(DURING_KILLS):
            plan[i % len(targets)].append(((traced * i / DURING_KILLS, True), signal.SIGKILL))
        for j in range(DURING_TERMS):
            plan[j % len(targets)].append(((dur * (j + 0.5) / DURING_TERMS, False),
                                           signal.SIGTERM))
        # one attacher at a time (the moments are measured from when the
        # program is seen traced: no other thread of ours competes), the
        # programs in turn
        for k in range(max(len(x) for x in plan)):
            for t, moments in zip(targets, plan):
                if k < len(moments) and t['proc'].poll() is None:
                    at, sig = moments[k]
                    during_worker(cyg, t['dir'], t['pid'], t['pf'], t['proc'], [at], sig, t)
        kills = sum(len(t['rows']) for t in targets)
        deaths = sum(t['proc'].poll() is not None for t in targets)
        print('signals sent: %d (%d SIGKILL, %d SIGTERM); programs dead: %d; SIGKILLs '
              'after the program was traced: %d' %
              (kills, DURING_KILLS, DURING_TERMS, deaths,
               sum(r['sig'] == signal.SIGKILL and not r['missed']
                   for t in targets for r in t['rows'])))
        ck.eq(kills, DURING_KILLS + DURING_TERMS, 'every attacher was signalled')
        for n, t in enumerate(targets):
            for r in t['rows']:
                ck.check(r['alive'], 'program %d lives after an attacher signalled at %.1f ms '
                         '(exit %s)' % (n, r['at'] * 1e3, t['proc'].returncode))
                ck.check(r['round'] is True, 'program %d runs its round after the signal at '
                         '%.1f ms: %s' % (n, r['at'] * 1e3, r['round']))
                if r['sig'] == signal.SIGTERM:
                    ck.eq(r['left'], [], 'a SIGTERM at %.1f ms leaves no temporary file' %
                          (r['at'] * 1e3))
        left = sum(bool(r['left']) for t in targets for r in t['rows'])
        for n, t in enumerate(targets):
            if t['proc'].poll() is not None:
                continue
            # attached again (taking over from a dead attacher or not),
            # by a run writing the same capture: exact, and it cleans up
            cap = os.path.join(t['dir'], 'k.data')
            cmd = [cyg.exe, 'record', '--attach', str(t['pid']), '-o', cap, '-f']
            print('$ ' + ' '.join(cmd))
            b = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL, universal_newlines=True)
            line = b.stderr.readline()
            if 'attached to process %d' % t['pid'] not in line:
                out, err = b.communicate(timeout=60)
                raise Failure('program %d: the attach after the killed ones failed (exit %s): '
                              '%r' % (n, b.returncode, line + err))
            for _ in range(2):
                t['round'] += 1
                burst_go(t['pf'], t['round'], t['proc'])
            b.send_signal(signal.SIGINT)
            end_bg(ck, b, 'program %d attached again' % n)
            check_burst_capture(ck, cyg, cap, 2)
            ck.eq(temporaries(t['dir'], 'k.data'), [],
                  'program %d: no temporary file after the next run' % n)
            finish_burst(ck, t['proc'], t['pf'], t['round'])
        print('SIGKILLs that left a temporary file: %d (each removed by the next run)' % left)
    finally:
        for t in targets:
            if t['proc'].poll() is None:
                t['proc'].kill()
                t['proc'].wait()


# attach-kill-anywhere: kills spread over an attacher's whole run
ANYWHERE_KILLS = 20
ANYWHERE_DURATION = 1.5


def rounds_bg(t):
    """Run burst's rounds one after the other (20 ms apart) until t['stop'];
    t['done'] lists (round, CLOCK_MONOTONIC when its done file was seen)."""
    while not t['stop'] and t['proc'].poll() is None:
        k = t['round'] + 1
        open('%s.go%d' % (t['pf'], k), 'w').close()
        try:
            burst_done(t['pf'], k, t['proc'])
        except Failure:
            return
        t['round'] = k
        t['done'].append((k, time.monotonic()))
        time.sleep(0.02)


def test_kill_anywhere(ck, cyg, example, args):
    """record --attach --duration SIGKILLed at 20 moments spread over its
    whole run (the first second too): the program never dies and runs its
    rounds; a capture the attacher published opens, with whole rounds but
    for the ones in flight at its last checkpoint and no more than the
    program ran; attached again with the same capture name: exactly the
    calls of its rounds, and no temporary file left."""
    import threading
    d = cyg.workdir
    targets = []
    try:
        for i in range(DURING_TARGETS):
            td = os.path.join(d, 't%d' % i)
            os.mkdir(td)
            p, pid, pf = start_burst(td, 'anywhere')
            targets.append({'dir': td, 'proc': p, 'pid': pid, 'pf': pf, 'round': 0,
                            'done': [], 'stop': False, 'rows': []})
        # the whole run of an attacher left alone
        t0 = targets[0]
        cap = os.path.join(t0['dir'], 'whole.data')
        start = time.monotonic()
        cp = run([cyg.exe, 'record', '-q', '--attach', str(t0['pid']), '-o', cap,
                  '--duration', str(ANYWHERE_DURATION)])
        whole = time.monotonic() - start
        ck.eq(cp.returncode, 0, 'an attacher left alone ends normally (%r)' % cp.err)
        print('whole run of record --attach --duration %s: %.0f ms' %
              (ANYWHERE_DURATION, whole * 1e3))
        moments = [whole * i / ANYWHERE_KILLS for i in range(ANYWHERE_KILLS)]
        runners = [threading.Thread(target=rounds_bg, args=(t,)) for t in targets]
        for r in runners:
            r.start()

        def kill_all(t, mine):
            for at in mine:
                cap = os.path.join(t['dir'], 'any.data')
                if os.path.exists(cap):
                    os.unlink(cap)
                r0 = t['round']
                a = subprocess.Popen([cyg.exe, 'record', '--attach', str(t['pid']), '-o', cap,
                                      '--duration', str(ANYWHERE_DURATION), '-f'],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     stdin=subprocess.DEVNULL)
                time.sleep(at)
                a.kill()
                a.wait()
                row = {'at': at, 'alive': t['proc'].poll() is None, 'ran': t['round'] - r0 + 1,
                       'cap': None}
                if os.path.exists(cap):
                    keep = os.path.join(t['dir'], 'any-%d.data' % len(t['rows']))
                    os.rename(cap, keep)
                    row['cap'] = keep
                t['rows'].append(row)
                if not row['alive']:
                    return
        killers = [threading.Thread(target=kill_all, args=(t, moments[n::len(targets)]))
                   for n, t in enumerate(targets)]
        for k in killers:
            k.start()
        for k in killers:
            k.join()
        for t in targets:
            t['stop'] = True
        for r in runners:
            r.join()
        rows = [r for t in targets for r in t['rows']]
        ck.eq(len(rows), ANYWHERE_KILLS, 'every attacher was killed')
        print('kills: %d; programs dead: %d; captures published: %d' %
              (len(rows), sum(t['proc'].poll() is not None for t in targets),
               sum(r['cap'] is not None for r in rows)))
        calls = BURST_CALLS
        for n, t in enumerate(targets):
            for r in t['rows']:
                what = 'program %d, attacher killed at %.0f ms' % (n, r['at'] * 1e3)
                ck.check(r['alive'], '%s: the program lives (exit %s)' %
                         (what, t['proc'].returncode))
                if not r['cap']:
                    continue
                cp = run([cyg.exe, 'report', '--format=json', r['cap']])
                if not ck.eq(cp.returncode, 0, '%s: its capture opens (%s)' %
                             (what, cp.err.strip()[:200])):
                    continue
                fns = functions_of(json.loads(cp.out))
                nb = fns.get('burst', {}).get('calls', 0)
                nu = fns.get('unit', {}).get('calls', 0)
                # a call counts once it returned: the burst() calls in
                # flight at the checkpoint (one a thread at most) are not
                # counted yet, their unit() calls so far are; and the
                # checkpoint copies the running threads' nodes one after
                # the other (a round may end in between)
                ck.check(calls * (nb - BURST_THREADS - 1) < nu < calls * (nb + BURST_THREADS + 1),
                         '%s: unit() %d calls for %d calls of burst()' % (what, nu, nb))
                ck.check(nb <= (BURST_THREADS + 1) * r['ran'],
                         '%s: %d calls of burst(), the program ran %d rounds meanwhile' %
                         (what, nb, r['ran']))
        for n, t in enumerate(targets):
            if t['proc'].poll() is not None:
                continue
            cap = os.path.join(t['dir'], 'any.data')
            b = attach_bg(cyg, t['pid'], cap, None)
            for _ in range(2):
                t['round'] += 1
                burst_go(t['pf'], t['round'], t['proc'])
            b.send_signal(signal.SIGINT)
            end_bg(ck, b, 'program %d attached again' % n)
            check_burst_capture(ck, cyg, cap, 2)
            ck.eq(temporaries(t['dir'], 'any.data'), [],
                  'program %d: no temporary file after the next run' % n)
            finish_burst(ck, t['proc'], t['pf'], t['round'])
    finally:
        for t in targets:
            t['stop'] = True
            if t['proc'].poll() is None:
                t['proc'].kill()
                t['proc'].wait()


def test_user(ck, cyg, example, args):
    """Root attaches to a process of another user (nobody) and records its
    calls exactly; nobody cannot attach to root's process (one line)."""
    import pwd
    import shutil
    if os.geteuid() != 0:
        raise Skip('needs root (attaches to a process of another user)')
    if not shutil.which('setpriv'):
        raise Skip('needs setpriv (util-linux) to run a program as nobody')
    try:
        nobody = pwd.getpwnam('nobody')
    except KeyError:
        raise Skip('no user nobody')
    as_nobody = ['setpriv', '--reuid=%d' % nobody.pw_uid, '--regid=%d' % nobody.pw_gid,
                 '--clear-groups']
    for path in (EXAMPLE[0], cyg.exe):
        if subprocess.call(as_nobody + ['test', '-x', path]) != 0:
            raise Skip('nobody cannot run %s (a directory above it is private)' % path)
    d = os.path.join(cyg.workdir, 'shared')
    os.chmod(cyg.workdir, 0o755)
    os.mkdir(d)
    os.chmod(d, 0o1777)

    p, pid, pf = start_burst(d, 'nobody', prefix=as_nobody)
    try:
        with open('/proc/%d/status' % pid) as f:
            uid = [line.split()[1] for line in f if line.startswith('Uid:')][0]
        ck.eq(uid, str(nobody.pw_uid), 'the program runs as nobody')
        cap = os.path.join(cyg.workdir, 'root.data')
        a = attach_bg(cyg, pid, cap, None)
        burst_go(pf, 1, p)
        burst_go(pf, 2, p)
        a.send_signal(signal.SIGINT)
        end_bg(ck, a, 'root attached to nobody\'s process')
        check_burst_capture(ck, cyg, cap, 2)
        with open('/proc/%d/maps' % pid) as f:
            maps = f.read()
        ck.check('/proc/self/fd/' not in maps and 'libcygprof-cyg.so' in maps,
                 'the runtime is mapped by its own path')
        # attached again (the runtime detached): the same way
        cap = os.path.join(cyg.workdir, 'root2.data')
        a = attach_bg(cyg, pid, cap, None)
        burst_go(pf, 3, p)
        a.send_signal(signal.SIGINT)
        end_bg(ck, a, 'attached again')
        check_burst_capture(ck, cyg, cap, 1)
        finish_burst(ck, p, pf, 3)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()

    # the other way round: nobody may not attach to root's process
    p, pid, pf = start_burst(d, 'root')
    try:
        cap = os.path.join(d, 'nobody.data')
        cp = run(as_nobody + [cyg.exe, 'record', '--attach', str(pid), '-o', cap])
        expect_error(ck, cp, 'nobody attaching to root\'s process', 1)
        ck.check('belongs to another user' in cp.err, 'says why: %r' % cp.err)
        ck.check(not os.path.exists(cap), 'the refusal writes nothing')
        burst_go(pf, 1, p)
        finish_burst(ck, p, pf, 1)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_top(ck, cyg, example, args):
    """cygprof top --attach: the snapshot of the window is the capture's, within 5%
    of the program's own counter, and the program runs on to exit 0."""
    d = cyg.workdir
    p, pid, countfile = start_attachme(d, 'top')
    try:
        cap = os.path.join(d, 'top.data')
        cp = run([cyg.exe, 'top', '--attach', str(pid), '--duration', '2', '--once',
                  '--format=json', '-n', '0', '-o', cap])
        ck.eq(cp.returncode, 0, 'top --attach exits 0 after the detach (stderr %r)' % cp.err)
        lines = cp.out.strip().splitlines()
        if not lines:
            raise Failure('top --attach printed nothing (stderr %r)' % cp.err)
        snap = json.loads(lines[-1])
        ck.eq(snap.get('attached'), pid, 'the snapshot names the process attached')
        ck.eq(snap.get('final'), True, 'the last snapshot is final')
        rows = {f['name']: f for f in snap['functions']}
        data, _ = cyg.report_json(cap, ck)
        fns = functions_of(data)
        for name in ('work', 'round_', 'tick'):
            ck.eq(rows.get(name, {}).get('calls'), fns.get(name, {}).get('calls'),
                  '%s: calls in top as in the report of its capture' % name)
        _, t0, t1 = attach_window(ck, cyg, cap)
        within(ck, rows.get('work', {}).get('calls', 0),
               counter_at(counts(countfile, t1), t1) - counter_at(counts(countfile), t0),
               'top: calls of work()')
        cp = run([cyg.exe, 'top', '--attach', str(pid), '--duration', '0.5', '--once'])
        ck.eq(cp.returncode, 0, 'top --attach as text exits 0 (stderr %r)' % cp.err)
        ck.check(cp.out.startswith('cygprof top [detached]: ') and '[ended]' not in cp.out
                 and 'running)' not in cp.out.splitlines()[0],
                 'the text header says detached, not ended: %r' % cp.out[:200])
        cp = run([cyg.exe, 'top', '--attach', str(pid), '--memory', '--once'])
        expect_error(ck, cp, 'top --attach --memory', 2)
        cp = run([cyg.exe, 'top', '--duration', '1', '--once', '--', example])
        expect_error(ck, cp, 'top --duration without --attach', 2)
        finish_attachme(ck, p, countfile)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def test_send(ck, cyg, example, args):
    """record --attach --send: the window streamed to cygprof receive over
    loopback, nothing written where record runs, the counts within 5% of the
    program's own counter; a refused attach connects to nobody."""
    d = cyg.workdir
    tok = os.path.join(d, 'token')
    with open(tok, 'wb') as f:
        f.write(b'0123456789abcdef-attach\n')
    os.chmod(tok, 0o600)
    out = os.path.join(d, 'sent.data')
    rp = subprocess.Popen([cyg.exe, 'receive', '--listen', '127.0.0.1:0', '--token-file', tok,
                           '-o', out], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          universal_newlines=True)
    p = None
    try:
        line = rp.stderr.readline()
        if not line.startswith('receive: listening on port '):
            raise Failure('receive did not listen: %r' % line)
        to = '127.0.0.1:' + line.split()[-1]
        p, pid, countfile = start_attachme(d, 'send')
        cwd = os.path.join(d, 'sender')
        os.mkdir(cwd)
        cp = subprocess.run([cyg.exe, 'record', '--attach', str(pid), '--duration', '2',
                             '--send', to, '--token-file', tok], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, timeout=120)
        ck.eq(cp.returncode, 0, 'record --attach --send exits 0 (stderr %r)' % cp.stderr)
        ck.check('sent to ' + to in cp.stderr, 'says where it sent: %r' % cp.stderr)
        ck.eq(os.listdir(cwd), [], 'nothing written where record runs')
        err = rp.stderr.read()
        ck.eq(rp.wait(timeout=120), 0, 'receive exits 0 (%r)' % err)
        meta, t0, t1 = attach_window(ck, cyg, out)
        ck.eq(meta.get('attach_pid'), pid, 'the received capture names the process')
        data, _ = cyg.report_json(out, ck)
        within(ck, functions_of(data).get('work', {}).get('calls', 0),
               counter_at(counts(countfile, t1), t1) - counter_at(counts(countfile), t0),
               'received calls of work()')
        cp = run([cyg.exe, 'record', '--attach', str(pid), '--send', '127.0.0.1:1',
                  '--token-file', tok, '-o', os.path.join(d, 'x.data')])
        expect_error(ck, cp, '--send with -o', 2)
        finish_attachme(ck, p, countfile)
    finally:
        if rp.poll() is None:
            rp.kill()
            rp.wait()
        if p is not None and p.poll() is None:
            p.kill()
            p.wait()


TESTS = {'attach-refuse': test_refuse, 'attach-inject': test_inject, 'attach-lib': test_lib,
         'attach-run': test_run, 'attach-twice': test_twice, 'attach-top': test_top,
         'attach-send': test_send, 'attach-kill': test_kill, 'attach-kill-full': test_kill,
         'attach-kill-during': test_kill_during, 'attach-kill-anywhere': test_kill_anywhere,
         'attach-user': test_user}
EXAMPLE = []


def extra(ap):
    ap.add_argument('--fake-runtime')
    ap.add_argument('--plain')


def call(fn, ck, cyg, example, args):
    EXAMPLE[:] = [example]
    if fn is test_refuse and args.plain:
        example = os.path.abspath(args.plain)
    try:
        fn(ck, cyg, example, args)
    except Skip as e:
        print('SKIP %s: %s' % (args.test, e))
        sys.exit(cygtest.SKIP)


def main():
    return cygtest.driver_main(TESTS, 'attach', __doc__, extra=extra, call=call)


if __name__ == '__main__':
    sys.exit(main())
