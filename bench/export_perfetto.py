#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Export throughput and size: --format=perfetto against --format=chrome on
one large --timeline capture.

Usage: bench/export_perfetto.py [--cygprof build/cli/cygprof]
           [--prog build/tests/example-threads-O2] [--arg 100000] [--rounds 3]

Records PROG ARG with --timeline once, then exports it ROUNDS times in each
format (interleaved) to a temporary directory and prints, per format, the
median wall time, events/s (enter+exit events: 2 x the report's calls),
the file size, bytes per event, the chrome/perfetto size ratio, and the
time of writing the same bytes (from memory to a new file in the same
directory, fsync'd as export does), measured in the same rounds: how far
each export is from the speed of writing its bytes."""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', default='build/cli/cygprof')
    ap.add_argument('--prog', default='build/tests/example-threads-O2')
    ap.add_argument('--arg', default='100000')
    ap.add_argument('--rounds', type=int, default=3)
    a = ap.parse_args()
    cyg = os.path.abspath(a.cygprof)
    with tempfile.TemporaryDirectory(prefix='cygprof-bench-export-') as d:
        cap = os.path.join(d, 'x.cyg')
        subprocess.run([cyg, 'record', '-o', cap, '--timeline', '--', os.path.abspath(a.prog),
                        a.arg], check=True, stdout=subprocess.DEVNULL)
        rep = json.loads(subprocess.run([cyg, 'report', '--format=json', cap], check=True,
                                        capture_output=True, text=True).stdout)
        calls = sum(f['calls'] for f in rep['functions'])
        events = 2 * calls
        times = {'chrome': [], 'perfetto': []}
        writes = {'chrome': [], 'perfetto': []}
        sizes = {}
        for _ in range(a.rounds):
            for fmt in times:
                out = os.path.join(d, 'out.' + fmt)
                t0 = time.monotonic()
                subprocess.run([cyg, 'export', '--format=' + fmt, '-f', '-o', out, cap],
                               check=True)
                times[fmt].append(time.monotonic() - t0)
                sizes[fmt] = os.path.getsize(out)
                with open(out, 'rb') as f:
                    data = f.read()
                os.unlink(out)
                t0 = time.monotonic()
                fd = os.open(out + '.copy', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                for i in range(0, len(data), 1 << 20):
                    os.write(fd, data[i:i + (1 << 20)])
                os.fsync(fd)
                os.close(fd)
                writes[fmt].append(time.monotonic() - t0)
                os.unlink(out + '.copy')
        print('%s %s: %d calls, %d events, %d threads, capture %d bytes' %
              (os.path.basename(a.prog), a.arg, calls, events, len(rep['threads']),
               os.path.getsize(cap) if os.path.isfile(cap) else 0))
        print('%-9s %9s %14s %14s %9s %12s %9s' % ('format', 'time (s)', 'events/s', 'bytes',
                                                  'B/event', 'write (s)', 'ratio'))
        for fmt, ts in times.items():
            t = statistics.median(ts)
            w = statistics.median(writes[fmt])
            r = statistics.median([x / y for x, y in zip(ts, writes[fmt])])
            print('%-9s %9.3f %14.0f %14d %9.2f %12.3f %9.2f' % (fmt, t, events / t, sizes[fmt],
                                                             sizes[fmt] / events, w, r))
        print('chrome/perfetto size ratio: %.2f' % (sizes['chrome'] / sizes['perfetto']))


if __name__ == '__main__':
    main()
