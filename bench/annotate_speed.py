#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How long `cygprof annotate` takes on sqlite3's amalgamation (one
250k-line compile unit), against a baseline build, in interleaved rounds.

Builds the sqlite3 shell from Debian's source as true-times.py does
(`-O2 -g -finstrument-functions`, the amalgamation made with tclsh, cached
in ~/.cache/cygprof-bench), records it once on true-times.py's SQL script
with --cygprof, then runs `annotate CAPTURE` (default selection) and
`annotate CAPTURE sqlite3VdbeExec` with each build in turn, --rounds times,
and prints the medians and the ratio cygprof / baseline (a build without
`annotate FUNCTION` runs only the first).

  python3 bench/annotate_speed.py --cygprof build/cli/cygprof --baseline OLD/cli/cygprof
  python3 bench/annotate_speed.py --cygprof build/cli/cygprof --src sqlite3=DIR --rounds 7

Exit status 0, or 77 (with the reason) when sqlite3's source or tools are
missing.
"""

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def true_times():
    spec = importlib.util.spec_from_file_location('true_times', os.path.join(HERE, 'true-times.py'))
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def timed(cmd):
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    dt = time.perf_counter() - t
    return dt, p.returncode, p.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--baseline', help='another build\'s cygprof (the ratio\'s denominator)')
    ap.add_argument('--src', action='append', default=[], metavar='sqlite3=DIR')
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--rows', type=int, default=50000, help='rows of the SQL script')
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/cygprof-bench'))
    a = ap.parse_args()
    tt = true_times()
    work = tempfile.mkdtemp(prefix='cygprof-annotate-speed-')
    given = dict(s.split('=', 1) for s in a.src)
    try:
        src, version = tt.source('sqlite3', given, a.cache)
        exe = os.path.join(work, 'sqlite3')
        argv, stdin = tt.build_sqlite3(src, exe, tt.CFLAGS + tt.INSTR, work, a.cache)
    except tt.Skip as e:
        print('SKIP: %s' % e)
        return 77
    stdin = tt.sql_input(work, rows=a.rows)
    cap = os.path.join(work, 'sq.data')
    with open(stdin) as f:
        p = subprocess.run([a.cygprof, 'record', '-q', '-o', cap, '--'] + argv, stdin=f,
                           stdout=subprocess.DEVNULL)
    if p.returncode:
        print('record failed: exit %d' % p.returncode)
        return 1
    builds = [('cygprof', a.cygprof)] + ([('baseline', a.baseline)] if a.baseline else [])
    cases = [('default', []), ('FUNCTION', ['sqlite3VdbeExec'])]
    res = {(b, c): [] for b, _ in builds for c, _ in cases}
    for r in range(a.rounds):
        order = builds[r % len(builds):] + builds[:r % len(builds)]
        for c, extra in cases:
            for b, exe_b in order:
                dt, rc, err = timed([exe_b, 'annotate', cap] + extra)
                if rc == 0:
                    res[(b, c)].append(dt)
    print('sqlite3 (%s), %d rounds, medians:' % (version, a.rounds))
    for c, _ in cases:
        row = ['%-9s' % c]
        for b, _ in builds:
            v = res[(b, c)]
            row.append('%s %s' % (b, '%.3f s' % statistics.median(v) if v else 'n/a'))
        if a.baseline and res[('cygprof', c)] and res[('baseline', c)]:
            row.append('ratio %.3f' % (statistics.median(res[('cygprof', c)]) /
                                       statistics.median(res[('baseline', c)])))
        print('  ' + '  '.join(row))
    return 0


if __name__ == '__main__':
    sys.exit(main())
