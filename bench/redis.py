#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A server in the bench: Redis from Debian's source (issue 32).

Builds Redis 7 twice from `apt-get source redis` (cached in
~/.cache/cygprof-bench/debian/redis): plain, and with
-finstrument-functions -g (MALLOC=libc USE_SYSTEMD=no BUILD_TLS=no, as a
user would), then drives each configuration with the plain build's
redis-benchmark (SET and GET, 10 clients), pipelined (-P 16) and not, in
interleaved rounds (every round runs every configuration once, in a
rotated order; each figure is the median over the rounds):

  plain          the plain build
  instrumented   the instrumented build, glibc's empty hooks (no profiler)
  record         cygprof record
  sampled        cygprof record --time=sampled
  timeline       cygprof record --timeline
  uftrace        uftrace record (when installed)

Throughput is requests per second (SET and GET averaged), and as a
ratio of the instrumented build's in the same round.  Then one
`record --timeline` run (not pipelined) gives processCommand's p50 and p99
two ways, both as measured: from the hooks' latency histograms (`report
--format=json --raw-times`) and exactly from the timeline's calls (`export
--format=chrome`), their ratio, and the histograms' figure with the hooks'
cost of the calls below taken out (report's default).

Usage:
  python3 bench/redis.py [--rounds N] [--requests N] [--cygprof PATH] [--quick]

Skipped (exit 0, with the reason) when the source cannot be fetched or
built.  Not a test: it prints figures for bench/RESULTS.md.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.path.expanduser('~/.cache/cygprof-bench/debian/redis')
MAKE = ['make', '-j2', '-C', 'src', 'MALLOC=libc', 'USE_SYSTEMD=no', 'BUILD_TLS=no']


def skip(why):
    print('redis bench skipped: %s' % why)
    sys.exit(0)


def source():
    """The unpacked Debian source tree, fetched once."""
    os.makedirs(CACHE, exist_ok=True)
    trees = [d for d in os.listdir(CACHE) if d.startswith('redis-') and
             os.path.isdir(os.path.join(CACHE, d, 'src'))]
    if not trees:
        cp = subprocess.run(['apt-get', 'source', 'redis'], cwd=CACHE, capture_output=True,
                            text=True)
        if cp.returncode != 0:
            skip('apt-get source redis failed (a deb-src line in /etc/apt/sources.list.d '
                 'is needed): %s' % cp.stderr.strip().splitlines()[-1:])
        trees = [d for d in os.listdir(CACHE) if d.startswith('redis-') and
                 os.path.isdir(os.path.join(CACHE, d, 'src'))]
    if not trees:
        skip('no redis-* source tree in %s' % CACHE)
    return os.path.join(CACHE, sorted(trees)[-1])


def build(src, name, cflags):
    """A copy of the tree built with cflags: its src/ directory."""
    d = os.path.join(CACHE, name)
    exe = os.path.join(d, 'src', 'redis-server')
    if os.path.exists(exe):
        return os.path.join(d, 'src')
    if os.path.exists(d):
        shutil.rmtree(d)
    shutil.copytree(src, d, symlinks=True)
    subprocess.run(['make', '-C', 'src', 'distclean'], cwd=d, capture_output=True)
    print('building %s (a few minutes, once)...' % name, file=sys.stderr)
    cmd = MAKE + (['REDIS_CFLAGS=' + cflags] if cflags else [])
    cp = subprocess.run(cmd, cwd=d, capture_output=True, text=True)
    if cp.returncode != 0 or not os.path.exists(exe):
        skip('building %s failed: %s' % (name, cp.stderr.strip()[-300:]))
    return os.path.join(d, 'src')


def free_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_ping(cli, port, proc, deadline=30):
    end = time.time() + deadline
    while time.time() < end:
        if proc.poll() is not None:
            return False
        cp = subprocess.run([cli, '-p', str(port), 'ping'], capture_output=True, text=True)
        if cp.stdout.strip() == 'PONG':
            return True
        time.sleep(0.05)
    return False


def serve(cfg, builds, port, workdir):
    """The command that runs the server of configuration cfg."""
    server = [os.path.join(builds['cyg' if cfg != 'plain' else 'plain'], 'redis-server'),
              '--port', str(port), '--save', '', '--appendonly', 'no', '--dir', workdir]
    cap = os.path.join(workdir, cfg + '.data')
    if cfg in ('plain', 'instrumented'):
        return server, None
    if cfg == 'uftrace':
        d = os.path.join(workdir, 'uftrace.data')
        shutil.rmtree(d, ignore_errors=True)
        return ['uftrace', 'record', '-d', d] + server, d
    opts = {'record': [], 'sampled': ['--time=sampled'], 'timeline': ['--timeline']}[cfg]
    if os.path.exists(cap):
        os.unlink(cap)
    return [ARGS.cygprof, 'record', '-q', '-o', cap] + opts + ['--'] + server, cap


def run_one(cfg, builds, pipeline, workdir):
    """Requests per second of one configuration, SET and GET averaged."""
    port = free_port()
    cmd, out = serve(cfg, builds, port, workdir)
    cli = os.path.join(builds['plain'], 'redis-cli')
    bench = os.path.join(builds['plain'], 'redis-benchmark')
    log = open(os.path.join(workdir, cfg + '.log'), 'w')
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        if not wait_ping(cli, port, proc):
            raise RuntimeError('%s: the server did not answer (see %s.log)' % (cfg, cfg))
        b = [bench, '-p', str(port), '-n', str(ARGS.requests), '-c', '10', '-t', 'set,get',
             '--csv'] + (['-P', '16'] if pipeline else [])
        cp = subprocess.run(b, capture_output=True, text=True, timeout=600)
        rps = []
        for line in cp.stdout.splitlines():
            f = [x.strip('"') for x in line.split(',')]
            if len(f) > 1 and f[0] in ('SET', 'GET'):
                rps.append(float(f[1]))
        if len(rps) != 2:
            raise RuntimeError('%s: redis-benchmark printed %r' % (cfg, cp.stdout[-300:]))
        subprocess.run([cli, '-p', str(port), 'shutdown', 'nosave'], capture_output=True)
        proc.wait(timeout=120)
        return sum(rps) / 2, out
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


def percentile(xs, q):
    """The exact q-quantile of sorted xs (nearest rank)."""
    if not xs:
        return None
    k = max(0, min(len(xs) - 1, int(round(q * len(xs) + 0.5)) - 1))
    return xs[k]


def latency(builds, workdir):
    """processCommand's p50 and p99 from the histograms and from the
    timeline's calls of one `record --timeline` run."""
    _, cap = run_one('timeline', builds, False, workdir)
    def hist_of(opts):
        cp = subprocess.run([ARGS.cygprof, 'report', '--format=json'] + opts + [cap],
                            capture_output=True, text=True)
        if cp.returncode == 0:
            for f in json.loads(cp.stdout).get('functions', []):
                if f['name'] == 'processCommand' and isinstance(f.get('latency'), dict):
                    return f['latency']
        return None
    # like with like: the timeline's durations are as measured (--raw-times);
    # the default takes the hooks' cost of the calls below out
    hist, comp = hist_of(['--raw-times']), hist_of([])
    # processCommand's calls alone (-D 1 under -F): the whole timeline
    # would be about a gigabyte of JSON
    cp = subprocess.run([ARGS.cygprof, 'export', '--format=chrome', '-F', 'processCommand', '-D',
                         '1', '-f', '-o', '-', cap], capture_output=True, text=True)
    durs = []
    if cp.returncode == 0:
        for e in json.loads(cp.stdout)['traceEvents']:
            if e.get('name') == 'processCommand' and e.get('ph') == 'X':
                durs.append(e['dur'] * 1000.0)
    durs.sort()
    return hist, comp, durs


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--requests', type=int, default=50000)
    ap.add_argument('--cygprof', default=os.path.join(HERE, '..', 'build', 'cli', 'cygprof'))
    ap.add_argument('--quick', action='store_true', help='1 round of 20,000 requests')
    ARGS = ap.parse_args()
    if ARGS.quick:
        ARGS.rounds, ARGS.requests = 1, 20000
    ARGS.cygprof = os.path.abspath(ARGS.cygprof)
    if not os.access(ARGS.cygprof, os.X_OK):
        sys.exit('redis bench: no cygprof at %s (build it, or give --cygprof)' % ARGS.cygprof)
    src = source()
    builds = {'plain': build(src, 'build-plain', ''),
              'cyg': build(src, 'build-cyg', '-finstrument-functions -g')}
    cfgs = ['plain', 'instrumented', 'record', 'sampled', 'timeline']
    if shutil.which('uftrace'):
        cfgs.append('uftrace')
    workdir = tempfile.mkdtemp(prefix='cygprof-redis-')
    res = {}
    try:
        for pipeline in (False, True):
            for r in range(ARGS.rounds):
                k = r % len(cfgs)
                for cfg in cfgs[k:] + cfgs[:k]:
                    rps, _ = run_one(cfg, builds, pipeline, workdir)
                    res.setdefault((pipeline, cfg), []).append(rps)
                    print('round %d %s %s: %.0f requests/s' %
                          (r + 1, 'pipelined' if pipeline else 'plain', cfg, rps),
                          file=sys.stderr)
        print('Redis %s, redis-benchmark -n %d -c 10 -t set,get, median of %d rounds '
              '(requests/s, and the ratio to the instrumented build without a profiler):\n'
              % (os.path.basename(src), ARGS.requests, ARGS.rounds))
        print('| configuration | not pipelined | ratio | -P 16 | ratio |')
        print('|---|---|---|---|---|')
        for cfg in cfgs:
            row = [cfg]
            for pipeline in (False, True):
                m = statistics.median(res[(pipeline, cfg)])
                base = statistics.median(res[(pipeline, 'instrumented')])
                row += ['%.0f' % m, '%.2f' % (m / base)]
            print('| ' + ' | '.join(row) + ' |')
        hist, comp, durs = latency(builds, workdir)
        print('\nprocessCommand, one `record --timeline` run (%d calls in the timeline):' %
              len(durs))
        exact = {'p50': percentile(durs, 0.5), 'p99': percentile(durs, 0.99)}
        for q in ('p50', 'p99'):
            h = hist.get(q + '_ns') if hist else None
            e = exact[q]
            c = comp.get(q + '_ns') if comp else None
            print('  %s: histograms %s, timeline %s%s; the hooks\' cost taken out: %s' %
                  (q, '%.0f ns' % h if h is not None else 'n/a (no latency data)',
                   '%.0f ns' % e if e is not None else 'n/a',
                   ', ratio %.3f' % (h / e) if h is not None and e else '',
                   '%.0f ns' % c if c is not None else 'n/a'))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


ARGS = None

if __name__ == '__main__':
    main()
