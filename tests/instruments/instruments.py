#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of instruments, counters and the memory-dump API.

Usage:
  instruments.py --cygprof CYGPROF --example EXE --test NAME [--memdump EXE]
                 [--skip REASON] [-v] [--keep]

Each test records an example (examples/memgrow.c, examples/memdump.c) with
`record -i ...` and reads `cygprof counters --format=json` (the JSON
contract: {"counters": [{"name", "pid", "unit", "samples": [[t_ns, v]]}]}),
`cygprof memory` and `cygprof info` back, checking the figures the
examples state in their comment blocks.  Exit status: 0 passed, 1 failed,
77 skipped.  Helpers come from tests/lib/cygtest.py.
"""

import json
import os
import sys
import xml.dom.minidom

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status  # noqa: E402

MIB = 1024 * 1024
MEMINFO = ('MemTotal', 'MemFree', 'MemAvailable', 'Buffers', 'Cached', 'SwapFree', 'Dirty')
STATM = ('size', 'resident', 'shared', 'text', 'data')


def record(ck, cyg, cap, prog, opts):
    cp = cyg.record(cap, prog, opts)
    ck.eq(describe_status(cp.returncode), 'exit 0',
          'record %s %s' % (' '.join(opts), ' '.join(os.path.basename(a) for a in prog)))
    return cp


def counters_json(ck, cyg, cap):
    cp = run([cyg.exe, 'counters', '--format=json', cap])
    if cp.returncode != 0:
        raise Failure('counters --format=json failed (%s): %s' %
                      (describe_status(cp.returncode), cp.err.strip()))
    try:
        return json.loads(cp.out)['counters']
    except (ValueError, KeyError) as e:
        raise Failure('counters --format=json: not the JSON contract: %s' % e)


def info_json(cyg, cap):
    cp = run([cyg.exe, 'info', '--format=json', cap])
    if cp.returncode != 0:
        raise Failure('info --format=json failed: %s' % cp.err.strip())
    return json.loads(cp.out)


def series(counters, name, pid):
    got = [c for c in counters if c['name'] == name and c['pid'] == pid]
    if len(got) != 1:
        raise Failure('%d counters %s of pid %s (want 1)' % (len(got), name, pid))
    return [v for _, v in got[0]['samples']], [t for t, _ in got[0]['samples']], got[0]


def check_contract(ck, counters, duration_ns):
    """Every counter: its keys, a known unit, times increasing inside the
    capture."""
    bad = []
    for c in counters:
        if set(c) != {'name', 'pid', 'unit', 'samples'} or c['unit'] not in ('bytes', 'ns', 'count'):
            bad.append('%s: keys %s unit %r' % (c.get('name'), sorted(c), c.get('unit')))
            continue
        ts = [t for t, _ in c['samples']]
        if not ts or any(b <= a for a, b in zip(ts, ts[1:])) or ts[0] < 0 or ts[-1] > duration_ns:
            bad.append('%s (pid %s): times %s..%s not increasing within [0, %d]' %
                       (c['name'], c['pid'], ts[:1], ts[-1:], duration_ns))
    ck.check(not bad, 'every counter has the contract\'s keys and increasing times (%s)' %
             '; '.join(bad[:3]))


def proc_pids(info):
    return [p['pid'] for p in info['processes']]


def test_memgrow(ck, cyg, example, args):
    """64 MiB touched: the program's resident set grows by it, its heap
    peaks at exactly it, the system's counters are there."""
    cap = os.path.join(cyg.workdir, 'grow.data')
    record(ck, cyg, cap, [example], ['-i', 'counters,memory', '--counters=5ms'])
    info = info_json(cyg, cap)
    dur = int(info['meta']['duration_ns'])
    ctr = counters_json(ck, cyg, cap)
    check_contract(ck, ctr, dur)
    pid = proc_pids(info)[0]
    for f in MEMINFO:
        vals, _, c = series(ctr, 'meminfo/' + f, None)
        ck.eq(c['unit'], 'bytes', 'meminfo/%s in bytes' % f)
    total, _, _ = series(ctr, 'meminfo/MemTotal', None)
    ck.check(min(total) == max(total) > 64 * MIB, 'MemTotal constant and above 64 MiB (%s)' %
             sorted(set(total))[:3])
    free, _, _ = series(ctr, 'meminfo/MemFree', None)
    ck.check(all(0 < v <= total[0] for v in free), 'MemFree within (0, MemTotal]')
    for f in STATM:
        series(ctr, 'statm/' + f, pid)
    res, ts, _ = series(ctr, 'statm/resident', pid)
    # 64 MiB touched; other pages of the process (mapped files) may leave
    # memory meanwhile on a loaded machine: one MiB of slack
    ck.check(max(res) - min(res) >= 63 * MIB,
             'statm/resident grows by at least 63 MiB (min %d, max %d)' % (min(res), max(res)))
    ck.check(len(ts) >= 20, 'about duration/5ms samples (%d over %.0f ms)' % (len(ts), dur / 1e6))
    cpu, _, c = series(ctr, 'stat/cpu_time', pid)
    ck.eq(c['unit'], 'ns', 'stat/cpu_time in ns')
    ck.check(all(b >= a for a, b in zip(cpu, cpu[1:])), 'stat/cpu_time never decreases')
    heap, _, _ = series(ctr, 'heap/live_bytes', pid)
    ck.eq(max(heap), 64 * MIB, 'heap/live_bytes peaks at exactly 64 MiB')
    cp = run([cyg.exe, 'memory', '--format=json', cap])
    peak = json.loads(cp.out)['totals']['peak_bytes'] if cp.returncode == 0 else None
    ck.eq(max(heap), peak, 'heap/live_bytes peak = cygprof memory\'s peak_bytes')
    blocks, _, c = series(ctr, 'heap/live_blocks', pid)
    ck.eq((max(blocks), c['unit']), (1, 'count'), 'heap/live_blocks: one block at most')
    ck.eq(info.get('instruments'), ['calls', 'memory', 'counters'],
          'info lists the instruments recorded')
    # text: one line per counter, with the header
    cp = run([cyg.exe, 'counters', cap])
    ck.eq(cp.returncode, 0, 'counters (text) exits 0')
    lines = [l for l in cp.out.splitlines() if l.startswith(('meminfo/', 'statm/', 'stat/', 'heap/'))]
    ck.eq(len(lines), len(ctr), 'text: one line per counter')
    row = [l for l in lines if l.startswith('heap/live_bytes')]
    ck.check(row and '64.0 MiB' in row[0], 'text: heap/live_bytes max 64.0 MiB (%r)' % row[:1])
    # CSV: the same samples
    cp = run([cyg.exe, 'counters', '--format=csv', cap])
    rows = cp.out.splitlines()
    ck.eq(rows[:1], ['name,pid,unit,t_ns,value'], 'csv: header')
    ck.eq(len(rows) - 1, sum(len(c['samples']) for c in ctr), 'csv: one row per sample')


def test_fork(ck, cyg, example, args):
    """A forked child has counter rows of its own, sampled while it lived;
    the SVG has one row for the system and one per process."""
    cap = os.path.join(cyg.workdir, 'fork.data')
    record(ck, cyg, cap, [example, 'fork'], ['-i', 'counters', '--memory', '--counters=5ms'])
    info = info_json(cyg, cap)
    pids = proc_pids(info)
    ck.eq(len(pids), 2, 'two processes')
    if len(pids) != 2:
        return
    ctr = counters_json(ck, cyg, cap)
    check_contract(ck, ctr, int(info['meta']['duration_ns']))
    child = info['processes'][1]
    for name in ['statm/' + f for f in STATM] + ['stat/cpu_time', 'heap/live_bytes']:
        series(ctr, name, child['pid'])
    _, ts, _ = series(ctr, 'statm/resident', child['pid'])
    _, pts, _ = series(ctr, 'statm/resident', pids[0])
    ck.check(ts[0] > pts[0] and ts[-1] < pts[-1],
             'the child\'s samples lie inside the parent\'s (%d..%d in %d..%d)' %
             (ts[0], ts[-1], pts[0], pts[-1]))
    ck.check(len(ts) < len(pts), 'the child has fewer samples than the parent')
    heap, _, _ = series(ctr, 'heap/live_bytes', child['pid'])
    ck.eq(max(heap), 16 * MIB, 'the child\'s heap peaks at exactly 16 MiB')
    heap, _, _ = series(ctr, 'heap/live_bytes', pids[0])
    ck.eq(max(heap), 64 * MIB, 'the parent\'s heap peaks at exactly 64 MiB')

    svg = os.path.join(cyg.workdir, 'c.svg')
    cp = run([cyg.exe, 'counters', '--plot', svg, cap])
    ck.eq(cp.returncode, 0, 'counters --plot exits 0')
    ck.eq(cp.out, '', 'counters --plot writes only the plot')
    cp = run([cyg.exe, 'counters', '--plot', svg, '--format=csv', cap])
    ck.check(cp.returncode == 0 and cp.out.count('\n') > 3,
             'counters --plot --format=csv: the plot and the CSV')
    try:
        doc = xml.dom.minidom.parse(svg)
    except Exception as e:  # noqa: BLE001 (any parse error fails the check)
        raise Failure('the SVG does not parse as XML: %s' % e)
    rows = [g for g in doc.getElementsByTagName('g') if g.getAttribute('class') == 'row']
    owners = [g.getAttribute('data-owner') for g in rows]
    ck.eq(len(rows), 3, 'SVG: one row for the system and one per process (%s)' % owners)
    ck.check(owners[:1] == ['system'] and all('pid %d' % p in o for p, o in zip(pids, owners[1:])),
             'SVG rows: system, then each process by pid (%s)' % owners)
    labels = {t.firstChild.data for t in doc.getElementsByTagName('text')
              if t.getAttribute('class') == 'label'}
    ck.check({'statm/resident', 'heap/live_bytes', 'meminfo/MemFree'} <= labels,
             'SVG: lines named at their end (%s)' % sorted(labels)[:6])
    # the system's bytes (MemTotal: GiB, Buffers or Dirty: MiB) are more
    # than two decades apart: a log scale, on which no series above 0 lies
    # flat on the axis as it would on a linear one
    sysrow = rows[0] if rows else None
    panels = sysrow.getElementsByTagName('g') if sysrow else []
    logs = [g for g in panels if g.getAttribute('class') == 'panel' and
            g.getAttribute('data-scale') == 'log']
    ck.eq(len(logs), 1, 'SVG: the system\'s bytes panel on a log scale')
    if logs:
        g = logs[0]
        rect = g.getElementsByTagName('rect')[0]
        bottom = float(rect.getAttribute('y')) + float(rect.getAttribute('height'))
        peak = {c['name']: max([v for _, v in c['samples']] or [0]) for c in ctr
                if c['pid'] is None}
        flat = []
        for pl in g.getElementsByTagName('polyline'):
            name = pl.getElementsByTagName('title')[0].firstChild.data
            ys = [float(pt.split(',')[1]) for pt in pl.getAttribute('points').split()]
            if peak.get(name, 0) > 0 and ys and min(ys) > bottom - 5:
                flat.append(name)
        ck.eq(flat, [], 'SVG log scale: every series above 0 drawn off the axis')
    # an SVG may replace only an SVG
    other = os.path.join(cyg.workdir, 'notes.txt')
    with open(other, 'w') as f:
        f.write('keep me\n')
    cp = run([cyg.exe, 'counters', '--plot', other, cap])
    ck.check(cp.returncode == 1 and open(other).read() == 'keep me\n',
             '--plot refuses to replace a file that is not an SVG (exit %d)' % cp.returncode)


def test_memdump(ck, cyg, example, args):
    """The memdump example's subsystems with the totals and deltas it
    applied (examples/memdump.c)."""
    if not args.memdump:
        print('SKIP: the memdump example was not built')
        sys.exit(cygtest.SKIP)
    prog = os.path.abspath(args.memdump)
    cap = os.path.join(cyg.workdir, 'md.data')
    cp = record(ck, cyg, cap, [prog], ['-i', 'memdump'])
    ck.eq(cp.out.strip(), 'memdump: cache=327680 nodes=38400', 'the example\'s own line')
    info = info_json(cyg, cap)
    ck.eq(info.get('instruments'), ['calls', 'memdump'], 'info lists calls and memdump')
    ctr = counters_json(ck, cyg, cap)
    pid = proc_pids(info)[0]
    check_contract(ck, ctr, int(info['meta']['duration_ns']))
    cache, _, c = series(ctr, 'memdump/Cache', pid)
    ck.eq(c['unit'], 'bytes', 'memdump/Cache in bytes')
    steps = [65536 * k for k in range(6)]
    ck.eq(cache[-1], 327680, 'memdump/Cache: the last total reported')
    ck.check(set(cache) <= set(steps) and all(b >= a for a, b in zip(cache, cache[1:])),
             'memdump/Cache: only totals the program reported, never decreasing (%s)' % cache)
    # each phase lasts 6 dump rounds; a collector slowed down (a sanitized
    # build on a busy machine) may miss one, never most
    ck.check(len(set(steps[1:]) & set(cache)) >= 3,
             'memdump/Cache: the phases seen (%s)' % sorted(set(cache)))
    nodes, _, _ = series(ctr, 'memdump/Nodes', pid)
    ck.eq(nodes[-1], 38400, 'memdump/Nodes: the sum of the deltas (600 * 64)')
    ck.check(all(0 <= v <= 64000 and v % 64 == 0 for v in nodes),
             'memdump/Nodes: partial sums of +-64 within [0, 64000]')
    ck.check(not any(c['name'].startswith(('meminfo/', 'statm/')) for c in ctr),
             'no sampled counters without -i counters')
    # the same program without the instrument: no memdump counters, one line
    cap2 = os.path.join(cyg.workdir, 'plain.data')
    record(ck, cyg, cap2, [prog], [])
    cp = run([cyg.exe, 'counters', cap2])
    ck.check(cp.returncode == 1 and cp.err.count('\n') == 1 and '-i counters' in cp.err,
             'counters on a capture without them: one line naming -i counters (%r)' % cp.err)


def test_instruments(ck, cyg, example, args):
    """Instruments discovered from captures; -i and the old flags alike;
    commands name the option that records what they lack."""
    cases = [([], ['calls']),
             (['-i', 'timeline'], ['calls', 'timeline']),
             (['--timeline', '--memory'], ['calls', 'timeline', 'memory']),
             (['-i', 'memory,counters', '--counters=20ms'], ['calls', 'memory', 'counters'])]
    for i, (opts, want) in enumerate(cases):
        cap = os.path.join(cyg.workdir, 'i%d.data' % i)
        record(ck, cyg, cap, [example], opts)
        ck.eq(info_json(cyg, cap).get('instruments'), want, 'info after record %s' % ' '.join(opts))
        cp = run([cyg.exe, 'info', cap])
        for name in want:
            ck.check(any(l.startswith('  %s ' % name) for l in cp.out.splitlines()),
                     'info text lists %s' % name)
    plain = os.path.join(cyg.workdir, 'i0.data')
    for cmd, what in (('replay', '-i timeline'), ('memory', '-i memory'), ('counters', '-i counters')):
        cp = run([cyg.exe, cmd, plain])
        ck.check(cp.returncode == 1 and cp.err.count('\n') == 1 and what in cp.err,
                 '%s on a calls-only capture: one line naming %s (%r)' % (cmd, what, cp.err))
    cp = run([cyg.exe, 'record', '-i', 'memory,nonsense', '--', example])
    ck.check(cp.returncode == 2 and 'nonsense' in cp.err and cp.err.count('\n') == 1,
             'record -i with an unknown instrument: usage error naming it (%r)' % cp.err)


TESTS = {
    'counters-memgrow': test_memgrow,
    'counters-fork': test_fork,
    'memdump': test_memdump,
    'discovered': test_instruments,
}


def extra(ap):
    ap.add_argument('--memdump', help='the memdump example')


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'instr', __doc__, extra))
