#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""sizes.py - capture sizes of real programs against heaptrack's and
uftrace's files for the same runs (issue 31, point 8).

usage: bench/sizes.py [--cygprof PATH] [--baseline PATH]
                      [--src NAME=DIR ...] [--work DIR] [--only lua,sqlite3,gawk]

Three programs are built from their Debian sources (`apt-get source lua5.4
sqlite3 gawk`, into --work unless --src names a source tree), -O2 -g
-finstrument-functions, and run on a workload of a few seconds each:

  lua      bench/true-times/work.lua 50000 (tables, sorting, strings,
           closures, the GC: 28 M calls, 0.35 M allocations)
  sqlite3  an in-memory database: 100,000 rows inserted, an index, a
           GROUP BY into a second table, a join, an update and a delete
  gawk     word counts, upper-casing and splits over 40,000 lines of words

Each run is recorded by: `cygprof record` twice (the two sizes show what
the free pages left to chance before compaction), once more with
CYGPROF_CAPTURE_COMPACT=0 (what the file held before: its free pages),
`record --memory` twice, `record --timeline` once (every call, as uftrace
records), `heaptrack` (its whole .zst file: allocations only) and `uftrace
record` (its whole data directory: every call); with --baseline, the
baseline's record and record --memory (an earlier build).  Printed: one
Markdown table of bytes and the ratios the issue asks for (a memory capture
against heaptrack's file, a timeline against uftrace's, two recordings of
one run).  Sizes, not times: one run each is enough.  Needs gcc, make,
heaptrack and uftrace (a tool that is missing leaves its columns empty).
"""
import argparse
import os
import random
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CFLAGS = ['-O2', '-g', '-finstrument-functions']

SQL = """CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c INTEGER);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000)
INSERT INTO t SELECT i, printf('row%d-%x', i, i * 7919), (i * 31) % 1000 FROM n;
CREATE INDEX tc ON t(c);
CREATE TABLE u AS SELECT c, count(*) AS k, sum(a) AS s FROM t GROUP BY c;
SELECT count(*), sum(k), max(s) FROM u;
SELECT count(*) FROM t JOIN u ON t.c = u.c WHERE t.b LIKE '%7%';
UPDATE t SET b = upper(b) WHERE c < 300;
DELETE FROM t WHERE a % 3 = 0;
SELECT c, count(*) FROM t GROUP BY c ORDER BY 2 DESC LIMIT 3;
"""

AWK = r"""{ for (i = 1; i <= NF; i++) { c[$i]++; n++ } line[NR % 1000] = toupper($0); s = s substr($1, 1, 1) }
END {
  for (w in c) { k++; if (c[w] > best) { best = c[w]; bw = w } }
  m = split(s, parts, "a")
  out = sprintf("%d words, %d distinct, top %s %d, %d parts", n, k, bw, best, m)
  gsub(/[aeiou]/, "_", out)
  print out
}
"""


def sh(cmd, cwd=None, env=None, quiet=True):
    r = subprocess.run(cmd, cwd=cwd, env=env, shell=isinstance(cmd, str),
                       stdout=subprocess.PIPE if quiet else None,
                       stderr=subprocess.STDOUT if quiet else None)
    if r.returncode:
        sys.exit('sizes: %s failed (%d): %s' % (cmd if isinstance(cmd, str) else ' '.join(cmd),
                                                r.returncode,
                                                (r.stdout or b'').decode(errors='replace')[-2000:]))
    return r


def source(name, pkg, args, work):
    """The source tree of a Debian package: --src, else apt-get source."""
    if name in args.src:
        return args.src[name]
    d = os.path.join(work, 'src')
    os.makedirs(d, exist_ok=True)
    for e in os.listdir(d):
        if e.startswith(pkg + '-') and os.path.isdir(os.path.join(d, e)):
            return os.path.join(d, e)
    sh(['apt-get', 'source', pkg], cwd=d)
    for e in os.listdir(d):
        if e.startswith(pkg + '-') and os.path.isdir(os.path.join(d, e)):
            return os.path.join(d, e)
    sys.exit('sizes: apt-get source %s made no tree in %s' % (pkg, d))


def build_lua(src, out):
    exe = os.path.join(out, 'lua')
    if os.path.exists(exe):
        return exe
    s = os.path.join(src, 'src')
    hdr = os.path.join(s, 'lua5.4-deb-multiarch.h')  # Debian's patch includes it
    if not os.path.exists(hdr):
        with open(hdr, 'w') as f:
            f.write('#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n')
    files = [os.path.join(s, f) for f in sorted(os.listdir(s))
             if f.endswith('.c') and f != 'luac.c']
    sh(['gcc'] + CFLAGS + ['-DLUA_USE_POSIX', '-DLUA_USE_DLOPEN', '-o', exe] + files +
       ['-lm', '-ldl'])
    return exe


def build_sqlite(src, out):
    exe = os.path.join(out, 'sqlite3')
    if os.path.exists(exe):
        return exe
    b = os.path.join(out, 'sqlite-build')
    os.makedirs(b, exist_ok=True)
    if not os.path.exists(os.path.join(b, 'sqlite3.c')):
        sh([os.path.join(src, 'configure'), '--disable-tcl', '--disable-readline'], cwd=b)
        sh(['make', 'sqlite3.c', 'shell.c'], cwd=b)
    sh(['gcc'] + CFLAGS + ['-DSQLITE_THREADSAFE=0', '-DSQLITE_OMIT_LOAD_EXTENSION', '-o', exe,
                           os.path.join(b, 'shell.c'), os.path.join(b, 'sqlite3.c'), '-lm'])
    return exe


def build_gawk(src, out):
    exe = os.path.join(out, 'gawk')
    if os.path.exists(exe):
        return exe
    b = os.path.join(out, 'gawk-build')
    if not os.path.exists(b):
        shutil.copytree(src, b, symlinks=True)  # keeps the times: no autotools run
    sh(['./configure', 'CFLAGS=' + ' '.join(CFLAGS), '--disable-nls', '--disable-extensions',
        '--without-readline', '--without-mpfr'], cwd=b)
    subprocess.run(['make', 'gawk'], cwd=b, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    if not os.path.exists(os.path.join(b, 'support', 'libsupport.a')):
        subprocess.run(['make', '-C', 'support'], cwd=b, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
        sh(['make', 'gawk'], cwd=b)
    shutil.copy(os.path.join(b, 'gawk'), exe)
    return exe


def workloads(args, work):
    out = os.path.join(work, 'bin')
    os.makedirs(out, exist_ok=True)
    data = os.path.join(work, 'data')
    os.makedirs(data, exist_ok=True)
    text = os.path.join(data, 'text.txt')
    if not os.path.exists(text):
        r = random.Random(31)
        words = [''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(r.randint(2, 9)))
                 for _ in range(5000)]
        with open(text, 'w') as f:
            for _ in range(40000):
                f.write(' '.join(r.choice(words) for _ in range(12)) + '\n')
    awk = os.path.join(data, 'words.awk')
    with open(awk, 'w') as f:
        f.write(AWK)
    sql = os.path.join(data, 'work.sql')
    with open(sql, 'w') as f:
        f.write(SQL)
    w = {}
    if 'lua' in args.only:
        lua = build_lua(source('lua', 'lua5.4', args, work), out)
        w['lua'] = ([lua, os.path.join(HERE, 'true-times', 'work.lua'), '50000'], None)
    if 'sqlite3' in args.only:
        sq = build_sqlite(source('sqlite3', 'sqlite3', args, work), out)
        w['sqlite3'] = ([sq, ':memory:'], sql)
    if 'gawk' in args.only:
        gk = build_gawk(source('gawk', 'gawk', args, work), out)
        w['gawk'] = ([gk, '-f', awk, text], None)
    return w


def run(cmd, stdin, cwd, env=None):
    with open(stdin or os.devnull) as f:
        r = subprocess.run(cmd, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           cwd=cwd, env=env)
    if r.returncode:
        sys.exit('sizes: %s failed (%d): %s' % (' '.join(cmd), r.returncode,
                                                r.stderr.decode(errors='replace')[-2000:]))
    return r.stderr.decode(errors='replace')


def dir_bytes(d):
    return sum(os.path.getsize(os.path.join(p, f)) for p, _, fs in os.walk(d) for f in fs)


def measure(args, name, cmd, stdin, tmp):
    env0 = dict(os.environ)
    env0.pop('CYGPROF_CAPTURE_COMPACT', None)
    got = {}

    def cyg(exe, key, opts, env=env0):
        cap = os.path.join(tmp, key + '.data')
        if os.path.exists(cap):
            os.unlink(cap)
        run([exe, 'record', '-q', '-o', cap] + opts + ['--'] + cmd, stdin, tmp, env)
        got[key] = os.path.getsize(cap)
        os.unlink(cap)

    cyg(args.cygprof, 'plain', [])
    cyg(args.cygprof, 'plain2', [])
    cyg(args.cygprof, 'plain_free', [], dict(env0, CYGPROF_CAPTURE_COMPACT='0'))
    cyg(args.cygprof, 'memory', ['--memory'])
    cyg(args.cygprof, 'memory2', ['--memory'])
    cyg(args.cygprof, 'memory_free', ['--memory'], dict(env0, CYGPROF_CAPTURE_COMPACT='0'))
    cyg(args.cygprof, 'timeline', ['--timeline'])
    if args.baseline:
        cyg(args.baseline, 'base_plain', [])
        cyg(args.baseline, 'base_plain2', [])
        cyg(args.baseline, 'base_memory', ['--memory'])
        cyg(args.baseline, 'base_memory2', ['--memory'])
    if shutil.which('heaptrack'):
        d = os.path.join(tmp, 'ht')
        shutil.rmtree(d, ignore_errors=True)
        os.mkdir(d)
        run(['heaptrack', '-o', os.path.join(d, 'h')] + cmd, stdin, d)
        got['heaptrack'] = dir_bytes(d)
        shutil.rmtree(d)
    if shutil.which('uftrace'):
        d = os.path.join(tmp, 'uft')
        shutil.rmtree(d, ignore_errors=True)
        run(['uftrace', 'record', '-d', d] + cmd, stdin, tmp)
        got['uftrace'] = dir_bytes(d)
        shutil.rmtree(d)
    return got


def kb(v):
    return '' if v is None else '%.0f KB' % (v / 1024) if v < 10 << 20 else '%.1f MB' % (v / 1048576)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', default=os.path.join(ROOT, 'build', 'cli', 'cygprof'))
    ap.add_argument('--baseline', default=None)
    ap.add_argument('--src', action='append', default=[], metavar='NAME=DIR')
    ap.add_argument('--work', default=os.path.expanduser('~/.cache/cygprof-bench/sizes'))
    ap.add_argument('--only', default='lua,sqlite3,gawk')
    args = ap.parse_args()
    args.src = dict(s.split('=', 1) for s in args.src)
    args.only = args.only.split(',')
    args.cygprof = os.path.abspath(args.cygprof)
    if args.baseline:
        args.baseline = os.path.abspath(args.baseline)
    os.makedirs(args.work, exist_ok=True)
    w = workloads(args, args.work)
    tmp = os.path.join(args.work, 'run')
    os.makedirs(tmp, exist_ok=True)
    rows = {}
    for name, (cmd, stdin) in w.items():
        print('sizes: %s ...' % name, file=sys.stderr)
        rows[name] = measure(args, name, cmd, stdin, tmp)
    print('\n### Capture sizes (%s)\n' % args.cygprof)
    hdr = ['program', 'heaptrack .zst', 'record --memory (2 runs)', '/ heaptrack',
           'uftrace data', 'record --timeline', '/ uftrace', 'record (2 runs)',
           'before compaction: record, --memory']
    if args.baseline:
        hdr += ['baseline: record (2 runs)', 'baseline: --memory (2 runs)']
    print('| ' + ' | '.join(hdr) + ' |')
    print('|' + '---|' * len(hdr))
    for name, g in rows.items():
        ht, uf = g.get('heaptrack'), g.get('uftrace')
        cells = [name, kb(ht), '%s, %s' % (kb(g['memory']), kb(g['memory2'])),
                 '%.1fx-%.1fx' % (min(g['memory'], g['memory2']) / ht,
                                  max(g['memory'], g['memory2']) / ht) if ht else '',
                 kb(uf), kb(g['timeline']),
                 '%.4fx' % (g['timeline'] / uf) if uf else '',
                 '%s, %s' % (kb(g['plain']), kb(g['plain2'])),
                 '%s, %s' % (kb(g['plain_free']), kb(g['memory_free']))]
        if args.baseline:
            cells += ['%s, %s' % (kb(g['base_plain']), kb(g['base_plain2'])),
                      '%s, %s' % (kb(g['base_memory']), kb(g['base_memory2']))]
        print('| ' + ' | '.join(cells) + ' |')
    print()
    for name, g in rows.items():
        a, b = g['plain'], g['plain2']
        ma, mb = g['memory'], g['memory2']
        line = ('- %s: two recordings differ by %.1f%% (record) and %.1f%% (--memory)'
                % (name, abs(a - b) * 100 / max(a, b), abs(ma - mb) * 100 / max(ma, mb)))
        if args.baseline:
            ba, bb = g['base_plain'], g['base_plain2']
            bma, bmb = g['base_memory'], g['base_memory2']
            line += ('; the baseline\'s by %.1f%% and %.1f%%; record is %.2fx, --memory %.2fx '
                     'the baseline\'s' % (abs(ba - bb) * 100 / max(ba, bb),
                                          abs(bma - bmb) * 100 / max(bma, bmb),
                                          (a + b) / (ba + bb), (ma + mb) / (bma + bmb)))
        print(line)


if __name__ == '__main__':
    main()
