#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof record` on the programs of examples/.

Usage:
  record.py --cygprof CYGPROF --example EXAMPLE --test NAME [--skip REASON] [-v] [--keep]

Each test records EXAMPLE under CYGPROF into a temporary directory, reads the
capture back with `cygprof report --format=json` (and `info`, `replay`),
and compares it with the exact expectations of tests/lib/cygtest.py (the
same numbers as the comment block at the top of each example).  Exit
status: 0 passed, 1 failed, 77 skipped.

Tests (meson names record-TEST, -O0/-O2 where the example is built twice):
  calls, recursion, threads, longjmp, exceptions, forkexec, crash,
  exitdeep, timefilter, killself, manythreads
                   the example's exact calls, arcs, process ends, threads
  tiny-ring        no lost event through a 4096-byte ring
  drop             --drop: lost events counted exactly, every command says so
  errors           record's usage and start-up errors: one line each
  errors-output    an -o that cannot be created: one line, the program not run
  sigterm, sigint, sigint-handled, sigterm-handled
                   a signal sent to cygprof reaches the program; exact capture
  manythreads-timeline, threads64
                   many threads with --timeline: every thread, exact events
  collector-gone   cygprof SIGKILLed: the program runs to its end
  disk-full        a capture that does not fit: the program runs on, one line
                   (when, what is kept, the program's status), exit 1; the
                   capture reads and says why it ended (meta "ended")
  clock            the capture's clock (meta clock_start, clock_end)
  sigint-group     (EXAMPLE: tests/record/sigcount.c) record and the program
                   in a process group of their own: SIGINT to the group 20
                   times, and a terminal's Ctrl-C, reach the program once
                   each (record does not send them again); SIGINT to record
                   alone still reaches it, once
"""

import fcntl
import json
import os
import pty
import re
import signal
import subprocess
import termios
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cygtest import (  # noqa: E402
    driver_main, EXPECT, Failure, SKIP, check_all, check_arcs, check_functions, check_processes,
    check_stdout,
    check_times, children, describe_status, exp_longrun, exp_manythreads, exp_threads,
    exp_waitsig, expect_error, fn_map, info_json, is_int, proc_status, read_line,
    record_and_check, replay_calls, run)


def test_example(name):
    def t(ck, cyg, example):
        exp = EXPECT[name]()
        _, data, _ = record_and_check(ck, cyg, example, exp)
        ck.eq(data['lost_events'], 0, 'lost_events')
        check_all(ck, data, exp, example)
        if name == 'calls':
            fns = fn_map(data)
            chain = [fns[n]['total_ns'] for n in ('main', 'a', 'b', 'c') if n in fns]
            ck.check(chain == sorted(chain, reverse=True),
                     'nested totals: main >= a >= b >= c (%s)' % chain)
        if name == 'forkexec':
            procs = data['processes']
            by_end = {p['end']: p for p in procs}
            if len(procs) == 3 and set(by_end) == {'exec', 'exit 0', 'exit 7'}:
                ck.eq(by_end['exit 0']['pid'], by_end['exec']['pid'],
                      'the exec\'d image keeps the pid of the image that exec\'d')
                ck.check(by_end['exit 7']['pid'] != by_end['exec']['pid'],
                         'the fork child has a pid of its own')
    return t


def timeline_events(exp):
    """Timeline events the program implies: an entry and an exit (or an
    unwind) per call."""
    return 2 * sum(exp['functions'].values())


def check_event_accounting(ck, cyg, capture, exp, tag):
    """Per thread and in total, stored + lost events == 2 per call, and the
    number the program implies; returns the total lost."""
    info = info_json(ck, cyg, capture)
    threads = info.get('threads', [])
    for t in threads:
        ck.eq(t['events'] + t['lost'], 2 * t['calls'],
              '[%s] thread %d: events %d + lost %d == 2 x calls' %
              (tag, t['tid'], t['events'], t['lost']))
    events = sum(t['events'] for t in threads)
    lost = sum(t['lost'] for t in threads)
    ck.eq(events + lost, timeline_events(exp),
          '[%s] stored %d + lost %d events == the exact number the program implies' %
          (tag, events, lost))
    ck.eq(info.get('lost_events'), lost, '[%s] info: lost_events is the threads\' sum' % tag)
    ck.eq(info.get('limits', {}).get('lost'), lost, '[%s] info: limits.lost' % tag)
    return events, lost


def test_tiny_ring(ck, cyg, example):
    """4 busy threads, a 4096-byte ring, timeline on: nothing may be lost,
    every event is stored."""
    exp = exp_threads(100000)
    capture, data, _ = record_and_check(ck, cyg, example, exp,
                                        opts=['--timeline', '--ring-size', '4096'])
    ck.eq(data['lost_events'], 0, 'lost_events with a tiny ring (blocking mode)')
    check_all(ck, data, exp, example)
    events, lost = check_event_accounting(ck, cyg, capture, exp, 'blocking')
    ck.eq((events, lost), (timeline_events(exp), 0), 'blocking mode: every event stored')
    cp = run([cyg.exe, 'report', capture])
    ck.check('were lost' not in cp.err, 'blocking mode: no lost-events warning (%r)' % cp.err)


LOST_WARNING = r'^cygprof: warning: .*: %d timeline events were lost during recording'


def test_drop(ck, cyg, example):
    """--drop with a tiny ring on 4 busy threads: events are lost, counted
    exactly (stored + lost == 2 per call), and every command says how many."""
    exp = exp_threads(100000)
    capture, data, text = record_and_check(ck, cyg, example, exp,
                                           opts=['--timeline', '--ring-size', '4096', '--drop'])
    lost = data['lost_events']
    ck.check(is_int(lost) and lost > 0, '--drop with a 4 KiB ring on 4 busy threads loses '
             'events: lost_events %r > 0' % lost)
    print('info: lost_events = %d with --drop' % lost)
    events, ilost = check_event_accounting(ck, cyg, capture, exp, 'drop')
    ck.eq(ilost, lost, 'info and report agree on the lost events')
    ck.eq(data.get('limits', {}).get('lost'), lost, 'report json: limits.lost')
    data2, text2 = cyg.report_json(capture, ck, raw=True)
    ck.check(data2 == data, 'two reports of the same capture are equal')
    # The call trees do not depend on the timeline: still exact.
    check_functions(ck, data, exp['functions'])
    check_arcs(ck, data, exp['arcs'], exp['roots'])
    check_processes(ck, data, exp['ends'], example)
    check_times(ck, data, [])
    # The summary line of record, and every command, give the count.
    for cmd in (['report'], ['report', '--format=json'], ['info'], ['replay'],
                ['gprof', '-b'], ['annotate']):
        cp = run([cyg.exe] + cmd + [capture])
        ck.eq(cp.returncode, 0, '%s exit status' % ' '.join(cmd))
        warns = re.findall(LOST_WARNING % lost, cp.err, re.M)
        ck.eq(len(warns), 1, '%s: one warning line with the %d lost events (stderr %r)' %
              (' '.join(cmd), lost, cp.err[:300]))
    cp = run([cyg.exe, 'info', capture])
    ck.check(re.search(r'^totals: \d+ calls, %d events, %d lost events' % (events, lost),
                       cp.out, re.M) is not None, 'info: totals line with the stored and lost '
             'events')
    cp = run([cyg.exe, 'replay', capture])
    entries = sum(1 for line in cp.out.splitlines() if re.search(r'\(\)\s*(;|\{)\s*$', line))
    ck.check(entries < sum(exp['functions'].values()),
             'replay shows fewer calls (%d) than were made (gaps)' % entries)


def test_errors_record(ck, cyg, example):
    d = cyg.workdir
    cap = os.path.join(d, 'err.data')
    missing = os.path.join(d, 'no-such-program')
    expect_error(ck, cyg.record(cap, [missing]), 'record of a missing program', 127)
    noexec = os.path.join(d, 'not-executable')
    with open(noexec, 'w') as f:
        f.write('#!/bin/sh\necho hello\n')
    os.chmod(noexec, 0o644)
    expect_error(ck, cyg.record(cap, [noexec]), 'record of a non-executable file', 126)
    cp = run([cyg.exe, 'record', '--no-such-option', '-o', cap, '--', example])
    expect_error(ck, cp, 'record with an unknown option', 2)
    cp = run([cyg.exe, 'report', '--no-such-option', cap])
    expect_error(ck, cp, 'report with an unknown option', 2)


def signal_test(sig, handle):
    """SIGTERM/SIGINT sent to `cygprof record` reach the program; the capture
    is finished and exact."""
    def t(ck, cyg, example):
        exp = exp_waitsig(7, handle, sig)
        capture = os.path.join(cyg.workdir, 'sig.data')
        cmd = [cyg.exe, 'record', '-o', capture, '--', example] + exp['args']
        print('$ ' + ' '.join(cmd))
        p = subprocess.Popen(cmd, cwd=cyg.workdir, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            first = read_line(p, 30)
            ck.eq(first, exp['stdout'][0], 'the program\'s "ready" line')
            print('send signal %d to cygprof (pid %d)' % (sig, p.pid))
            kids = children(p.pid)
            p.send_signal(sig)
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired as e:
            state = ['pid %s: %s' % (k, proc_status(k, ('State', 'SigPnd', 'ShdPnd', 'SigCgt')))
                     for k in kids]
            raise Failure('cygprof record did not end within 10 s of signal %d; the program: %s '
                          '(no signal pending: cygprof did not forward it)' % (sig, state)) from e
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        out = (first + '\n' + out.decode('utf-8', 'replace')).splitlines()
        err = err.decode('utf-8', 'replace')
        ck.eq(describe_status(p.returncode), describe_status(exp['status']),
              'record exit status after signal %d' % sig)
        for line in exp['stdout']:
            ck.check(line in out, 'program printed %r (stdout: %r)' % (line, out))
        lines = [line for line in err.splitlines() if line.strip()]
        ck.check(len(lines) == 1 and lines[0].startswith('cygprof'),
                 'record prints a one-line summary on stderr (got %r)' % lines)
        if not os.path.exists(capture):
            raise Failure('record left no capture at %s' % capture)
        data, _ = cyg.report_json(capture, ck)
        ck.eq(data['lost_events'], 0, 'lost_events')
        check_all(ck, data, exp, example)
        info = info_json(ck, cyg, capture)
        ck.check(example in str(info.get('meta', {}).get('command')),
                 'info: the capture holds its command (%r)' % info.get('meta'))
        ck.eq([p_['end'] for p_ in info.get('processes', [])], exp['ends'], 'info: process end')
    return t


def sig_bits(pid, keys):
    """The union of the signal masks keys ('SigPnd', ...) of pid's status."""
    bits = 0
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                k, _, v = line.partition(':')
                if k in keys:
                    bits |= int(v.strip(), 16)
    except OSError:
        pass
    return bits


def settled(pid, sig):
    """sig neither pending at pid nor blocked there (a handler running for
    it blocks it): whatever pid does on sig is done."""
    return not sig_bits(pid, ('SigPnd', 'ShdPnd', 'SigBlk')) & (1 << (sig - 1))


def test_sigint_group(ck, cyg, example):
    def one(tag, how):
        capture = os.path.join(cyg.workdir, 'sig.data')
        stop = os.path.join(cyg.workdir, 'stop')
        for f in (capture, stop):
            if os.path.exists(f):
                os.unlink(f)
        cmd = [cyg.exe, 'record', '-q', '-o', capture, '--', example, stop]
        master = None
        if how == 'tty':
            # the terminal's Ctrl-C: record leads a session whose
            # controlling terminal is a pseudo-terminal; ^C written to
            # its master sends SIGINT (si_code SI_KERNEL) to the group
            master, slave = pty.openpty()

            def ctty():
                os.setsid()
                fcntl.ioctl(slave, termios.TIOCSCTTY, 0)
            p = subprocess.Popen(cmd, cwd=cyg.workdir, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, stdin=slave, preexec_fn=ctty)
            os.close(slave)
        else:
            p = subprocess.Popen(cmd, cwd=cyg.workdir, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                 preexec_fn=os.setpgrp)
        try:
            ck.eq(read_line(p, 30), 'sigcount: ready', '%s: the program\'s "ready" line' % tag)
            prog = [k for k in children(p.pid) if os.path.exists('/proc/%d/exe' % k) and
                    os.path.realpath('/proc/%d/exe' % k) == os.path.realpath(example)]
            if how == 'group':
                os.killpg(p.pid, signal.SIGINT)
            elif how == 'alone':
                p.send_signal(signal.SIGINT)
            else:
                os.write(master, b'\x03')
            ck.eq(read_line(p, 30), 'sigcount: got', '%s: the program got SIGINT' % tag)
            # record's handler has run (and sent whatever it sends), and
            # the program has taken whatever was sent: then stop it
            end = time.monotonic() + 30
            while not (settled(p.pid, signal.SIGINT) and
                       all(settled(k, signal.SIGINT) for k in prog)):
                if time.monotonic() > end:
                    raise Failure('%s: SIGINT still pending or handled at record (%s) or the '
                                  'program after 30 s' % (tag, proc_status(p.pid, (
                                      'SigPnd', 'ShdPnd', 'SigBlk'))))
                time.sleep(0.001)
            with open(stop, 'w'):
                pass
            out, err = p.communicate(timeout=30)
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            if master is not None:
                os.close(master)
        ck.eq(out.decode('utf-8', 'replace').splitlines(), ['sigcount: sigint=1'],
              '%s: the program got SIGINT exactly once' % tag)
        ck.eq(p.returncode, 0, '%s: record exit status (stderr: %r)' % (tag, err))
        return capture

    for i in range(20):
        capture = one('group kill %d' % (i + 1), 'group')
    data, _ = cyg.report_json(capture, ck)
    calls = {f['name']: f['calls'] for f in data['functions']}
    ck.eq((calls.get('main'), calls.get('on_sigint'), calls.get('wait_stop')), (1, 1, 1),
          'calls of main, on_sigint, wait_stop')
    one('kill of record alone', 'alone')
    one('Ctrl-C on a terminal', 'tty')


def many_threads_test(total, wave, k):
    def t(ck, cyg, example):
        exp = exp_manythreads(total, wave, k)
        capture, data, _ = record_and_check(ck, cyg, example, exp, opts=['--timeline'])
        ck.eq(data['lost_events'], 0, 'lost_events')
        check_all(ck, data, exp, example)
        tids = [th.get('tid') for th in data['threads']]
        ck.eq(len(set(tids)), total + 1, 'distinct thread ids')
        info = info_json(ck, cyg, capture)
        ths = info.get('threads', [])
        ck.eq(len(ths), total + 1, 'info: threads')
        ck.eq(info.get('lost_events'), 0, 'info: lost_events')
        ck.eq(info.get('calls'), 1 + total + total * k, 'info: calls')
        ck.eq(info.get('events'), 2 * (1 + total + total * k), 'info: timeline events')
        ended = [th.get('tid') for th in ths if not (th.get('flags', 0) & 1)]
        ck.check(not ended, 'info: every thread ended by itself (not: %s)' % ended[:10])
        cp = run([cyg.exe, 'replay', capture])
        ck.eq(describe_status(cp.returncode), 'exit 0', 'replay exit status')
        got = {fn: replay_calls(cp.out, fn) for fn in ('main', 'worker', 'work')}
        ck.eq(got, {'main': 1, 'worker': total, 'work': total * k}, 'replay: calls per function')
        shown = {int(x) for x in re.findall(r'\[\s*(\d+)\]', cp.out)}
        ck.eq(len(shown), total + 1, 'replay: distinct tids')
    return t


def test_collector_gone(ck, cyg, example):
    """SIGKILL to cygprof itself while the program runs: the program (its child)
    must go on and finish by itself; its writers stop waiting for the ring."""
    import ctypes
    exp = exp_longrun()
    PR_SET_CHILD_SUBREAPER = 36
    libc = ctypes.CDLL(None, use_errno=True)
    # The program becomes an orphan when cygprof dies: be its reaper, to get
    # its exit status.
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise Failure('prctl(PR_SET_CHILD_SUBREAPER): errno %d' % ctypes.get_errno())
    d = cyg.workdir
    pidfile = os.path.join(d, 'pid')
    outpath = os.path.join(d, 'stdout')
    capture = os.path.join(d, 'gone.data')
    cmd = [cyg.exe, 'record', '-o', capture, '--timeline', '--ring-size', '4096', '--',
           example, pidfile] + exp['args']
    print('$ ' + ' '.join(cmd))
    with open(outpath, 'wb') as out:
        p = subprocess.Popen(cmd, cwd=d, stdout=out, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL)
    pid = None
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and p.poll() is None:
            if os.path.exists(pidfile):
                with open(pidfile) as f:
                    text = f.read()
                if text.endswith('\n'):
                    pid = int(text)
                    break
            time.sleep(0.01)
        if pid is None:
            raise Failure('the program did not write its pid (cygprof: %s)' %
                          (describe_status(p.returncode) if p.poll() is not None else 'running'))
        # the program is under way: its second round has ended (the ring of
        # 4096 words is too small for a round, so its writer waits for cygprof)
        while time.monotonic() < end and p.poll() is None:
            with open(outpath) as f:
                if 'longrun: round=2\n' in f.read():
                    break
            time.sleep(0.01)
        ck.check(p.poll() is None, 'cygprof still runs after the program\'s second round')
        p.kill()
        p.wait()
        killed_at = time.monotonic()
        print('killed cygprof (pid %d) with SIGKILL; the program is pid %d' % (p.pid, pid))
        status = None
        while time.monotonic() < killed_at + 30:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                status = st
                break
            time.sleep(0.05)
        took = time.monotonic() - killed_at
        if status is None:
            raise Failure('the program (pid %d) did not end within 30 s of the collector\'s '
                          'death' % pid)
        print('info: the program ended %.2f s after the collector' % took)
        pid = None
        rc = os.waitstatus_to_exitcode(status)
        ck.eq(describe_status(rc), 'exit 0', 'the program ends by itself')
        ck.check(took < 10, 'the program ended within 10 s of the collector\'s death '
                 '(%.2f s)' % took)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid is not None:
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
    with open(outpath, 'rb') as f:
        lines = f.read().decode('utf-8', 'replace').splitlines()
    ck.eq(lines, exp['stdout'], 'the program\'s whole output')
    # What was left at the capture's path must not crash a reader.
    if os.path.exists(capture):
        cp = run([cyg.exe, 'report', '--format=json', capture])
        ck.check(cp.returncode >= 0, 'report of the capture of a killed collector: no '
                 'death by signal (%s)' % describe_status(cp.returncode))


# --------------------------------------------------------------------------
# output errors, info


def test_errors_output(ck, cyg, example):
    """-o that cannot be created: one error line, exit 1, the program not run."""
    d = cyg.workdir
    marker = os.path.join(d, 'marker')
    prog = ['/bin/sh', '-c', 'echo ran > "$0"', marker]
    ok = os.path.join(d, 'ok.data')
    cp = cyg.record(ok, prog)
    ck.eq(describe_status(cp.returncode), 'exit 0', 'control: record of the marker program')
    ck.check(os.path.exists(marker), 'control: the program creates its marker')
    regular = os.path.join(d, 'regular-file')
    with open(regular, 'w') as f:
        f.write('not a directory\n')
    adir = os.path.join(d, 'a-directory')
    os.mkdir(adir)
    cases = [
        ('a directory that does not exist', os.path.join(d, 'no-such-dir', 'c.data')),
        ('a path whose parent is a regular file', os.path.join(regular, 'c.data')),
        ('/proc (not writable)', '/proc/cygprof-e2e-%d.data' % os.getpid()),
        ('an existing directory', adir),
    ]
    if os.geteuid() != 0:
        ro = os.path.join(d, 'read-only')
        os.mkdir(ro, 0o555)
        cases.append(('a read-only directory', os.path.join(ro, 'c.data')))
    for what, path in cases:
        if os.path.exists(marker):
            os.unlink(marker)
        cp = cyg.record(path, prog)
        expect_error(ck, cp, '-o into %s' % what, 1)
        ck.check(not os.path.exists(marker), '-o into %s: the program was not run' % what)
        if path != adir:
            ck.check(not os.path.exists(path), '-o into %s: no capture left' % what)
    ck.eq(sorted(os.listdir(adir)), [], 'the existing directory is left alone')


def test_disk_full(ck, cyg, example):
    """A capture that does not fit on its file system: the program runs on to
    its end; one line says when the disk filled, what the capture holds and
    how the program ended, exit 1; the capture reads, with the meta key
    "ended" (info's "ended" row, JSON limits.ended).  (An already full file
    system is tested by safety.py, disk-full-empty; other write errors by
    tests/fault.)"""
    mnt = os.path.join(cyg.workdir, 'small')
    os.mkdir(mnt)
    if os.geteuid() != 0 or run(['mount', '-t', 'tmpfs', '-o', 'size=96k', 'tmpfs', mnt]).returncode:
        print('SKIP: needs root to mount a small tmpfs')
        sys.exit(SKIP)
    try:
        # threads-O2 with --timeline: more than 96 KB even compressed (a capture is
        # at least 16 pages), and more than the 64 KiB record checks for at the start
        target = os.path.join(mnt, 'cap.data')
        cp = run([cyg.exe, 'record', '--timeline', '-o', target, '--', example, '100000'])
        expect_error(ck, cp, 'record onto a full file system', 1)
        ck.check(re.match(r'^cygprof: record: %s: no space left on device at \d+\.\d{3} s; '
                          r'the capture holds (no calls|the calls up to \d+\.\d{3} s)( and the events up to \d+\.\d{3} s)?; '
                          r'%s ran on to its end, exit status 0$'
                          % (re.escape(target), re.escape(example)), cp.err) is not None,
                 'the error says when the disk filled, what is kept, how the program '
                 'ended (got %r)' % cp.err.strip())
        check_stdout(ck, cp, ['threads: work=400001 exited=1'])
        ck.eq(sorted(os.listdir(mnt)), ['cap.data'], 'the capture, and no other file')
        at = re.search(r'no space left on device at (\d+\.\d{3}) s', cp.err)
        info = run([cyg.exe, 'info', target])
        ck.eq(info.returncode, 0, 'info reads the capture')
        ck.check(('\ncommand       : %s 100000\n' % example) in info.out,
                 'info: the command is kept')
        if at:
            want = 'no space left on device at %s s' % at.group(1)
            ck.check(('\nended         : %s\n' % want) in info.out,
                     'info: "ended: %s"' % want)
            ck.check(('limits        : recording ended early: %s\n' % want) in info.out,
                     'info: the limits say it ended early')
            ck.eq(info.err.strip(), 'cygprof: warning: %s: the recording ended early: %s: '
                  'showing what it holds' % (target, want), 'info: one warning')
            js = run([cyg.exe, 'info', '--format=json', target])
            data = json.loads(js.out) if js.returncode == 0 else {}
            ck.eq(data.get('limits', {}).get('ended'),
                  {'reason': 'no space left on device', 'at_s': float(at.group(1))},
                  'info --format=json: limits.ended, typed')
            ck.eq(data.get('limits', {}).get('complete'), False, 'JSON: not complete')
            ck.eq(data.get('meta', {}).get('ended'), want, 'JSON: meta.ended')
    finally:
        run(['umount', mnt])


def test_clock(ck, cyg, example):
    """The capture's clock written down: the tick read with CLOCK_MONOTONIC
    and CLOCK_REALTIME at the start and at the end (meta clock_start,
    clock_end) and the tsc frequency, so that an event at t_ns is at
    clock_start.mono_ns + t_ns on perf's clock (perf record -k
    CLOCK_MONOTONIC)."""
    cap = os.path.join(cyg.workdir, 'clock.data')
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    cp = cyg.record(cap, [example], ['--timeline'])
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    ck.eq(cp.returncode, 0, 'record')
    meta = info_json(ck, cyg, cap).get('meta', {})

    def pair(key):
        # typed JSON: an object of numbers
        v = meta.get(key)
        if not isinstance(v, dict) or not all(type(x) is int for x in v.values()):
            raise Failure('meta %s is not an object of numbers: %r' % (key, v))
        return v
    a, b = pair('clock_start'), pair('clock_end')
    ck.eq(sorted(a), ['mono_ns', 'real_ns', 'tick'], 'clock_start: tick, mono_ns, real_ns')
    dur = meta['duration_ns']
    ck.check(type(dur) is int and type(meta.get('tsc_hz', 0)) is int,
             'meta duration_ns and tsc_hz are JSON numbers (%r, %r)' %
             (dur, meta.get('tsc_hz')))
    ck.check(t0 <= a['mono_ns'] <= b['mono_ns'] <= t1,
             'both pairings taken during the recording, on CLOCK_MONOTONIC')
    ck.check(b['mono_ns'] - a['mono_ns'] >= dur, 'the end pairing is after the last event')
    drift = abs((b['real_ns'] - b['mono_ns']) - (a['real_ns'] - a['mono_ns']))
    ck.check(drift < 1000000, 'realtime - monotonic the same at both ends (%d ns apart)' % drift)
    if meta.get('clock') == 'tsc':
        hz = int(meta['tsc_hz'])
        ck.check(10**8 <= hz <= 10**11, 'tsc_hz plausible (%d)' % hz)
        ck.check(abs((b['tick'] - a['tick']) * 1e9 / hz - (b['mono_ns'] - a['mono_ns'])) < 1000,
                 'ticks / tsc_hz = the monotonic time between the pairings')
    else:
        ck.eq(meta.get('tsc_hz'), None, 'no tsc_hz with the monotonic clock')


TESTS = {name: test_example(name) for name in EXPECT}
TESTS.update({
    'tiny-ring': test_tiny_ring,
    'drop': test_drop,
    'errors': test_errors_record,
    'sigterm': signal_test(15, False),
    'sigint': signal_test(2, False),
    'sigint-handled': signal_test(2, True),
    'sigterm-handled': signal_test(15, True),
    'manythreads-timeline': many_threads_test(200, 20, 50),
    'threads64': many_threads_test(64, 64, 100),
    'collector-gone': test_collector_gone,
    'errors-output': test_errors_output,
    'disk-full': test_disk_full,
    'clock': test_clock,
    'sigint-group': test_sigint_group,
})


def main():
    return driver_main(TESTS, 'record', __doc__,
                       call=lambda fn, ck, cyg, example, args: fn(ck, cyg, example))


if __name__ == '__main__':
    sys.exit(main())
