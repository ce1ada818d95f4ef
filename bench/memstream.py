#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""memstream.py - the size of cygprof's memory stream against heaptrack's
file, for the same runs of allocation-heavy programs.

usage: bench/memstream.py [--cygprof PATH] [--baseline PATH] [--quick]
                          [--keep DIR]

Each workload (bench/programs/, built -O2 -g -finstrument-functions) is
recorded once with `cygprof record --memory` and once with `heaptrack`:

  memloop   memloop.c: 4 M malloc/free pairs from 4 call paths, the one
            address reused (8 M events)
  memrand   memrand.c: 3 M random operations (a pool of 4096 blocks, one
            operation in four a malloc/free pair) from 64 call paths, a few
            sizes per path (3.75 M events)
  allocs2   allocs.c 2000000 1: allocs.c with its sizes rounded to powers
            of two (8..20 frames deep, malloc, calloc, realloc)
  allocs    allocs.c 2000000: random sizes (heaptrack's interpreter fails on
            it: std::bad_alloc, its file then holds a fraction of the run)

Printed per workload: the memory events, the `mem` DB (the bytes of its
values, checksums included, and of its pages: branch, leaf and overflow,
from mdb_stat), the capture's growth (its size minus that of the same run
recorded without --memory), heaptrack's .zst file and whether heaptrack
saw every allocation (heaptrack_print's count against the program's), and
the ratios mem values / heaptrack and growth / heaptrack.  --baseline adds
the mem DB of another cygprof (an earlier build: the encoding before).
Sizes, not times: one run is enough (a time is printed for the record).
Needs mdb_stat and mdb_dump (lmdb-utils), heaptrack and heaptrack_print.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

WORKLOADS = [
    # name, program, args, quick args
    ('memloop', 'memloop.c', ['4000000'], ['1000000']),
    ('memrand', 'memrand.c', ['3000000'], ['1000000']),
    ('allocs2', 'allocs.c', ['2000000', '1'], ['500000', '1']),
    ('allocs', 'allocs.c', ['2000000'], ['500000']),
]


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def build(work, src):
    exe = os.path.join(work, os.path.splitext(src)[0])
    if not os.path.exists(exe):
        r = run(['cc', '-O2', '-g', '-finstrument-functions', '-o', exe,
                 os.path.join(HERE, 'programs', src)])
        if r.returncode:
            sys.exit('cannot build %s:\n%s' % (src, r.stderr))
    return exe


def mem_db(cap):
    """(entries, value bytes, page bytes) of the mem DB of capture cap."""
    st = run(['mdb_stat', '-n', '-s', 'mem', cap]).stdout
    pages = sum(int(x) for x in re.findall(r'(?:Branch|Leaf|Overflow) pages: (\d+)', st))
    entries = int(re.search(r'Entries: (\d+)', st).group(1))
    psize = 4096
    env = run(['mdb_stat', '-n', '-e', cap]).stdout
    m = re.search(r'Page size: (\d+)', env)
    if m:
        psize = int(m.group(1))
    dump = run(['mdb_dump', '-n', '-s', 'mem', cap]).stdout
    data = [ln for ln in dump.splitlines() if ln.startswith(' ')]
    vbytes = sum((len(data[i]) - 1) // 2 for i in range(1, len(data), 2))
    return entries, vbytes, pages * psize


def record(cygprof, cap, exe, args, memory):
    t = time.monotonic()
    cmd = [cygprof, 'record'] + (['--memory'] if memory else []) + ['-o', cap, '--', exe] + args
    r = run(cmd)
    if r.returncode:
        sys.exit('%s failed:\n%s' % (' '.join(cmd), r.stderr))
    m = re.search(r'(\d+) memory events', r.stderr)
    return time.monotonic() - t, int(m.group(1)) if m else 0


def heaptrack(work, name, exe, args):
    """(file bytes, allocations heaptrack saw, wall s)"""
    out = os.path.join(work, 'ht-' + name)
    t = time.monotonic()
    run(['heaptrack', '-o', out] + [exe] + args)
    wall = time.monotonic() - t
    zst = out + '.zst'
    if not os.path.exists(zst):
        return None, None, wall
    r = run(['heaptrack_print', '-f', zst, '-p', '0', '-a', '0', '-T', '0', '-l', '0'])
    m = re.search(r'calls to allocation functions: (\d+)', r.stdout)
    return os.path.getsize(zst), int(m.group(1)) if m else None, wall


def program_allocs(exe, args, events):
    """The allocation calls the program says it made, else half the events
    (memloop and memrand free everything they allocate)."""
    r = run([exe] + args)
    m = re.search(r'alloc_calls\s+(\d+)', r.stdout)
    return int(m.group(1)) if m else events // 2


def mb(n):
    return '%.3f' % (n / 1e6) if n is not None else '-'


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--cygprof', default=os.path.join(ROOT, 'build', 'cli', 'cygprof'))
    ap.add_argument('--baseline', help='another cygprof binary: its mem DB too')
    ap.add_argument('--quick', action='store_true', help='shorter runs')
    ap.add_argument('--keep', help='keep the captures and files in this directory')
    a = ap.parse_args()
    for tool in ('mdb_stat', 'mdb_dump', 'heaptrack', 'heaptrack_print'):
        if not shutil.which(tool):
            sys.exit('memstream.py needs %s' % tool)
    work = a.keep or tempfile.mkdtemp(prefix='memstream-')
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for name, src, args, qargs in WORKLOADS:
            args = qargs if a.quick else args
            exe = build(work, src)
            cap = os.path.join(work, name + '.cap')
            plain = os.path.join(work, name + '-nomem.cap')
            wall, events = record(a.cygprof, cap, exe, args, True)
            record(a.cygprof, plain, exe, args, False)
            _, vbytes, pbytes = mem_db(cap)
            growth = os.path.getsize(cap) - os.path.getsize(plain)
            base = None
            if a.baseline:
                bcap = os.path.join(work, name + '-base.cap')
                record(a.baseline, bcap, exe, args, True)
                base = mem_db(bcap)[1]
            hsize, hallocs, hwall = heaptrack(work, name, exe, args)
            want = program_allocs(exe, args, events)
            rows.append((name, ' '.join(args), events, vbytes, pbytes, growth, base, hsize,
                         hallocs, want, wall, hwall))
            print('# %s done' % name, file=sys.stderr)
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)

    print('| workload | args | memory events | mem values MB | mem pages MB | capture growth MB |'
          '%s heaptrack .zst MB | heaptrack saw | mem / heaptrack | growth / heaptrack |'
          ' B/event | record s | heaptrack s |'
          % (' baseline mem MB |' if a.baseline else ''))
    print('|---|---|---:|---:|---:|---:|%s---:|---|---:|---:|---:|---:|---:|'
          % ('---:|' if a.baseline else ''))
    for (name, args, events, vbytes, pbytes, growth, base, hsize, hallocs, want, wall,
         hwall) in rows:
        saw = '-' if hallocs is None else ('all %d allocations' % hallocs if hallocs >= want
                                           else '%d of %d allocations' % (hallocs, want))
        ratio = '%.2f' % (vbytes / hsize) if hsize else '-'
        gratio = '%.2f' % (growth / hsize) if hsize else '-'
        print('| %s | %s | %d | %s | %s | %s |%s %s | %s | %s | %s | %.3f | %.2f | %.2f |'
              % (name, args, events, mb(vbytes), mb(pbytes), mb(growth),
                 (' %s |' % mb(base)) if a.baseline else '', mb(hsize), saw, ratio, gratio,
                 vbytes / max(events, 1), wall, hwall))


if __name__ == '__main__':
    main()
