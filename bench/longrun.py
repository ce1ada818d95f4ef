#!/usr/bin/env python3
"""longrun.py - a long recording at full rate: is the collector bounded?

Not a test (it runs for minutes): records programs/hourlong.c, built with
-finstrument-functions, with `record --timeline --memory` for SECONDS
(default 600), and samples once a second the collector's resident memory
(the `cygprof record` process: VmRSS) and the capture's size on disk.  It
prints one row per minute (and the last), then the totals: rounds, events
(timeline and memory, from `cygprof info --format=json`), capture bytes
per event, and the rate of rounds against the same binary run alone for
10 s in the same run (so the ratio is measured on the same machine load).

    python3 bench/longrun.py [--seconds 600] [--cygprof build/cli/cygprof] [--dir DIR]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rss_kb(pid):
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def dir_bytes(d):
    n = 0
    for name in os.listdir(d):
        try:
            n += os.stat(os.path.join(d, name)).st_blocks * 512
        except OSError:
            pass
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--seconds', type=float, default=600)
    ap.add_argument('--cygprof', default=os.path.join(ROOT, 'build', 'cli', 'cygprof'))
    ap.add_argument('--dir', help='where the capture goes (default: a temporary directory)')
    a = ap.parse_args()
    work = a.dir or tempfile.mkdtemp(prefix='cygprof-longrun-')
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, 'hourlong')
    subprocess.run(['gcc', '-O2', '-g', '-finstrument-functions', '-o', prog,
                    os.path.join(ROOT, 'bench', 'programs', 'hourlong.c')], check=True)

    alone = subprocess.run([prog, '10'], stdout=subprocess.PIPE, text=True, check=True)
    alone_rate = int(re.search(r'rounds=(\d+)', alone.stdout).group(1)) / 10.0

    capdir = os.path.join(work, 'cap')
    os.makedirs(capdir, exist_ok=True)
    cap = os.path.join(capdir, 'long.data')
    t0 = time.monotonic()
    p = subprocess.Popen([a.cygprof, 'record', '-f', '--timeline', '--memory', '-o', cap, '--',
                          prog, str(a.seconds)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    rows = []
    peak = 0
    next_row = 60.0
    while p.poll() is None:
        time.sleep(1.0)
        el = time.monotonic() - t0
        r = rss_kb(p.pid)
        if not r:
            break  # record has ended
        peak = max(peak, r)
        if el >= next_row:
            rows.append((el, r, peak, dir_bytes(capdir)))
            print('%6.0f s  collector RSS %7.1f MB (peak %7.1f MB)  capture %9.1f MB'
                  % (el, r / 1024, peak / 1024, rows[-1][3] / 1e6), flush=True)
            next_row += 60.0
    out, err = p.communicate()
    wall = time.monotonic() - t0
    if p.returncode:
        sys.exit('record failed (%d): %s' % (p.returncode, err.strip()))
    rounds = int(re.search(r'rounds=(\d+)', out).group(1))
    info = json.loads(subprocess.run([a.cygprof, 'info', '--format=json', cap],
                                     stdout=subprocess.PIPE, text=True, check=True).stdout)
    size = os.path.getsize(cap)
    ev = info.get('events', 0)
    mev = info.get('memory_events')
    print('seconds %.0f (wall %.1f s); rounds %d; %.2f M rounds/s recorded vs %.2f M alone '
          '(%.2fx slower)' % (a.seconds, wall, rounds, rounds / a.seconds / 1e6,
                              alone_rate / 1e6, alone_rate / (rounds / a.seconds)))
    print('collector peak RSS %.1f MB; RSS at the first minute %s, at the end %.1f MB'
          % (peak / 1024, '%.1f MB' % (rows[0][1] / 1024) if rows else '-',
             (rows[-1][1] / 1024) if rows else 0))
    print('capture %.1f MB; timeline events %d (%.3f bytes each over the whole capture)%s'
          % (size / 1e6, ev, size / ev if ev else 0,
             '; memory events %d' % mev if mev else ''))
    print('stderr of record: %s' % err.strip().replace('\n', ' | '))
    print(json.dumps({'seconds': a.seconds, 'rounds': rounds, 'alone_rate': alone_rate,
                      'peak_rss_kb': peak, 'rows': rows, 'capture_bytes': size,
                      'events': ev, 'mem_events': mev}))


if __name__ == '__main__':
    main()
