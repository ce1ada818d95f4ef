#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cutoff.py: captures that a killed or still-running recorder leaves are
read by every reader (suite 'capture', tests capture-cutoff-*).

  kill20   20 'record --timeline' runs of examples/longrun.c, each SIGKILLed
           at its own moment (as soon as its capture appears, then after
           round 1, 2, ..., 19 of 20): info, report, replay, export and
           html read every capture, exit 0 and say in one line that the
           recording was cut off; the calls are those of a checkpoint
           (work = K per round_ that ran, main at most 1), the replay
           marks what follows the checkpoint
  live     readers run over and over while 'record --timeline' writes the
           capture: every read exits 0 and says in one line that the
           recording is still in progress; the writer is not disturbed
           (the finished capture holds the exact calls)
"""

import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cygtest import (  # noqa: E402
    TIMEOUT, Failure, driver_main, fn_map, replay_calls, run)

ROUNDS = 20
K = 5000
CHECKPOINT_MS = '100'  # several checkpoints within the run


def env_ckpt():
    e = dict(os.environ)
    e['CYGPROF_CHECKPOINT_MS'] = CHECKPOINT_MS
    return e


def wait_for(cond, what, deadline):
    while not cond():
        if time.monotonic() > deadline:
            raise Failure('timed out waiting for %s' % what)
        time.sleep(0.002)


def start(cyg, longrun, name, rounds=ROUNDS, k=K):
    d = os.path.join(cyg.workdir, name)
    os.mkdir(d)
    cap = os.path.join(d, 'cap.data')
    out = open(os.path.join(d, 'stdout'), 'wb')
    cmd = [cyg.exe, 'record', '-o', cap, '--timeline', '--', os.path.abspath(longrun),
           os.path.join(d, 'pid'), str(rounds), str(k)]
    p = subprocess.Popen(cmd, cwd=d, stdout=out, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env_ckpt())
    out.close()
    return p, d, cap


def stop_program(d):
    """The program goes on after its recorder died: tell it to stop."""
    open(os.path.join(d, 'pid.stop'), 'w').close()


def sealed(cyg, cap):
    """The capture has been sealed by its recorder (complete)."""
    cp = subprocess.run([cyg.exe, 'info', '--format=json', cap], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=TIMEOUT)
    if cp.returncode != 0:
        return False
    return json.loads(cp.stdout.decode('utf-8', 'replace')).get('limits', {}).get('complete') is True


def read_all(ck, cyg, cap, d, word, tag, running=None):
    """Every reader on cap: exit 0, one warning line containing word (none
    allowed once running() says the recorder has ended)."""
    got = {}
    for name, cmd in (
            ('info', ['info', '--format=json', cap]),
            ('report', ['report', '--format=json', cap]),
            ('replay', ['replay', cap]),
            ('export', ['export', '--format=chrome', '-f', '-o', os.path.join(d, 't.json'), cap]),
            ('html', ['html', '-f', '-o', os.path.join(d, 'r.html'), cap])):
        cp = subprocess.run([cyg.exe] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            timeout=TIMEOUT)
        err = cp.stderr.decode('utf-8', 'replace').strip()
        lines = [x for x in err.splitlines() if word in x]
        ok = ck.check(cp.returncode == 0, '%s: %s exits 0 (%d: %s)' %
                      (tag, name, cp.returncode, err))
        if ok and running and (not running() or (not lines and sealed(cyg, cap))):
            # the recorder may seal the capture and still be exiting: a
            # reader that found it sealed rightly says nothing
            ck.check(len(lines) <= 1, '%s: %s says at most once that the recording is %s: %r' %
                     (tag, name, word, err))
        elif ok:
            ck.check(len(lines) == 1, '%s: %s says once that the recording is %s: %r' %
                     (tag, name, word, err))
        got[name] = cp.stdout.decode('utf-8', 'replace') if ok else None
    return got


def test_kill20(ck, cyg, example, args):
    runs = []
    for i in range(20):
        runs.append(start(cyg, args.longrun, 'k%02d' % i))
    deadline = time.monotonic() + TIMEOUT
    killed = [None] * 20
    after = [0] * 20  # rounds the program had printed when its recorder died

    def killer(i):
        p, d, cap = runs[i]
        try:
            if i == 0:
                wait_for(lambda: os.path.exists(cap) or p.poll() is not None, 'the capture',
                         deadline)
            else:
                line = b'longrun: round=%d\n' % i
                path = os.path.join(d, 'stdout')

                def seen():
                    with open(path, 'rb') as f:
                        return line in f.read() or p.poll() is not None
                wait_for(seen, 'round %d' % i, deadline)
            killed[i] = p.poll() is None
            p.kill()
            p.wait()
            with open(os.path.join(d, 'stdout'), 'rb') as f:
                after[i] = f.read().count(b'longrun: round=')
        finally:
            stop_program(d)
    ths = [threading.Thread(target=killer, args=(i,)) for i in range(20)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    for i, (p, d, cap) in enumerate(runs):
        tag = 'killed at moment %d' % i
        if not ck.check(killed[i], '%s: record was still running when killed' % tag):
            continue
        if not os.path.exists(cap):
            ck.check(i == 0, '%s: a capture is there' % tag)
            continue
        if after[i] == ROUNDS and sealed(cyg, cap):
            # a loaded machine delayed the kill past the program's whole
            # run: the recorder had sealed the capture and was exiting,
            # which is not a failure; the capture then holds every call
            cp = run([cyg.exe, 'report', '--format=json', cap])
            fns = fn_map(json.loads(cp.out)) if cp.returncode == 0 else {}
            ck.eq([fns.get(n, {}).get('calls') for n in ('main', 'round_', 'work')],
                  [1, ROUNDS, ROUNDS * K], '%s (after the whole run): the exact calls' % tag)
            continue
        got = read_all(ck, cyg, cap, d, 'cut off', tag)
        if got['info'] is not None:
            info = json.loads(got['info'])
            lim = info.get('limits', {})
            ck.check(lim.get('complete') is False and lim.get('in_progress') is False,
                     '%s: info\'s limits say cut off, not in progress: %r' % (tag, lim))
        if got['report'] is not None:
            fns = fn_map(json.loads(got['report']))
            rounds = fns.get('round_', {}).get('calls', 0)
            work = fns.get('work', {}).get('calls', 0)
            ck.check(fns.get('main', {}).get('calls', 0) <= 1, '%s: main at most once' % tag)
            ck.check(rounds <= after[i] + 1 and (rounds - 1) * K <= work <= rounds * K,
                     '%s: a checkpoint\'s calls: round_ %d (<= %d), work %d (K=%d per round_)'
                     % (tag, rounds, after[i] + 1, work, K))
        if got['replay'] is not None:
            n = replay_calls(got['replay'], 'work')
            ck.check(n <= (after[i] + 1) * K, '%s: replay work %d <= %d' %
                     (tag, n, (after[i] + 1) * K))
            if i >= 3:
                ck.check('a partial tail follows' in got['replay'] or
                         'checkpoint' not in got['replay'],
                         '%s: replay marks the events after the checkpoint' % tag)


def test_live(ck, cyg, example, args):
    """Readers while recording: the program runs (up to 60 s) until three
    full rounds of reads are done, then is told to stop; the finished
    capture holds exactly the rounds it printed."""
    p, d, cap = start(cyg, args.longrun, 'live', rounds=600, k=K)
    deadline = time.monotonic() + TIMEOUT
    try:
        wait_for(lambda: os.path.exists(cap) or p.poll() is not None, 'the capture', deadline)
        reads = 0
        while p.poll() is None and reads < 3:
            got = read_all(ck, cyg, cap, d, 'in progress', 'live read %d' % reads,
                           running=lambda: p.poll() is None)
            if p.poll() is None:
                reads += 1
            if any(v is None for v in got.values()):
                break
            info = json.loads(got['info'])
            ck.check(info['limits']['in_progress'] in (True, False), 'limits.in_progress')
    finally:
        stop_program(d)
        p.wait()
    ck.check(reads >= 2, 'at least 2 full rounds of reads while recording (%d)' % reads)
    ck.eq(p.returncode, 0, 'record ends well')
    with open(os.path.join(d, 'stdout'), 'rb') as f:
        rounds = f.read().count(b'longrun: round=')
    cp = run([cyg.exe, 'report', '--format=json', cap])
    fns = fn_map(json.loads(cp.out))
    ck.eq((fns['main']['calls'], fns['round_']['calls'], fns['work']['calls']),
          (1, rounds, rounds * K), 'the finished capture: main, round_, work')
    ck.check('in progress' not in cp.err and 'cut off' not in cp.err,
             'the finished capture warns nothing: %r' % cp.err)


def child_maxrss_kb(argv, count_fn=None):
    """Run argv with stdout to a pipe read line by line (count_fn's calls
    counted in it, with replay_calls' rule); its exit status, the count and
    its peak resident size in KB (wait4's ru_maxrss)."""
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    n = 0
    pat = re.compile(r'^%s\(\)\s*(;|\{)' % re.escape(count_fn or '-'))
    for line in p.stdout:
        head, bar, rest = line.decode('utf-8', 'replace').partition('|')
        if count_fn and bar and pat.match(rest.strip()):
            n += 1
    p.stdout.close()
    _, status, ru = os.wait4(p.pid, 0)
    return os.waitstatus_to_exitcode(status), n, ru.ru_maxrss


def test_stream(ck, cyg, example, args):
    """replay reads a timeline a block at a time: on 4,000,004 events its
    peak resident size stays within 24 MB of info's on the same capture (a
    whole timeline in memory is 64 MB or more), and it prints every call;
    so does replay -N, remapping each block to the filtered tree.
    Under a sanitizer the sizes are not comparable: the count only."""
    d = os.path.join(cyg.workdir, 'stream')
    os.mkdir(d)
    cap = os.path.join(d, 'cap.data')
    cp = run([cyg.exe, 'record', '-q', '--timeline', '-o', cap, '--',
              os.path.abspath(args.longrun), os.path.join(d, 'pid'), '1', '2000000'])
    ck.eq(cp.returncode, 0, 'record longrun 1 2000000')
    rc, n, rss = child_maxrss_kb([cyg.exe, 'replay', cap], 'work')
    ck.eq((rc, n), (0, 2000000), 'replay exits 0 and prints work() 2,000,000 times')
    # a filter after the fact (-N hides round_: work attaches to main)
    # remaps each block as it goes
    rc, nf, rssf = child_maxrss_kb([cyg.exe, 'replay', '-N', 'round_', cap], 'work')
    ck.eq((rc, nf), (0, 2000000), 'replay -N round_ exits 0 and prints work() 2,000,000 times')
    rc, _, base = child_maxrss_kb([cyg.exe, 'info', cap])
    ck.eq(rc, 0, 'info')
    if sanitized(cyg.exe):
        print('# sanitized build: resident sizes not compared')
        return
    ck.check(rss <= base + 24 * 1024, 'replay peak RSS %d KB <= info\'s %d KB + 24 MB'
             % (rss, base))
    ck.check(rssf <= base + 24 * 1024, 'replay -N peak RSS %d KB <= info\'s %d KB + 24 MB'
             % (rssf, base))


def sanitized(exe):
    out = subprocess.run(['ldd', exe], stdout=subprocess.PIPE).stdout.decode()
    return 'libasan' in out or 'libubsan' in out


def test_viewer(ck, cyg, example, args):
    """export refuses, in one line, a chrome trace past what its viewers
    open (11,000,004 events: about 528 MB of JSON > 500 MB) and writes
    nothing; a --time-range of a tenth of the run, or perfetto (12 bytes
    an event), passes the check."""
    d = os.path.join(cyg.workdir, 'viewer')
    os.mkdir(d)
    cap = os.path.join(d, 'cap.data')
    cp = run([cyg.exe, 'record', '-q', '--timeline', '-o', cap, '--',
              os.path.abspath(args.longrun), os.path.join(d, 'pid'), '1', '5500000'])
    ck.eq(cp.returncode, 0, 'record longrun 1 5500000')
    out = os.path.join(d, 't.json')
    cp = run([cyg.exe, 'export', '--format=chrome', '-o', out, cap])
    err = cp.err.strip()
    ck.check(cp.returncode == 1 and len(err.splitlines()) == 1 and
             re.search(r'a chrome trace of about 0\.5 GB \(11000004 events\), past the ~500 MB '
                       r'viewers open .*--time-range.*--format=perfetto.* -f ', err) is not None,
             'chrome refused in one line, exit 1: %d %r' % (cp.returncode, err))
    ck.check(not os.path.exists(out), 'nothing written')
    info = json.loads(run([cyg.exe, 'info', '--format=json', cap]).out)
    dur = int(info['meta']['duration_ns'])
    tenth = '%dns,%dns' % (dur // 2, dur // 2 + dur // 10)
    cp = run([cyg.exe, 'export', '--format=chrome', '--time-range', tenth, '-o', out, cap])
    ck.check(cp.returncode == 0 and os.path.getsize(out) > 0,
             'a tenth of the run passes: %d %r' % (cp.returncode, cp.err))
    pf = os.path.join(d, 't.pftrace')
    cp = run([cyg.exe, 'export', '--format=perfetto', '-o', pf, cap])
    ck.check(cp.returncode == 0 and os.path.getsize(pf) < 500 << 20,
             'perfetto passes: %d %r' % (cp.returncode, cp.err))


TESTS = {'kill20': test_kill20, 'live': test_live, 'stream': test_stream,
         'viewer': test_viewer}


def main():
    return driver_main(TESTS, 'cutoff', __doc__,
                       extra=lambda ap: ap.add_argument('--longrun', required=True))


if __name__ == '__main__':
    sys.exit(main())
