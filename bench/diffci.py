#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""diffci.py - how often `cygprof diff --fail-above PCT` flags a real
slowdown (detection) and flags runs of one build (false alarm), 3 runs a
side, on this (shared, busy) machine.

usage: bench/diffci.py [--cygprof build/cli/cygprof]
                       [--prog build/tests/example-cidiff-O2] [--iters 3000000]
                       [--pool 10] [--base 100] [--slower 130] [--pct 10] [--tries 40]
                       [--hog | --hog-one]

Records POOL runs of `cidiff BASE 0 ITERS` (OLD; BASE 0.1: hot 0.1% of
the run) and POOL runs of `cidiff SLOWER 0 ITERS` (hot() SLOWER% of steady,
steady() unchanged), with --hog a busy loop on every core meanwhile, with
--hog-one one busy loop pinned on the last core, then draws TRIES random 3-vs-3
comparisons of OLD against NEW (a detection when hot is flagged slower,
a wrong verdict when steady is not 'same') and TRIES of OLD against OLD (a false alarm
when anything is flagged).  Prints the rates as fractions of the tries."""
import argparse
import json
import multiprocessing
import os
import random
import subprocess
import tempfile


def hog(stop):
    while not stop.is_set():
        sum(range(10000))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', default='build/cli/cygprof')
    ap.add_argument('--prog', default='build/tests/example-cidiff-O2')
    ap.add_argument('--iters', default='3000000')
    ap.add_argument('--pool', type=int, default=10)
    ap.add_argument('--base', default='100')
    ap.add_argument('--slower', default='130')
    ap.add_argument('--pct', default='10')
    ap.add_argument('--tries', type=int, default=40)
    ap.add_argument('--hog', action='store_true')
    ap.add_argument('--hog-one', action='store_true')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args()
    cyg, prog = os.path.abspath(a.cygprof), os.path.abspath(a.prog)
    rnd = random.Random(a.seed)
    stop = multiprocessing.Event()
    hogs = [multiprocessing.Process(target=hog, args=(stop,)) for _ in range(os.cpu_count() or 1)
            ] if a.hog else []
    if a.hog_one:
        hogs = [multiprocessing.Process(target=hog, args=(stop,))]
    for h in hogs:
        h.start()
        if a.hog_one:
            os.sched_setaffinity(h.pid, {max(os.sched_getaffinity(0))})
    try:
        with tempfile.TemporaryDirectory(prefix='cygprof-diffci-') as d:
            old, new = [], []
            for i in range(a.pool):  # interleaved: drift hits both alike
                for side, pct in ((old, a.base), (new, a.slower)):
                    cap = os.path.join(d, '%s%d.cap' % ('o' if side is old else 'n', i))
                    subprocess.run([cyg, 'record', '-q', '-o', cap, '--', prog, pct, '0',
                                    a.iters], check=True, stdout=subprocess.DEVNULL)
                    side.append(cap)

            def verdicts(o, n):
                cp = subprocess.run([cyg, 'diff', '--format=json', '--fail-above', a.pct,
                                     ','.join(o), ','.join(n)], stdout=subprocess.PIPE,
                                    universal_newlines=True)
                d = json.loads(cp.stdout)
                return cp.returncode, {f['name']: f['verdict'] for f in d['functions']}
            det = fa_ab = fa_aa = 0
            for _ in range(a.tries):
                rc, v = verdicts(rnd.sample(old, 3), rnd.sample(new, 3))
                det += v.get('hot') == 'slower'
                fa_ab += v.get('steady') != 'same'
                pool = rnd.sample(old, 6)
                rc, v = verdicts(pool[:3], pool[3:])
                fa_aa += rc != 0
    finally:
        stop.set()
        for h in hogs:
            h.join()
    print('cidiff %s vs %s, %s iterations, pool %d a side, %d tries of 3 vs 3, '
          '--fail-above %s%s' % (a.slower, a.base, a.iters, a.pool, a.tries, a.pct,
                                 ', a busy loop on every core' if a.hog else
                                 ', a busy loop pinned on one core' if a.hog_one else ''))
    print('detection (hot flagged slower): %d/%d = %.2f' % (det, a.tries, det / a.tries))
    print('steady (unchanged) not judged same in those: %d/%d = %.2f' % (fa_ab, a.tries,
                                                                      fa_ab / a.tries))
    print('false alarm, OLD against OLD (exit 3): %d/%d = %.2f' % (fa_aa, a.tries,
                                                                 fa_aa / a.tries))


if __name__ == '__main__':
    main()
