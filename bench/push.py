#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What record --push costs the program: wall and CPU time of the program
recorded without --push, with --push to a local server (tests/push's
/ingest stand-in, decoding every profile), and with --push to a closed
port (a backend down), in interleaved rounds; and what a push costs
cygprof (CPU of record beyond the run without --push, per push) and the
wire (bytes per push).

Usage:
  python3 bench/push.py [--build build] [--rounds 5] [--interval 1]
                        [--prog-args 30 200000]

The program is examples/longrun.c (ROUNDS rounds: K calls of work(), then
100 ms asleep).  The program's wall time is the capture's duration_ns, its
CPU time the capture's cpu_ns (its processes' user + system time); record's
own CPU is the children's rusage of record less the program's.
"""
import argparse
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'push'))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'lib'))
import push as pushtest  # noqa: E402  (tests/push/push.py: the /ingest stand-in)


def info(cyg, cap):
    import json
    out = subprocess.run([cyg, 'info', '--format=json', cap], stdout=subprocess.PIPE,
                         check=True).stdout
    d = json.loads(out)
    return d.get('meta', d)


def one(cyg, prog, args, tmp, opts):
    cap = os.path.join(tmp, 'cap.data')
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([cyg, 'record', '-q', '-f', '-o', cap] + opts +
                   ['--', prog, os.path.join(tmp, 'pid')] + args,
                   stdout=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    m = info(cyg, cap)
    total_cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1e9
    return {'wall': m['duration_ns'] / 1e9, 'cpu': m['cpu_ns'] / 1e9,
            'own': max(0.0, total_cpu - m['cpu_ns']) / 1e9,
            'sent': m.get('push_sent', 0), 'dropped': m.get('push_dropped', 0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', default=os.path.join(HERE, '..', 'build'))
    ap.add_argument('--rounds', type=int, default=5)
    ap.add_argument('--interval', default='1')
    ap.add_argument('--prog-args', nargs='*', default=['30', '200000'])
    a = ap.parse_args()
    cyg = os.path.join(a.build, 'cli', 'cygprof')
    prog = os.path.join(a.build, 'tests', 'example-longrun-O2')
    srv = pushtest.Ingest()
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    down = 'http://127.0.0.1:%d' % s.getsockname()[1]
    s.close()
    modes = {
        'none': [],
        'push-local': ['--push', srv.url, '--push-interval', a.interval],
        'push-down': ['--push', down, '--push-interval', a.interval],
    }
    res = {k: [] for k in modes}
    with tempfile.TemporaryDirectory(prefix='cygprof-bench-push-') as tmp:
        for r in range(a.rounds):
            for k, opts in modes.items():
                res[k].append(one(cyg, prog, a.prog_args, tmp, opts))
            print('round %d done' % (r + 1), file=sys.stderr)
    reqs = srv.taken()
    srv.close()
    med = {k: {f: statistics.median(x[f] for x in v) for f in v[0]} for k, v in res.items()}
    print('| mode | program wall (s) | wall / none | program CPU (s) | CPU / none | '
          'record\'s own CPU (s) | pushes sent | dropped |')
    print('|---|---:|---:|---:|---:|---:|---:|---:|')
    for k in modes:
        m = med[k]
        print('| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %g | %g |' %
              (k, m['wall'], m['wall'] / med['none']['wall'], m['cpu'],
               m['cpu'] / med['none']['cpu'], m['own'], m['sent'], m['dropped']))
    pushes = med['push-local']['sent'] or 1
    print()
    print('record\'s own CPU per push (local server): %.2f ms' %
          ((med['push-local']['own'] - med['none']['own']) / pushes * 1e3))
    if reqs:
        print('requests taken: %d; body bytes per push: median %d' %
              (len(reqs), statistics.median(r.get('bytes', 0) for r in reqs)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
