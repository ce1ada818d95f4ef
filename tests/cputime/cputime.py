#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the runtime's CPU-time samples and off-CPU time
(record --cpu-freq, on by default; issue 30).

Usage:
  cputime.py --cygprof CYGPROF --example PROG --test NAME [--skip REASON] [-v] [--keep]

PROG is the program of the test (tests/cputime/cpu-*.c, built with
-finstrument-functions).  The figures are read through `cygprof report
--format=json` (per function: cpu_samples, overhead_samples, wait_ns,
blocked_ns; cpu_sampler, cpu_period_ns) and `cygprof info --format=json`
(cpu: the sampler and, per thread, what it took).  Every bound below is
what the program implies; a sample count is checked against binomial
bounds of 5 standard deviations.  Where this user may not open perf
events (kernel.perf_event_paranoid 3, seccomp), the samples come from the
timer (the tests that need only samples still run) and no context switch
is tracked: the tests of time off the CPU are skipped (exit 77), saying so.

Tests:
  cputime-ratio     cpu-ratio: hot() spins ten times the work of the 1000
                    calls of cold() it makes: samples in hot and cold in
                    the ratio 10:1 within 5 sigma, calls exact (hot 1, cold
                    1000), next to no overhead samples, as many samples as
                    the program's CPU time has periods (within a third),
                    info's thread figures the report's sums
  cputime-overhead  cpu-ratio fib: 21891 tiny calls a round: fib has
                    overhead samples (a fifth of its samples at least: its
                    body is a few instructions, the hooks are not), and
                    every sample of the thread is on a node
  cputime-wait      cpu-wait: nothing() only yields the CPU to a hog pinned
                    on the same CPU: most of its wall time is waiting for a
                    CPU, next to none is CPU samples; sleeper() (nanosleep),
                    poller() (poll) and reader() (read on a pipe) are
                    blocked for most of their wall time and wait little;
                    the default times leave nothing's waiting out of its
                    self time (--raw-times has it), report lists it off
                    the CPU and --tree has a WAITING column
  cputime-idle      cpu-idle: two threads blocked for the whole run
                    (pthread_cond_wait, poll) when main calls exit(): their
                    time is blocked, not work; main's work has the samples
  cputime-restart   cpu-restart: epoll_wait, nanosleep, poll, select, read on
                    a pipe, sigwait, its own SIGUSR1 handler and its own
                    handler and mask for the samples' signal behave as
                    without cygprof while samples fire (the program checks
                    itself: exit 0); busy() has the samples
  cputime-fork      cpu-fork: a forked child and the image it execs are
                    sampled, and the parent after the fork too; the child
                    has one perf descriptor, its own sampler's (the
                    parent's two threads' are closed), and none with
                    --no-cpu; a child forked by the raw system call (no
                    atfork handler) runs its instrumented calls and exits 0
  cputime-timer     CYGPROF_CPU_SAMPLER=timer forces the POSIX CPU-time
                    timer: samples still arrive, at most one a period of the
                    thread's CPU time, the method "timer" in the report and
                    info
  cputime-sampled   --time=sampled: samples, no off-CPU time (frames carry
                    no time): switches not tracked; hot's time is its
                    samples times the period (plus glibc's empty hooks per
                    call)
  cputime-sampled-fib
                    cpu-ratio fib 300 recorded --time=sampled --sample (no
                    frame pointers): fib holds at least 75% of the time,
                    the flat profile and the tree show times
  cputime-off       --no-cpu and --cpu-freq=0: no sampler, no figures, no
                    samples in the summary line; bad --cpu-freq values are
                    usage errors
"""

import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run, describe_status, info_json  # noqa: E402

SUMMARY = re.compile(r'^cygprof: .* (\d+) CPU samples, ')
SKIP = 77


class Skip(Exception):
    pass


def need_switches(ck, cyg, cap):
    """Skip the test when perf events are not allowed here: the sampler
    fell back to the timer.  Where perf sampled, the switches must have
    been tracked (the test fails otherwise)."""
    info = info_json(ck, cyg, cap)
    if info['cpu']['sampler'] == 'timer':
        raise Skip('perf events are not allowed to this user: no context switch tracked')
    ck.eq(info['cpu']['switches'], True, 'the context switches were tracked')


def record(ck, cyg, prog, args, opts=(), env=None, name='cap.data'):
    cap = os.path.join(cyg.workdir, name)
    cmd = [cyg.exe, 'record', '-o', cap] + list(opts) + ['--', prog] + list(args)
    if env:
        old = dict(os.environ)
        os.environ.update(env)
    try:
        cp = run(cmd, cwd=cyg.workdir)
    finally:
        if env:
            os.environ.clear()
            os.environ.update(old)
    if cp.returncode != 0:
        raise Failure('record %s: %s (%s)' % (' '.join(args), describe_status(cp.returncode),
                                              cp.err.strip()[:300]))
    return cap, cp


def report(ck, cyg, cap, raw=True):
    data, _ = cyg.report_json(cap, ck, raw=raw)
    return data, {f['name']: f for f in data['functions']}


def summary_samples(ck, cp):
    lines = [ln for ln in cp.err.splitlines() if ln.startswith('cygprof:')]
    m = SUMMARY.match(lines[-1]) if lines else None
    ck.check(m is not None, 'the summary line counts the CPU samples (%r)' % lines)
    return int(m.group(1)) if m else -1


def binomial_ok(ck, k, n, p, what):
    """k of n in a part of probability p: within 5 standard deviations."""
    sd = math.sqrt(n * p * (1 - p))
    return ck.check(abs(k - n * p) <= 5 * sd + 1,
                    '%s: %d of %d samples, expected %.1f +- %.1f (5 sigma)' %
                    (what, k, n, n * p, 5 * sd + 1))


def cpu_threads(info):
    return {t['tid']: t for t in info['cpu']['threads']}


def test_ratio(ck, cyg, prog, args):
    cap, cp = record(ck, cyg, prog, ['400000', '1000'])
    data, fns = report(ck, cyg, cap)
    ck.eq(fns.get('hot', {}).get('calls'), 1, 'calls of hot')
    ck.eq(fns.get('cold', {}).get('calls'), 1000, 'calls of cold')
    ck.check(data['cpu_sampler'] in ('perf', 'timer'), 'cpu_sampler: %r' % data['cpu_sampler'])
    ck.eq(data['cpu_period_ns'], 1000000, 'cpu_period_ns (1000 Hz by default)')
    hot, cold = fns['hot']['cpu_samples'], fns['cold']['cpu_samples']
    n = hot + cold
    ck.check(n >= 100, 'hot and cold have samples: %d' % n)
    binomial_ok(ck, cold, n, 1 / 11, 'cold (a tenth of hot\'s work)')
    ov = sum(f['overhead_samples'] for f in data['functions'])
    ck.check(ov <= max(3, n // 50), 'next to no overhead samples in long calls: %d' % ov)
    info = info_json(ck, cyg, cap)
    ths = info['cpu']['threads']
    ck.eq(len(ths), 1, 'info: one sampled thread')
    if ths:
        t = ths[0]
        ck.eq(t['method'], data['cpu_sampler'], 'info: the thread\'s method')
        placed = sum(f['cpu_samples'] + f['overhead_samples'] for f in data['functions'])
        ck.check(0 <= t['samples'] - t['unplaced_samples'] - placed <= 3,
                 'info: the thread\'s samples (%d, %d unplaced) are the functions\' (%d) and '
                 'a few at its root' % (t['samples'], t['unplaced_samples'], placed))
        ck.eq(t['overhead_samples'], ov, 'info: overhead samples are the functions\'')
        ck.eq(summary_samples(ck, cp), t['samples'], 'the summary line\'s samples')
        if t['method'] == 'perf' and t['cpu_ns']:
            want = t['cpu_ns'] / 1e6
            ck.check(abs(t['samples'] - want) <= want / 3 + 5,
                     'one sample per ms of CPU time: %d samples for %.0f ms' %
                     (t['samples'], want))
        if t['method'] == 'perf':
            ck.check(t['switches'] > 0, 'info: switch records were read (%d)' % t['switches'])


def test_overhead(ck, cyg, prog, args):
    cap, _ = record(ck, cyg, prog, ['fib', '300'])
    data, fns = report(ck, cyg, cap)
    fib = fns.get('fib', {})
    ck.eq(fib.get('calls'), 21891 * 300, 'calls of fib')
    s, o = fib.get('cpu_samples', 0), fib.get('overhead_samples', 0)
    ck.check(s + o >= 50, 'fib has samples: %d + %d overhead' % (s, o))
    ck.check(o * 5 >= s + o, 'a fifth of them at least in the hooks: %d of %d' % (o, s + o))
    info = info_json(ck, cyg, cap)
    t = info['cpu']['threads'][0]
    ck.eq(t['unplaced_samples'], 0, 'every sample on a node')
    ck.eq(t['overhead_samples'], sum(f['overhead_samples'] for f in data['functions']),
          'info: the overhead samples are the functions\'')


def test_wait(ck, cyg, prog, args):
    cap, cp = record(ck, cyg, prog, ['20', '5'])
    need_switches(ck, cyg, cap)
    ck.check('done' in cp.out, 'the program ran to its end')
    data, fns = report(ck, cyg, cap)
    ck.eq(fns.get('nothing', {}).get('calls'), 20, 'calls of nothing')
    no = fns['nothing']
    ck.check(no['wait_ns'] * 2 >= no['total_ns'] and no['wait_ns'] > 0,
             'nothing: most of its %.1f ms is waiting for a CPU (%.1f ms)' %
             (no['total_ns'] / 1e6, no['wait_ns'] / 1e6))
    ck.check(no['cpu_samples'] <= 3, 'nothing: next to no CPU samples (%d)' % no['cpu_samples'])
    # the default times (the time model): waiting for a CPU is not work
    mdata, mfns = report(ck, cyg, cap, raw=False)
    mno = mfns.get('nothing', {})
    ck.check(mno.get('self_ns', 1 << 62) * 4 <= no['wait_ns'],
             'nothing: its self time (%.1f ms) is not its waiting (%.1f ms)' %
             (mno.get('self_ns', -1) / 1e6, no['wait_ns'] / 1e6))
    ck.check(no['self_ns'] >= 0.9 * no['wait_ns'],
             '--raw-times: the hooks measured the waiting (%.1f of %.1f ms)' %
             (no['self_ns'] / 1e6, no['wait_ns'] / 1e6))
    cp = run([cyg.exe, 'report', cap])
    ck.check(cp.returncode == 0 and 'waiting for a CPU (preempted: not counted' in cp.out and
             any(ln.split()[-1:] == ['nothing'] for ln in cp.out.splitlines()
                 if 'Off the CPU' in cp.out),
             'report: the off-CPU section names nothing')
    cp = run([cyg.exe, 'report', '--tree', cap])
    ck.check(cp.returncode == 0 and 'WAITING     BLOCKED' in cp.out,
             'report --tree: WAITING and BLOCKED columns')
    unit = {'ns': 1, 'us': 1e3, 'ms': 1e6, 's': 1e9}
    for name, least in (('sleeper', 60), ('poller', 40), ('reader', 50)):
        # "PCT%  TOTAL u  SELF u  CALLS  WAITING u  BLOCKED u  : +-name"
        row = [ln.split() for ln in cp.out.splitlines() if ln.endswith('-' + name)]
        blk = float(row[0][8]) * unit.get(row[0][9], 0) if row and len(row[0]) > 9 else 0
        ck.check(blk >= least * 0.8e6, 'report --tree: %s blocked %.1f ms (at least %d ms asleep)'
                 % (name, blk / 1e6, least))
    for name, least in (('sleeper', 60), ('poller', 40), ('reader', 50)):
        f = fns.get(name, {})
        ck.eq(f.get('calls'), 1, 'calls of %s' % name)
        t, b, w = f.get('total_ns', 0), f.get('blocked_ns', 0), f.get('wait_ns', 0)
        ck.check(b >= 0.6 * t and b >= least * 0.8e6,
                 '%s: blocked %.1f ms of its %.1f ms (at least %d ms asleep)' %
                 (name, b / 1e6, t / 1e6, least))
        ck.check(w <= 0.3 * t, '%s: waits little (%.1f ms of %.1f ms)' % (name, w / 1e6, t / 1e6))
        ck.check(f.get('cpu_samples', 0) <= 2, '%s: next to no samples (%d)' %
                 (name, f.get('cpu_samples', 0)))
    hog = fns.get('hog', {})
    ck.check(hog.get('cpu_samples', 0) > 0, 'the hog (a child) has samples: %d' %
             hog.get('cpu_samples', 0))


def test_idle(ck, cyg, prog, args):
    cap, cp = record(ck, cyg, prog, ['100000000'])
    need_switches(ck, cyg, cap)
    data, fns = report(ck, cyg, cap)
    work = fns.get('work', {})
    ck.check(work.get('cpu_samples', 0) >= 30, 'work has the samples: %d' %
             work.get('cpu_samples', 0))
    for name in ('idle_cond', 'idle_poll'):
        f = fns.get(name, {})
        t, b = f.get('total_ns', 0), f.get('blocked_ns', 0)
        ck.check(t > 0 and b >= 0.8 * t, '%s: blocked for %.1f ms of its %.1f ms' %
                 (name, b / 1e6, t / 1e6))
        ck.check(f.get('cpu_samples', 0) <= 2, '%s: next to no samples (%d)' %
                 (name, f.get('cpu_samples', 0)))
    ck.check(work.get('total_ns', 0) > 0 and
             fns.get('idle_cond', {}).get('total_ns', 0) >= 0.8 * work['total_ns'],
             'the idle threads lasted the run')


def test_restart(ck, cyg, prog, args):
    cap, cp = record(ck, cyg, prog, ['60'])
    ck.check('ok 60' in cp.out, 'the program checked its calls and signals: %r' %
             cp.out.strip()[-200:])
    data, fns = report(ck, cyg, cap)
    ck.eq(fns.get('round_', {}).get('calls'), 60, 'calls of round_')
    b = fns.get('busy', {}).get('cpu_samples', 0)
    ck.check(b >= 100, 'busy has the samples: %d' % b)


def test_fork(ck, cyg, prog, args):
    cap, cp = record(ck, cyg, prog, ['50000000'])
    ck.check('done' in cp.out, 'the program ran to its end')
    data, fns = report(ck, cyg, cap)
    ck.eq(len(data['processes']), 3, 'processes: parent, child, exec\'d image')
    for name, calls in (('parent_work', 2), ('child_work', 1), ('exec_work', 1)):
        f = fns.get(name, {})
        ck.eq(f.get('calls'), calls, 'calls of %s' % name)
        ck.check(f.get('cpu_samples', 0) >= 20, '%s has samples: %d' %
                 (name, f.get('cpu_samples', 0)))
    info = info_json(ck, cyg, cap)
    ck.eq(len(info['cpu']['threads']), 4, 'info: four sampled threads (main, helper, the '
          'child, the exec\'d image)')
    ck.check('child perf fds: 1' in cp.out, 'the child has its own sampler\'s descriptor only '
             '(%r)' % [ln for ln in cp.out.splitlines() if 'perf fds' in ln])
    cap, cp = record(ck, cyg, prog, ['1000'], opts=['--no-cpu'], name='off.data')
    ck.check('child perf fds: 0' in cp.out, '--no-cpu: no perf descriptor in the child (%r)' %
             [ln for ln in cp.out.splitlines() if 'perf fds' in ln])
    cap, cp = record(ck, cyg, prog, ['raw', '20000000'], name='raw.data')
    ck.check('raw child done' in cp.out, 'a raw fork\'s child ran its calls and exited 0')


def test_timer(ck, cyg, prog, args):
    cap, cp = record(ck, cyg, prog, ['400000', '600'], env={'CYGPROF_CPU_SAMPLER': 'timer'})
    data, fns = report(ck, cyg, cap)
    ck.eq(data['cpu_sampler'], 'timer', 'cpu_sampler')
    n = fns.get('hot', {}).get('cpu_samples', 0) + fns.get('cold', {}).get('cpu_samples', 0)
    ck.check(n >= 10, 'samples still arrive: %d' % n)
    info = info_json(ck, cyg, cap)
    t = info['cpu']['threads'][0] if info['cpu']['threads'] else {}
    ck.eq(t.get('method'), 'timer', 'info: the thread\'s method')
    if t.get('cpu_ns'):
        ck.check(t['samples'] <= t['cpu_ns'] / 1e6 * 1.1 + 3,
                 'at most one sample a period of CPU time: %d for %.0f ms' %
                 (t['samples'], t['cpu_ns'] / 1e6))
    ck.check(info['cpu']['effective_period_ns'] >= 900000,
             'info: the effective period (%d ns) is no shorter than asked' %
             info['cpu']['effective_period_ns'])


def test_sampled(ck, cyg, prog, args):
    cap, cp = record(ck, cyg, prog, ['400000', '300'], opts=['--time=sampled'])
    data, fns = report(ck, cyg, cap)
    ck.check(fns.get('hot', {}).get('cpu_samples', 0) >= 30, 'hot has samples: %d' %
             fns.get('hot', {}).get('cpu_samples', 0))
    ck.eq(sum(f['wait_ns'] + f['blocked_ns'] for f in data['functions']), 0,
          'no off-CPU time without frame times')
    info = info_json(ck, cyg, cap)
    ck.eq(info['cpu']['switches'], False, 'info: switches not tracked')
    # the times are the samples' (exact paths, no stack walk)
    mdata, mfns = report(ck, cyg, cap, raw=False)
    hot = mfns.get('hot', {})
    extra = hot.get('self_ns', 0) - hot.get('cpu_samples', 0) * mdata['cpu_period_ns']
    ck.check(hot.get('cpu_samples', 0) > 0 and 0 <= extra <= 100 * hot.get('calls', 0),
             'hot: its time is its samples\' (and the empty hooks\' per call: %d ns)' % extra)


def test_sampled_fib(ck, cyg, prog, args):
    """--time=sampled --sample on tiny calls, no frame pointers: times."""
    cap, cp = record(ck, cyg, prog, ['fib', '300'], opts=['--time=sampled', '--sample'])
    data, fns = report(ck, cyg, cap, raw=False)
    fib = fns.get('fib', {})
    ck.eq(fib.get('calls'), 21891 * 300, 'calls of fib')
    total = sum(f['self_ns'] for f in data['functions'])
    ck.check(total > 0 and fib.get('self_ns', 0) >= 0.75 * total,
             'fib holds at least 75%% of the time: %d of %d ns' % (fib.get('self_ns', 0), total))
    for cmd in (['report'], ['report', '--tree']):
        cp = run([cyg.exe] + cmd + [cap])
        rows = [ln for ln in cp.out.splitlines() if ln.rstrip().endswith('fib')]
        ck.check(cp.returncode == 0 and rows and not rows[0].lstrip().startswith('0.00'),
                 '%s: fib has a time (%r)' % (' '.join(cmd), rows[:1]))


def test_off(ck, cyg, prog, args):
    for opt in ('--no-cpu', '--cpu-freq=0'):
        cap, cp = record(ck, cyg, prog, ['100000', '100'], opts=[opt], name='off.data')
        data, fns = report(ck, cyg, cap)
        ck.eq(data['cpu_sampler'], 'off', '%s: cpu_sampler' % opt)
        ck.eq(data['cpu_period_ns'], 0, '%s: cpu_period_ns' % opt)
        ck.eq(sum(f['cpu_samples'] + f['overhead_samples'] + f['wait_ns'] + f['blocked_ns']
                  for f in data['functions']), 0, '%s: no figures' % opt)
        ck.check('CPU samples' not in cp.err, '%s: no samples in the summary line' % opt)
        info = info_json(ck, cyg, cap)
        ck.eq(info['cpu']['threads'], [], '%s: info: no sampled thread' % opt)
    for bad in ('--cpu-freq=x', '--cpu-freq=20001', '--cpu-freq=-1', '--cpu-freq='):
        cp = run([cyg.exe, 'record', '-o', os.path.join(cyg.workdir, 'bad.data'), bad, '--',
                  prog, '1', '1'])
        cygtest.expect_error(ck, cp, 'record %s' % bad, 2)


TESTS = {'cputime-ratio': test_ratio, 'cputime-overhead': test_overhead,
         'cputime-wait': test_wait, 'cputime-sampled-fib': test_sampled_fib, 'cputime-idle': test_idle, 'cputime-restart': test_restart,
         'cputime-fork': test_fork, 'cputime-timer': test_timer,
         'cputime-sampled': test_sampled, 'cputime-off': test_off}


def call(fn, ck, cyg, example, args):
    try:
        fn(ck, cyg, example, args)
    except Skip as e:
        print('SKIP: %s' % e)
        sys.exit(SKIP)


def main():
    return cygtest.driver_main(TESTS, 'cputime', __doc__, call=call)


if __name__ == '__main__':
    sys.exit(main())
