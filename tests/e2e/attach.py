#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of cygprof record --attach PID (issue 12, point 3;
docs/attach.md).  What exists so far: the refusals.

Usage:
  attach.py --cygprof CYGPROF --example LONGRUN --test NAME [--skip REASON] [-v]

Tests:
  attach-refuse  one stderr line and exit 1 for: a pid that does not exist,
                 an uninstrumented program (/bin/sleep), a program profiled
                 by record already; exit 2 for --attach with a program or a
                 bad pid.  The instrumented longrun, not profiled, passes
                 every check (then "not implemented yet", exit 1) and runs
                 on to its normal end.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e  # noqa: E402  (the helpers of the e2e suite)
from e2e import Failure, no_core, run, expect_error  # noqa: E402


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


def start(cmd, cwd):
    print('$ ' + ' '.join(cmd))
    return subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            preexec_fn=no_core)


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
        time.sleep(0.3)
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
        ck.eq(p.wait(timeout=60), 0, 'the recorded program and its record end normally')
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()

    # instrumented, not profiled: every refusal passes, nothing is touched
    pidfile = os.path.join(d, 'pid-plain')
    p = start([example, pidfile, '10', '200'], d)
    try:
        pid = wait_pid(pidfile, p)
        cp = run([cyg.exe, 'record', '--attach', str(pid)])
        expect_error(ck, cp, 'attachable', 1)
        ck.check('can be attached' in cp.err, 'passes the refusals: %r' % cp.err)
        ck.eq(p.wait(timeout=60), 0, 'the inspected program ends normally')
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


TESTS = {'attach-refuse': test_refuse}


def main():
    return e2e.driver_main(TESTS, 'attach', __doc__)


if __name__ == '__main__':
    sys.exit(main())
