#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof samples` and `record --rr-ticks`.

Usage:
  rr_ticks.py --cygprof CYGPROF --example PROG --set RR_TICKS_SET --test NAME

PROG is tests/sampling/sampling-prog.c built without -finstrument-functions
(spin() ~300 ms, then nap() 200 ms).  RR_TICKS_SET is tests/rr/rr-ticks-set.c:
it appends copies of a capture's first samples with known rr ticks, the
second one in another thread (tid = pid + 1).

Tests:
  rr-samples-list
                 `samples` of a `record --sample` capture: a header, then one
                 line per sample, in time order; the innermost frame of most
                 of them is spin; --format=json holds as many; --function spin
                 keeps only samples with a spin frame; --limit 3 three;
                 --tid of another thread none; bad options and ranges exit 2
                 with one line, a corrupt capture exits 1 with one line
  rr-commands    rr-ticks-set adds 3 samples with ticks 5000000, 5001000,
                 5002000: `samples --rr` prints for each exactly its block:
                 "#INDEX ... rr ticks T", its frames, "rr replay -p PID", for
                 the other thread "(rr) break FN" and "(rr) continue    # until
                 it stops in Thread PID.TID", then "(rr) seek-ticks T"; the
                 samples without ticks get one line; JSON the same commands
  rr-missing     `record --sample --rr-ticks` where rr's counter is missing
                 (this machine, or CYGPROF_RR_TICKS_FORCE_MISSING where it is
                 not): exactly one warning line "no rr ticks: ...", samples
                 still recorded, and `samples --rr` prints the one line "no rr
                 ticks in this capture: recorded where rr's counter is
                 missing: ..."; a capture recorded without --rr-ticks says so
  rr-software    the kernel path without a PMU: CYGPROF_RR_TICKS_SOFTWARE=1
                 puts the thread's task-clock (ns) in place of rr's counter,
                 read in each sample of sampling-prog-cyg threads (two
                 threads, a forked child) and summed over the CPUs a thread
                 ran on (switch-out reads): every sample has ticks, strictly
                 increasing per thread, the first under 20 ms (counted from
                 the thread's creation), the k-th at least 0.8 (k - 1)
                 periods of CPU time (a known bug lets a thread's count
                 start again once: see the test); the commands name the thread and use
                 -f for the forked child; then sh -c 'PROG; true': the child
                 that exec'd PROG gets rr replay -p
  rr-exec        (root: mounts tracefs in a temporary directory, else skipped)
                 a shell spins, then execs the program: the read at the exec
                 (sched:sched_process_exec) starts the count again, as rr
                 does: ticks go back exactly once, to under 3 periods, and
                 increase before and after
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


class Failure(Exception):
    pass


def run(cmd, cwd, env=None):
    print('$ ' + ' '.join(cmd))
    cp = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL, timeout=120, env=env)
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    if cp.returncode:
        print('  -> exit %d' % cp.returncode)
    for line in cp.err.splitlines()[:10]:
        print('  stderr: ' + line)
    return cp


def check(cond, what):
    if not cond:
        raise Failure(what)


def gdb_name(n):
    """A function name as `break` takes it: C++ names with arguments quoted."""
    return "'%s'" % n if any(c in n for c in ' (<:') else n


def record(a, wd, opts, name='s.data', env=None):
    cp = run([a.cygprof, 'record', '-q'] + opts + ['-o', name, '--', a.example], wd, env)
    check(cp.returncode == 0, 'record exit %d' % cp.returncode)
    return cp


def samples(a, wd, args, rc=0):
    cp = run([a.cygprof, 'samples'] + args, wd)
    check(cp.returncode == rc, 'samples %s: exit %d, not %d' % (args, cp.returncode, rc))
    return cp


def test_list(a, wd):
    record(a, wd, ['--sample=1000'])
    cp = samples(a, wd, ['s.data'])
    lines = cp.out.splitlines()
    check(lines[0].split()[:2] == ['INDEX', 'TIME(s)'], 'no header: %r' % lines[0])
    rows = [l.split(None, 7) for l in lines[1:]]
    check(len(rows) >= 10, 'only %d samples' % len(rows))
    check([int(r[0]) for r in rows] == list(range(len(rows))), 'indexes not 0..n-1')
    times = [float(r[1]) for r in rows]
    check(times == sorted(times), 'times go back')
    spin = sum(1 for r in rows if len(r) > 7 and r[7].split(' <- ')[0] == 'spin')
    check(spin * 2 > len(rows), 'spin innermost in %d of %d samples' % (spin, len(rows)))
    j = json.loads(samples(a, wd, ['--format=json', 's.data']).out)
    check(j['chosen'] == len(rows) == len(j['samples']), 'json has %d samples' % j['chosen'])
    check(j['rr_ticks'] is None, 'rr_ticks meta without --rr-ticks')
    check(all(s['rr_ticks'] is None for s in j['samples']), 'ticks without --rr-ticks')
    f = json.loads(samples(a, wd, ['--format=json', '--function', 'spin', 's.data']).out)
    check(f['chosen'] >= spin, '--function spin kept %d, %d have it innermost'
          % (f['chosen'], spin))
    check(all(any(fr['name'] == 'spin' for fr in s['frames']) for s in f['samples']),
          '--function spin kept a sample without spin')
    lim = samples(a, wd, ['--limit', '3', 's.data']).out.splitlines()
    check(len(lim) == 4, '--limit 3 printed %d lines' % len(lim))
    pid = j['samples'][0]['pid']
    t = samples(a, wd, ['--tid', str(pid + 100000), 's.data']).out
    check(t.splitlines()[1:] == ['s.data: no samples chosen'], '--tid of no thread: %r' % t)
    t0 = json.loads(samples(a, wd, ['--format=json', '--time-range', '0.1,0.2', 's.data']).out)
    check(all(1e8 <= s['t_ns'] <= 2e8 for s in t0['samples']), '--time-range')
    for bad in (['--bogus'], ['--time-range', '2,1'], ['--time-range', 'x'], ['--limit', '0'],
                ['--format=xml'], ['a', 'b']):
        cp = samples(a, wd, bad + ['s.data'] if bad != ['a', 'b'] else bad, rc=2)
        check(cp.out == '' and len(cp.err.splitlines()) == 1, '%s: not one line' % bad)
    with open(os.path.join(wd, 's.data'), 'rb') as src:
        head = src.read(4096)
    with open(os.path.join(wd, 'bad.data'), 'wb') as dst:
        dst.write(head)
    cp = samples(a, wd, ['bad.data'], rc=1)
    check(len(cp.err.splitlines()) == 1 and cp.out == '', 'corrupt: not one line')


def test_commands(a, wd):
    record(a, wd, ['--sample=1000'])
    cp = run([a.set, 's.data', '3', '5000000'], wd)
    check(cp.returncode == 0, 'rr-ticks-set failed')
    added = [tuple(int(x) for x in l.split()) for l in cp.out.splitlines()]
    check(len(added) == 3, 'rr-ticks-set added %d' % len(added))
    j = json.loads(samples(a, wd, ['--rr', '--format=json', 's.data']).out)
    by_index = {s['index']: s for s in j['samples']}
    total = j['chosen']
    out = samples(a, wd, ['--rr', 's.data']).out
    expect = []
    for (index, pid, tid, ticks) in added:
        s = by_index[index]
        check(s['rr_ticks'] == ticks and s['pid'] == pid and s['tid'] == tid,
              'sample %d: %r' % (index, s))
        names = [f['name'] for f in s['frames']]
        cmds = ['rr replay -p %d' % pid]
        if tid != pid:
            named = [n for n in names if not n.startswith('0x') and '+0x' not in n]
            if named:
                cmds.append('(rr) break %s' % gdb_name(named[0]))
            cmds.append('(rr) continue    # until it stops in Thread %d.%d' % (pid, tid))
        cmds.append('(rr) seek-ticks %d' % ticks)
        check(s['rr'] == cmds, 'json commands of %d: %r, not %r' % (index, s['rr'], cmds))
        head = '#%d  %.6f s  pid %d  tid %d (%s)  rr ticks %d' % (
            index, s['t_ns'] / 1e9, pid, tid, s['thread'], ticks)
        shown = names[:4]
        frames = ' <- '.join(shown) + (' <- ...' if len(names) > 4 else '')
        if s.get('overhead'):   # in cygprof's runtime: its frames are its callers
            frames = '[profiler overhead]' + (' <- ' + frames if names else '')
        expect += [head, '    ' + frames] + ['    ' + c for c in cmds]
    expect.append('s.data: %d of the %d samples chosen have no rr ticks: recorded without '
                  "'record --rr-ticks'" % (total - 3, total))
    got = out.splitlines()
    if got != expect:
        print('expected:\n' + '\n'.join(expect) + '\ngot:\n' + '\n'.join(got))
        raise Failure('samples --rr output differs')
    # only the ticked ones chosen: no note line
    last = samples(a, wd, ['--rr', '--tid', str(added[1][2]), 's.data']).out.splitlines()
    check(last[-1] == '    (rr) seek-ticks 5001000', '--tid: %r' % last)


def test_missing(a, wd):
    env = dict(os.environ)
    if os.path.exists('/sys/bus/event_source/devices/cpu'):
        env['CYGPROF_RR_TICKS_FORCE_MISSING'] = 'forced by the test'
    cp = record(a, wd, ['--sample=1000', '--rr-ticks'], env=env)
    warn = [l for l in cp.err.splitlines() if 'rr ticks' in l]
    check(len(warn) == 1, '%d rr ticks warnings' % len(warn))
    check(warn[0].startswith('cygprof: warning: no rr ticks: '), 'warning: %r' % warn[0])
    check(len(cp.err.splitlines()) == 1, 'more than the one warning line')
    j = json.loads(samples(a, wd, ['--format=json', 's.data']).out)
    check(j['chosen'] >= 10, 'only %d samples recorded' % j['chosen'])
    check(j['rr_ticks'].startswith('missing: '), 'meta %r' % j['rr_ticks'])
    why = warn[0][len('cygprof: warning: no rr ticks: '):].split('; the samples')[0]
    out = samples(a, wd, ['--rr', 's.data']).out
    check(out == "s.data: no rr ticks in this capture: recorded where rr's counter is "
          'missing: %s\n' % why, '--rr: %r' % out)
    record(a, wd, ['--sample=1000'], name='plain.data')
    out = samples(a, wd, ['--rr', 'plain.data']).out
    check(out == "plain.data: no rr ticks in this capture: recorded without 'record "
          "--rr-ticks'\n", '--rr without --rr-ticks: %r' % out)


def test_software(a, wd):
    prog = os.path.join(os.path.dirname(a.example), 'sampling-prog-cyg')
    env = dict(os.environ, CYGPROF_RR_TICKS_SOFTWARE='1')
    cp = run([a.cygprof, 'record', '-q', '--sample=1000', '--rr-ticks', '-o', 's.data', '--',
              prog, 'threads'], wd, env)
    check(cp.returncode == 0, 'record exit %d' % cp.returncode)
    # where tracefs is not mounted: one line saying execs are not seen
    check(cp.err == '' or (len(cp.err.splitlines()) == 1 and 'execs not seen' in cp.err),
          'record warned: %r' % cp.err)
    j = json.loads(samples(a, wd, ['--rr', '--format=json', 's.data']).out)
    check(j['rr_ticks'].startswith('counted: task-clock'), 'meta %r' % j['rr_ticks'])
    check(j['chosen'] >= 30, 'only %d samples' % j['chosen'])
    by = {}
    for s in j['samples']:
        check(s['rr_ticks'] is not None, 'sample %d has no ticks' % s['index'])
        by.setdefault((s['pid'], s['tid']), []).append(s)
    root = j['samples'][0]['pid']
    check(len(by) >= 3, 'samples of %d threads' % len(by))
    for (pid, tid), ss in by.items():
        t = [s['rr_ticks'] for s in ss]
        # KNOWN BUG (see the closing note of 2026-12-07): a thread that a
        # loaded machine moves to the other CPU may lose its first CPU's
        # count (a switch-out read taken for a sample), so its ticks start
        # again once; more than one restart, or a run that does not
        # increase, fails
        runs, cur = [], [t[0]] if t else []
        for x in t[1:]:
            if x > cur[-1]:
                cur.append(x)
            else:
                runs.append(cur)
                cur = [x]
        if cur:
            runs.append(cur)
        check(len(runs) <= 2, 'ticks of %d not increasing: %r' % (tid, t))
        if tid != pid or pid != root:
            check(t[0] < 20000000, 'thread %d starts at %d ns' % (tid, t[0]))
        w = ss[0]['weight_ns']
        for run_t in runs:
            for k, x in enumerate(run_t):
                # cpu-clock's hrtimer may fire up to a period early on a
                # busy machine (sample 1 seen at 0.73 ms): a period of slack
                check(x >= 0.8 * (k - 1) * w, 'thread %d: sample %d at %d ns' % (tid, k, x))
        s = ss[-1]
        want = ['rr replay %s %d' % ('-p' if pid == root else '-f', pid)]
        if tid != pid:
            want += ['(rr) break %s' % gdb_name(n) for n in [f['name'] for f in s['frames']
                                                    if not f['name'].startswith('0x')
                                                    and '+0x' not in f['name']][:1]]
            want.append('(rr) continue    # until it stops in Thread %d.%d' % (pid, tid))
        want.append('(rr) seek-ticks %d' % s['rr_ticks'])
        check(s['rr'] == want, 'commands %r, not %r' % (s['rr'], want))
    # a child that exec'd another program: rr replay -p (a debugger at its exec)
    cp = run([a.cygprof, 'record', '-q', '--sample=1000', '--rr-ticks', '-o', 'sh.data', '--',
              '/bin/sh', '-c', a.example + '; true'], wd, env)
    check(cp.returncode == 0, 'record sh exit %d' % cp.returncode)
    j = json.loads(samples(a, wd, ['--rr', '--format=json', '--function', 'spin',
                                   'sh.data']).out)
    check(j['chosen'] >= 10, 'only %d samples in spin' % j['chosen'])
    sh = j['samples'][0]
    check(sh['rr'] == ['rr replay -p %d' % sh['pid'], '(rr) seek-ticks %d' % sh['rr_ticks']],
          'exec\'d child: %r' % sh['rr'])


def test_exec(a, wd):
    tfs = os.path.join(wd, 'tracefs')
    os.mkdir(tfs)
    if os.geteuid() != 0 or subprocess.run(['mount', '-t', 'tracefs', 'nodev', tfs],
                                           stderr=subprocess.DEVNULL).returncode:
        print('SKIP: cannot mount tracefs (needs root)')
        return SKIP
    try:
        env = dict(os.environ, CYGPROF_RR_TICKS_SOFTWARE='1', CYGPROF_TRACEFS=tfs)
        # the shell spins (counted), then execs the program: rr counts from 0 again
        script = 'i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; exec %s' % a.example
        cp = run([a.cygprof, 'record', '-q', '--sample=1000', '--rr-ticks', '-o', 's.data',
                  '--', '/bin/sh', '-c', script], wd, env)
    finally:
        subprocess.run(['umount', tfs])
    check(cp.returncode == 0, 'record exit %d' % cp.returncode)
    check(cp.err == '', 'record warned: %r' % cp.err)
    j = json.loads(samples(a, wd, ['--format=json', 's.data']).out)
    check(j['rr_ticks'] == 'counted: task-clock, a software stand-in for tests, raw 0x1',
          'meta %r' % j['rr_ticks'])
    t = [s['rr_ticks'] for s in j['samples']]
    drops = [k for k in range(1, len(t)) if t[k] < t[k - 1]]
    check(len(drops) == 1, 'ticks went back %d times: %r' % (len(drops), t))
    k = drops[0]
    w = j['samples'][k]['weight_ns']
    check(k >= 10 and len(t) - k >= 10, 'exec at sample %d of %d' % (k, len(t)))
    check(t[k] < 3 * w, 'first ticks after the exec: %d ns' % t[k])
    check(all(x < y for x, y in zip(t[k:], t[k + 1:])), 'ticks after the exec go back')


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--cygprof', required=True)
    p.add_argument('--example', required=True)
    p.add_argument('--set', required=True)
    p.add_argument('--test', required=True)
    a = p.parse_args()
    a.cygprof, a.example, a.set = (os.path.abspath(x) for x in (a.cygprof, a.example, a.set))
    wd = tempfile.mkdtemp(prefix='cygprof-rr-')
    try:
        r = {'rr-samples-list': test_list, 'rr-commands': test_commands,
         'rr-missing': test_missing, 'rr-software': test_software,
         'rr-exec': test_exec}[a.test](a, wd)
        if r == SKIP:
            return SKIP
    except Failure as e:
        print('FAIL: %s' % e)
        return 1
    finally:
        shutil.rmtree(wd, ignore_errors=True)
    print('ok')
    return 0


if __name__ == '__main__':
    sys.exit(main())
