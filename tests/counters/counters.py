#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof record --counters`.

Usage:
  counters.py --cygprof CYGPROF --example EXAMPLE --test NAME --dump HELPER
              [--skip REASON] [-v] [--keep]

EXAMPLE is tests/counters/memdump-prog.c for counters-memdump, else
tests/counters/counters-prog.c (touches 32 MiB, forks a child
that touches 8 MiB and lives ~60 ms, runs ~520 ms); HELPER is
tests/counters/counters-dump.c, which prints a capture's counters as JSON
lines ({"duration_ns", "instruments"}, then {"name", "pid", "unit", "samples"} each).

Tests:
  counters-5ms   record --counters=5ms: the meminfo counters are the
                 system's (pid null), MemTotal constant and > 0; every
                 counter's times strictly increase and lie within the
                 capture's duration; the program's statm/resident is > 0 and
                 grows by at least 32 MiB; the forked child has its own statm
                 and stat/cpu_time rows with its pid; the sample counts are
                 about duration / interval; the meta "instruments" says
                 calls,counters
  counters-default  --counters without a value samples every 10 ms (fewer
                 samples than at 5 ms, still several); without --counters
                 the capture has none
  counters-killed  cygprof SIGKILLed 1.4 s into a 1.7 s run at 5 ms: the
                 capture it left holds the counters and the samples of its
                 commits and checkpoint (at least 20 of MemTotal and of the
                 program's statm/resident)
  counters-memdump  --memdump alone: the mapping says CYG_F_MEMDUMP and
                 10 ms, only memdump/<name> counters of the program's pid
                 are stored: Cache with totals ending in the value set just
                 before exit (the final read), Nodes with the sum of its
                 deltas; a slot never reported and the slots with bad names
                 get none; with --counters=5ms the interval is 5 ms and the
                 /proc counters are there too
  counters-memdump-names  memdump-names.c through libcygprof-memdump, run
                 alone and under record --memdump: the same return values
                 (0 for "Größe", "Max", a 47-byte name; -1 and EINVAL for
                 "", "a\\nb", a tab, an ESC, a C1 control, bytes that are not
                 UTF-8, a 48-byte name, NULL); record warns of nothing;
                 `counters` JSON has exactly memdump/Größe [777],
                 memdump/Max [UINT64_MAX] and the 47-byte name [47], the
                 text shows them on their lines (777 B; UINT64_MAX
                 humanised, never negative), the CSV 18446744073709551615
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status  # noqa: E402

MEMINFO = ('MemTotal', 'MemFree', 'MemAvailable', 'Buffers', 'Cached', 'SwapTotal', 'SwapFree',
           'Dirty')
PROC = ('statm/size', 'statm/resident', 'statm/shared', 'statm/text', 'statm/data',
        'stat/cpu_time')
MiB = 1 << 20


def record(ck, cyg, example, args, opts, name='cap.data'):
    cap = os.path.join(cyg.workdir, name)
    cp = cyg.record(cap, [example], opts)
    if cp.returncode != 0:
        raise Failure('record %s failed (%s): %s' % (' '.join(opts), describe_status(cp.returncode),
                                                     cp.err.strip()))
    child = None
    for line in cp.out.splitlines():
        if line.startswith('counters-prog: child='):
            child = int(line.split('=')[1])
    cp = run([args.dump, cap])
    if cp.returncode != 0:
        raise Failure('counters-dump failed: %s' % cp.err.strip())
    lines = [json.loads(x) for x in cp.out.splitlines()]
    record.instruments = lines[0]['instruments']
    return cap, child, lines[0]['duration_ns'], lines[1:]


def check_times(ck, counters, duration):
    for c in counters:
        t = [s[0] for s in c['samples']]
        ck.check(all(a < b for a, b in zip(t, t[1:])),
                 '%s (pid %s): times strictly increase' % (c['name'], c['pid']))
        ck.check(all(0 <= x <= duration for x in t),
                 '%s (pid %s): times within the capture (0..%d): %s' %
                 (c['name'], c['pid'], duration, t[:3] + ['...'] + t[-3:]))


def test_5ms(ck, cyg, example, args):
    cap, child, duration, counters = record(ck, cyg, example, args, ['--counters=5ms'])
    ck.check(duration and duration >= 100 * 10**6, 'duration %s >= 100 ms' % duration)
    ck.check(child, 'the program printed its child pid')
    byname = {}
    for c in counters:
        byname.setdefault(c['name'], []).append(c)
    for f in MEMINFO:
        rows = byname.get('meminfo/' + f, [])
        if not ck.eq(len(rows), 1, 'meminfo/%s rows' % f):
            continue
        ck.eq(rows[0]['pid'], None, 'meminfo/%s pid' % f)
        ck.eq(rows[0]['unit'], 'bytes', 'meminfo/%s unit' % f)
        n = len(rows[0]['samples'])
        # roughly duration / interval; loose: a loaded machine delays ticks
        ck.check(n >= max(3, duration // (5 * 10**6) // 4),
                 'meminfo/%s: %d samples over %d ns at 5 ms' % (f, n, duration))
    total = byname.get('meminfo/MemTotal', [{'samples': []}])[0]['samples']
    vals = set(v for _, v in total)
    ck.check(len(vals) == 1 and min(vals) > 0, 'MemTotal constant and > 0: %s' % sorted(vals))
    check_times(ck, counters, duration)

    pids = set(c['pid'] for c in counters if c['pid'] is not None)
    ck.eq(len(pids), 2, 'processes with counters (the program and its child): %s' % pids)
    ck.check(child in pids, 'the child %s has its own counters' % child)
    for pid in pids:
        for name in PROC:
            rows = [c for c in byname.get(name, []) if c['pid'] == pid]
            ck.eq(len(rows), 1, '%s rows of pid %d' % (name, pid))
            if rows:
                ck.eq(rows[0]['unit'], 'ns' if name == 'stat/cpu_time' else 'bytes',
                      '%s unit' % name)
                ck.check(len(rows[0]['samples']) >= 3, '%s of pid %d: %d samples >= 3' %
                         (name, pid, len(rows[0]['samples'])))
    main = [p for p in pids if p != child]
    if main:
        res = [c for c in byname.get('statm/resident', []) if c['pid'] == main[0]][0]['samples']
        vals = [v for _, v in res]
        ck.check(vals and min(vals) > 0, 'statm/resident of the program > 0')
        # the resident set is not additive (pages of the loader's and the
        # runtime's start can leave it meanwhile: CI once saw 31.4 MiB of
        # growth from a 2 MiB first sample), the data size is
        ck.check(vals and max(vals) - vals[0] >= 30 * MiB,
                 'statm/resident of the program grows by >= 30 MiB: %s .. %s' %
                 (vals[:1], max(vals) if vals else None))
        data = [v for _, v in [c for c in byname.get('statm/data', [])
                               if c['pid'] == main[0]][0]['samples']]
        ck.check(data and max(data) - data[0] >= 32 * MiB,
                 'statm/data of the program grows by >= 32 MiB: %s .. %s' %
                 (data[:1], max(data) if data else None))
        cpu = [c for c in byname.get('stat/cpu_time', []) if c['pid'] == main[0]][0]['samples']
        cv = [v for _, v in cpu]
        ck.check(all(a <= b for a, b in zip(cv, cv[1:])), 'stat/cpu_time never decreases')
    if child in pids:
        # the child lives ~60 ms of the ~520: its samples end before the program's
        t_child = [c['samples'][-1][0] for c in byname.get('statm/resident', [])
                   if c['pid'] == child]
        t_main = [c['samples'][-1][0] for c in byname.get('statm/resident', [])
                  if c['pid'] != child]
        ck.check(t_child and t_main and t_child[0] < t_main[0],
                 'the child is sampled for its lifetime only: last %s < %s' % (t_child, t_main))
    ck.eq(record.instruments, 'calls,counters', 'meta instruments')


def test_default(ck, cyg, example, args):
    _, _, duration, counters = record(ck, cyg, example, args, ['--counters'])
    mt = [c for c in counters if c['name'] == 'meminfo/MemTotal']
    if ck.eq(len(mt), 1, 'meminfo/MemTotal rows'):
        n = len(mt[0]['samples'])
        ck.check(3 <= n <= duration // (10 * 10**6) + 2,
                 'at 10 ms: %d samples over %d ns' % (n, duration))
    check_times(ck, counters, duration)
    _, _, _, counters = record(ck, cyg, example, args, [], name='plain.data')
    ck.eq(counters, [], 'counters without --counters')
    ck.eq(record.instruments, 'calls', 'meta instruments without --counters')


def test_killed(ck, cyg, example, args):
    import subprocess
    import time
    cap = os.path.join(cyg.workdir, 'killed.data')
    outpath = os.path.join(cyg.workdir, 'stdout')
    cmd = [cyg.exe, 'record', '-o', cap, '--counters=5ms', '--', example, '1500']
    print('$ ' + ' '.join(cmd))
    with open(outpath, 'wb') as out:
        p = subprocess.Popen(cmd, cwd=cyg.workdir, stdout=out, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL)
    prog = None
    try:
        time.sleep(1.4)
        ck.check(p.poll() is None, 'cygprof still runs after 1.4 s')
        p.kill()
        p.wait()
        with open(outpath) as f:
            for line in f.read().splitlines():
                if line.startswith('counters-prog: pid='):
                    prog = int(line.split('=')[1])
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if prog:
            try:
                os.kill(prog, 9)
            except OSError:
                pass
    ck.check(prog, 'the program printed its pid')
    dp = run([args.dump, cap])
    if not ck.eq(dp.returncode, 0, 'counters-dump of the capture of a killed collector'):
        return
    counters = [json.loads(x) for x in dp.out.splitlines()][1:]
    mt = [c for c in counters if c['name'] == 'meminfo/MemTotal']
    res = [c for c in counters if c['name'] == 'statm/resident' and c['pid'] == prog]
    for what, rows in (('meminfo/MemTotal', mt), ('statm/resident of the program', res)):
        if ck.eq(len(rows), 1, '%s rows' % what):
            ck.check(len(rows[0]['samples']) >= 20,
                     '%s: %d samples kept >= 20' % (what, len(rows[0]['samples'])))


def test_memdump(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'md.data')
    for opts, ms, instruments in ((['--memdump'], 10, 'calls,memdump'),
                                  (['--counters=5ms', '--memdump'], 5, 'calls,counters,memdump')):
        cp = cyg.record(cap, [example], opts)
        if not ck.eq(cp.returncode, 0, 'record %s exit' % ' '.join(opts)):
            continue
        ck.check('memdump-prog: memdump_ms=%d flags=' % ms in cp.out,
                 'memdump_ms %d in the mapping: %r' % (ms, cp.out))
        flags = int(cp.out.split('flags=')[1].split()[0]) if 'flags=' in cp.out else 0
        ck.check(flags & 16, 'CYG_F_MEMDUMP set: %d' % flags)
        dp = run([args.dump, cap])
        if not ck.eq(dp.returncode, 0, 'counters-dump exit'):
            continue
        lines = [json.loads(x) for x in dp.out.splitlines()]
        duration, counters = lines[0]['duration_ns'], lines[1:]
        ck.eq(lines[0]['instruments'], instruments, 'meta instruments')
        md = dict((c['name'], c) for c in counters if c['name'].startswith('memdump/'))
        ck.eq(sorted(md), ['memdump/Cache', 'memdump/Nodes'], 'memdump counters')
        others = [c['name'] for c in counters if not c['name'].startswith('memdump/')]
        if opts == ['--memdump']:
            ck.eq(others, [], 'no /proc counters without --counters')
        else:
            ck.check('meminfo/MemTotal' in others and 'statm/resident' in others,
                     '/proc counters with --counters: %s' % others)
        check_times(ck, counters, duration)
        if sorted(md) != ['memdump/Cache', 'memdump/Nodes']:
            continue
        ck.check(md['memdump/Cache']['pid'] is not None, 'memdump/Cache has the pid')
        ck.eq(md['memdump/Cache']['unit'], 'bytes', 'memdump unit')
        cache = [v for _, v in md['memdump/Cache']['samples']]
        nodes = [v for _, v in md['memdump/Nodes']['samples']]
        ck.eq(cache[-1:], [123456], 'memdump/Cache last value (the final read)')
        ck.check(set(cache) <= set([i * 1000 for i in range(1, 11)] + [123456]) and
                 cache == sorted(cache), 'memdump/Cache: the totals reported, in order: %s' % cache)
        ck.check(len(cache) >= 3, 'memdump/Cache: %d samples >= 3' % len(cache))
        ck.eq(nodes[-1:], [640], 'memdump/Nodes last value (sum of the deltas)')
        ck.check(all(v % 64 == 0 for v in nodes) and nodes == sorted(nodes),
                 'memdump/Nodes: sums of the deltas: %s' % nodes)


NAMES_EXPECT = [('utf8', 0), ('max', 0), ('long47', 0), ('long48', -1), ('empty', -1),
                ('newline', -1), ('tab-delta', -1), ('esc', -1), ('c1', -1), ('badutf8', -1),
                ('overlong', -1), ('null', -1)]


def names_lines(ck, out, how):
    einval = [int(x.split('=')[1]) for x in out.splitlines() if x.startswith('EINVAL=')]
    ck.eq(len(einval), 1, '%s: EINVAL printed' % how)
    want = ['%s rc=%d errno=%d' % (label, rc, einval[0] if rc and einval else 0)
            for label, rc in NAMES_EXPECT] + ['needs-empty 0']
    got = [x for x in out.splitlines() if not x.startswith('EINVAL=')]
    ck.eq(got, want, '%s: return values and errno' % how)


def test_memdump_names(ck, cyg, example, args):
    cp = run([example])
    ck.eq(cp.returncode, 0, 'alone: exit status')
    names_lines(ck, cp.out, 'alone')
    cap = os.path.join(cyg.workdir, 'names.data')
    cp = cyg.record(cap, [example], ['--memdump'])
    if cp.returncode != 0:
        raise Failure('record --memdump failed (%s): %s' % (describe_status(cp.returncode),
                                                            cp.err.strip()))
    names_lines(ck, cp.out, 'recorded')
    ck.check('shared memory' not in cp.err and 'warning' not in cp.err,
             'record warns of nothing: %r' % cp.err)
    n47 = 'memdump/' + 'n' * 47
    cp = run([cyg.exe, 'counters', '--format=json', cap])
    ck.eq(cp.returncode, 0, 'counters --format=json exit status')
    ck.check('warning' not in cp.err, 'counters --format=json warns of nothing: %r' % cp.err)
    got = dict((c['name'], [v for _, v in c['samples']])
               for c in json.loads(cp.out)['counters'] if c['name'].startswith('memdump/'))
    ck.eq(got, {'memdump/Größe': [777], 'memdump/Max': [2**64 - 1], n47: [47]},
          'memdump counters and their samples (JSON)')
    cp = run([cyg.exe, 'counters', cap])
    ck.eq(cp.returncode, 0, 'counters exit status')
    ck.check('warning' not in cp.err, 'counters warns of nothing: %r' % cp.err)
    rows = dict((x.split()[0], x.split()) for x in cp.out.splitlines() if x.startswith('memdump/'))
    ck.eq(sorted(rows), sorted(['memdump/Größe', 'memdump/Max', n47]), 'text rows')
    # name pid samples min max last unit: "777 B" is two words
    if 'memdump/Größe' in rows:
        ck.eq(rows['memdump/Größe'][2:10], ['1', '777', 'B', '777', 'B', '777', 'B', 'bytes'],
              'memdump/Größe text: samples, min, max, last, unit')
    if 'memdump/Max' in rows:
        ck.eq(rows['memdump/Max'][2:10], ['1'] + ['16777216.0', 'TiB'] * 3 + ['bytes'],
              'memdump/Max text: UINT64_MAX humanised, not negative')
    cp = run([cyg.exe, 'counters', '--format=csv', cap])
    ck.check(any(x.startswith('memdump/Max,') and x.endswith(',18446744073709551615')
                 for x in cp.out.splitlines()), 'CSV: memdump/Max is 18446744073709551615')


TESTS = {'counters-5ms': test_5ms, 'counters-default': test_default,
         'counters-killed': test_killed, 'counters-memdump': test_memdump,
         'counters-memdump-names': test_memdump_names}


def main():
    return cygtest.driver_main(TESTS, 'counters', __doc__, extra=lambda ap: ap.add_argument(
        '--dump', required=True, help='tests/counters/counters-dump'))


if __name__ == '__main__':
    sys.exit(main())
