#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""true-times.py: are cygprof's times the program's?  Compares each
function's inclusive share of main in `cygprof report` with perf's on the
same instrumented binary run without cygprof (the floor) and on the plain
build of the same source.

    bench/true-times.py --cygprof build/cli/cygprof [--runs 5] [--program NAME]...
                        [--hog | --only-hog] [--json FILE] [--markdown FILE]

Programs (Debian's source packages, fetched with `apt-get source` into
--cache, or --src NAME=DIR):

    lua      lua5.4: the interpreter on bench/true-times/work.lua
    zlib     zlib: minigzip -9 on 10 MB of generated text
    bzip2    bzip2: bzip2 -9 on the same text
    sqlite3  sqlite3: the shell (amalgamation, made with tclsh) on a
             generated SQL script: 200,000 rows inserted in one
             transaction into an in-memory table, two indexes, GROUP BY,
             LIKE, a self-join on the index, UPDATE, DELETE
    gawk     gawk (its configure and make): bench/true-times/work.awk on 4 MB
             of the same text (word counts in associative arrays, regular
             expressions, sprintf, split)

Each is built twice from one source tree, `-O2 -g` (no frame pointers, as
users build; --fp-flags adds the old -fno-omit-frame-pointer
-fno-optimize-sibling-calls) and the same plus -finstrument-functions.
Every program runs with LC_ALL=C.  Three references per function:

    plain    perf on the plain build
    floor    perf on the instrumented build run without cygprof (glibc's
             empty hooks): what -finstrument-functions itself changed, the
             least any profiler working inside that binary can be off
    cygprof  `cygprof record MODE-FLAGS` then `cygprof report
             --format=json REPORT-FLAGS`, each function's total_ns

perf: `perf record -e cpu-clock -F 10000 --call-graph=dwarf,32768`,
children included (a sample counts once for every function on its stack
below main),
frames expanded into their inlined functions with addr2line -i, only the
program's own functions (not libc's, which cygprof does not time).  Every
configuration runs --runs times, in interleaved rounds (each round runs
each configuration once, in a rotated order); a column's share is the sum
over its runs.

Modes (--modes, --mode NAME=FLAGS adds or replaces one): default `record`,
sampled `record --time=sampled --sample`, timeline `record --timeline`,
memory `record --memory`.  Reports per mode (--reports MODE=F1;F2...,
MODE may be *; an empty item is the plain report; an item may end in
@KEY to read another JSON field than total_ns): the plain report (the
time model), --times=hooks, --times=samples and --raw-times for default,
the plain report and --raw-times for timeline and memory, only the plain
report for sampled.  A report whose main has
no time (sampled today) is shown as "no times".

Errors are relative, |share - reference| / reference, per function:
against the floor over the functions at or above --min percent of main at
the floor, against plain over those at or above --min at plain (the
floor's own error too); each gets its mean and its worst.  The floor's
and plain's run-to-run spread (disjoint pools of k runs compared) says
how many runs make them stable.

--hog adds a second condition, a busy loop pinned with taskset on
--hog-cpu (0) while every run (perf with the program, or the whole
cygprof record command) is pinned on the same CPU; --only-hog runs only
that condition.

Output: the per-function tables and the summaries (markdown, on stdout
and with --markdown FILE), a table for the README at the end, and
everything measured with --json FILE (--from-json FILE prints its
tables again without measuring).
Needs perf, addr2line, readelf, taskset, gcc, make; apt-get and
dpkg-source (dpkg-dev) for the sources; tclsh for sqlite3's amalgamation.
Not a test: it takes about 80 minutes with --hog (5 runs) on the
project's 2-core VM and its figures depend on the machine.
"""
import argparse
import collections
import datetime
import glob
import gzip
import itertools
import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN = {'lua': 'lua5.4', 'zlib': 'zlib', 'bzip2': 'bzip2', 'sqlite3': 'sqlite3',
          'gawk': 'gawk'}
CFLAGS = ['-O2', '-g']
FP_FLAGS = ['-fno-omit-frame-pointer', '-fno-optimize-sibling-calls']
INSTR = ['-finstrument-functions']
QUIET = ['-w']  # the sources' own warnings are not ours
MODES = {'default': [], 'sampled': ['--time=sampled', '--sample'], 'timeline': ['--timeline'],
         'memory': ['--memory']}
REPORTS = {'default': ['', '--times=hooks', '--times=samples', '--raw-times'], 'sampled': [''],
           'timeline': ['', '--raw-times'],
           'memory': ['', '--raw-times']}
CLONE = re.compile(r'(\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)?)+$')


class Skip(Exception):
    """A program that cannot be measured here, with the one-line reason."""


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def quiet(cmd, what, **kw):
    """Runs a build step; on failure, its output's tail and the command."""
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    if p.returncode:
        sys.stderr.write(p.stdout[-3000:])
        raise Skip('%s failed (exit %d): %s' % (what, p.returncode, ' '.join(cmd)[:200]))
    return p.stdout


def progress(msg):
    sys.stderr.write('true-times: %s\n' % msg)
    sys.stderr.flush()


# --- sources ---------------------------------------------------------------

def unpacked(d, pkg):
    dirs = sorted(x for x in glob.glob(os.path.join(d, pkg + '-[0-9]*')) if os.path.isdir(x))
    return dirs[-1] if dirs else None


def source(name, given, cache):
    """(directory, version) of NAME's source: --src, else Debian's source
    package unpacked in CACHE/debian/NAME (apt-get source, once)."""
    if name in given:
        d = os.path.abspath(os.path.expanduser(given[name]))
        if not os.path.isdir(d):
            raise Skip('--src %s=%s: not a directory' % (name, given[name]))
        return d, 'given: ' + d
    pkg = DEBIAN[name]
    d = os.path.join(cache, 'debian', name)
    src = unpacked(d, pkg)
    if not src:
        for tool, deb in (('apt-get', 'apt'), ('dpkg-source', 'dpkg-dev')):
            if not shutil.which(tool):
                raise Skip('%s not found (Debian package %s): no source for %s' % (tool, deb, pkg))
        os.makedirs(d, exist_ok=True)
        p = subprocess.run(['apt-get', 'source', '-q', pkg], cwd=d, capture_output=True, text=True)
        src = unpacked(d, pkg)
        if p.returncode or not src:
            err = [ln for ln in p.stderr.splitlines() if ln.startswith('E:')] or \
                p.stderr.splitlines() or ['exit %d' % p.returncode]
            raise Skip('apt-get source %s failed: %s' % (pkg, err[-1]))
    dsc = sorted(glob.glob(os.path.join(d, '*.dsc')))
    return src, 'Debian %s' % (os.path.basename(dsc[-1])[:-4].split('_', 1)[1] if dsc else
                               os.path.basename(src))


# --- inputs ----------------------------------------------------------------

def text_input(work, nwords=1500000):
    """Generated text (3000 words, 12 to a line; 1.5 M words: 10 MB), made
    once."""
    inp = os.path.join(work, 'input-%d.txt' % nwords)
    if not os.path.exists(inp):
        import random
        rnd = random.Random(1)
        words = [''.join(rnd.choice('abcdefghijklmnopqrstuvwxyz')
                         for _ in range(rnd.randint(2, 9))) for _ in range(3000)]
        with open(inp, 'w') as f:
            for i in range(nwords):
                f.write(rnd.choice(words) + (' ' if i % 12 else '\n'))
    return inp


def sql_input(work, rows=200000):
    """The sqlite3 shell's script: ROWS rows inserted one statement each in
    one transaction, two indexes, then queries that use them."""
    inp = os.path.join(work, 'work.sql')
    if os.path.exists(inp):
        return inp
    import random
    rnd = random.Random(1)
    syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'po', 'qu', 'ba', 'de', 'fi',
            'gu']
    words = [''.join(rnd.choice(syll) for _ in range(rnd.randint(2, 5))) for _ in range(20000)]
    with open(inp, 'w') as f:
        f.write('CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL, '
                'note TEXT);\nBEGIN;\n')
        for i in range(1, rows + 1):
            f.write("INSERT INTO t VALUES(%d,%d,'%s',%.3f,'%s %s');\n" %
                    (i, rnd.randint(0, 999), rnd.choice(words), rnd.random() * 1000,
                     rnd.choice(words), rnd.choice(words)))
        f.write("""COMMIT;
CREATE INDEX t_name ON t(name);
CREATE INDEX t_grp ON t(grp, val);
SELECT grp, count(*), avg(val), max(name) FROM t GROUP BY grp ORDER BY 2 DESC LIMIT 5;
SELECT count(*) FROM t WHERE name LIKE 'ka%';
SELECT count(*), sum(b.val) FROM t a JOIN t b ON a.name = b.name WHERE a.id <= 20000;
SELECT name, sum(val) FROM t WHERE grp BETWEEN 100 AND 300 GROUP BY name ORDER BY 2 DESC LIMIT 3;
SELECT note, count(*) FROM t GROUP BY note ORDER BY 2 DESC LIMIT 3;
UPDATE t SET val = val * 1.01 WHERE grp % 7 = 0;
DELETE FROM t WHERE id % 11 = 0;
SELECT count(DISTINCT note), min(name), max(val) FROM t;
SELECT substr(name, 1, 3) AS p, count(*) FROM t GROUP BY p ORDER BY p LIMIT 5;
""")
    return inp


# --- builds ----------------------------------------------------------------

def build_lua(src, out, flags, work, cache):
    d = os.path.join(src, 'src') if os.path.exists(os.path.join(src, 'src', 'lua.c')) else src
    files = sorted(os.path.join(d, f) for f in os.listdir(d)
                   if f.startswith('l') and f.endswith('.c') and
                   f not in ('ltests.c', 'onelua.c', 'luac.c'))
    inc = os.path.join(work, 'lua-include')
    os.makedirs(inc, exist_ok=True)
    with open(os.path.join(inc, 'lua5.4-deb-multiarch.h'), 'w') as f:  # Debian's luaconf.h
        f.write('#define DEB_HOST_MULTIARCH "x86_64-linux-gnu"\n')
    quiet(['gcc', '-std=gnu99', '-DLUA_USE_LINUX', '-I', inc] + flags + QUIET + ['-o', out] +
          files + ['-lm', '-ldl'], 'lua build')
    return [out, os.path.join(HERE, 'true-times', 'work.lua')], None


def build_zlib(src, out, flags, work, cache):
    names = ['adler32', 'crc32', 'deflate', 'infback', 'inffast', 'inflate', 'inftrees',
             'trees', 'zutil', 'compress', 'uncompr', 'gzclose', 'gzlib', 'gzread', 'gzwrite']
    files = [os.path.join(src, n + '.c') for n in names] + [os.path.join(src, 'test', 'minigzip.c')]
    quiet(['gcc'] + flags + QUIET + ['-I', src, '-o', out] + files, 'zlib build')
    return [out, '-9', '-c'], text_input(work)


def build_bzip2(src, out, flags, work, cache):
    inc = os.path.join(work, 'bzip2-include')
    os.makedirs(inc, exist_ok=True)
    with open(os.path.join(inc, 'bz_version.h'), 'w') as f:  # libarchive's tree needs it
        f.write('#define BZ_VERSION "true-times"\n')
    names = ['blocksort', 'huffman', 'crctable', 'randtable', 'compress', 'decompress', 'bzlib',
             'bzip2']
    files = [os.path.join(src, n + '.c') for n in names]
    quiet(['gcc'] + flags + QUIET + ['-D_GNU_SOURCE', '-DBZ_UNIX=1', '-DBZ_LCCWIN32=0', '-I', inc,
                                     '-I', src, '-o', out] + files, 'bzip2 build')
    return [out, '-9', '-c'], text_input(work)


def amalgamation(src, cache, work):
    """A directory with sqlite3.c, sqlite3.h and shell.c: SRC itself when it
    has them, else made from SRC's tree (configure; make sqlite3.c shell.c,
    which needs tclsh), once per source under CACHE."""
    if all(os.path.exists(os.path.join(src, f)) for f in ('sqlite3.c', 'sqlite3.h', 'shell.c')):
        return src
    if not os.path.exists(os.path.join(src, 'tool', 'mksqlite3c.tcl')):
        raise Skip('%s: neither an amalgamation (sqlite3.c, shell.c) nor a source tree' % src)
    d = os.path.join(cache, 'sqlite3-amalgamation', os.path.basename(src.rstrip('/')))
    if os.path.exists(os.path.join(d, 'shell.c')):
        return d
    if not shutil.which('tclsh'):
        raise Skip("tclsh not found (Debian package tcl): sqlite3's amalgamation is made with it")
    os.makedirs(d, exist_ok=True)
    progress('sqlite3: making the amalgamation in %s' % d)
    quiet([os.path.join(src, 'configure'), '--disable-tcl'], 'sqlite3 configure', cwd=d)
    quiet(['make', 'sqlite3.c', 'shell.c'], 'sqlite3 amalgamation', cwd=d)
    return d


def build_sqlite3(src, out, flags, work, cache):
    am = amalgamation(src, cache, work)
    quiet(['gcc'] + flags + QUIET + ['-I', am, '-o', out, os.path.join(am, 'shell.c'),
                                     os.path.join(am, 'sqlite3.c'), '-lpthread', '-ldl', '-lm'],
          'sqlite3 build')
    rc = os.path.join(work, 'empty.sqliterc')  # not the user's ~/.sqliterc
    open(rc, 'w').close()
    return [out, '-batch', '-init', rc, ':memory:'], sql_input(work)


def build_gawk(src, out, flags, work, cache):
    b = out + '.build'
    os.makedirs(b, exist_ok=True)
    quiet([os.path.join(src, 'configure'), 'CC=gcc', 'CFLAGS=' + ' '.join(flags + QUIET),
           '--disable-nls', '--disable-extensions', '--without-readline', '--without-mpfr'],
          'gawk configure', cwd=b)
    jobs = '-j%d' % min(2, os.cpu_count() or 1)
    quiet(['make', jobs, '-C', 'support'], 'gawk build (support)', cwd=b)
    quiet(['make', jobs, 'gawk'], 'gawk build', cwd=b)
    shutil.copy(os.path.join(b, 'gawk'), out)
    shutil.rmtree(b)
    return [out, '-f', os.path.join(HERE, 'true-times', 'work.awk'), text_input(work, 600000)], None


BUILDERS = {'lua': build_lua, 'zlib': build_zlib, 'bzip2': build_bzip2, 'sqlite3': build_sqlite3,
            'gawk': build_gawk}


# --- runs ------------------------------------------------------------------

def run(argv, stdin_path, env):
    """Runs ARGV; its wall time in seconds."""
    t = time.monotonic()
    with open(stdin_path or os.devnull, 'rb') as fin:
        sh(argv, stdin=fin, stdout=subprocess.DEVNULL, env=env)
    return time.monotonic() - t


def norm(name):
    """One spelling of a function on both sides: gcc's clone suffixes off."""
    return CLONE.sub('', name)


class Inliner:
    """addr2line -i, once per distinct address: the inlined functions at an
    address, innermost first, ending with the function that holds it.
    Addresses are perf script's, offsets in the file (a non-PIE executable
    is loaded at 0x400000): the program headers map them to addresses."""

    def __init__(self, exe):
        self.exe = exe
        self.memo = {}
        self.loads = []     # (file offset, size, virtual address) of each PT_LOAD
        out = subprocess.run(['readelf', '-lW', exe], capture_output=True, text=True,
                             check=True).stdout
        for ln in out.splitlines():
            f = ln.split()
            if f and f[0] == 'LOAD':
                self.loads.append((int(f[1], 16), int(f[4], 16), int(f[2], 16)))

    def vaddr(self, off):
        for o, size, va in self.loads:
            if o <= off < o + size:
                return off - o + va
        return off

    def resolve(self, addrs):
        todo = sorted(a for a in addrs if a not in self.memo)
        if not todo:
            return
        p = subprocess.run(['addr2line', '-i', '-f', '-a', '-e', self.exe],
                           input=''.join('%x\n' % self.vaddr(a) for a in todo),
                           capture_output=True, text=True, check=True)
        back = {self.vaddr(a): a for a in todo}
        cur = None
        lines = p.stdout.splitlines()
        i = 0
        while i < len(lines):
            ln = lines[i]
            if ln.startswith('0x'):
                cur = back.get(int(ln, 16), int(ln, 16))
                self.memo[cur] = []
                i += 1
                continue
            self.memo[cur].append(ln)
            i += 2      # function, then file:line
        for a in todo:
            self.memo.setdefault(a, [])

    def names(self, addr):
        return [n for n in self.memo.get(addr, []) if n != '??']


def perf_run(inl, argv, stdin_path, work, a, prefix, env):
    """One perf record of ARGV: (inclusive samples per function of the
    program, over the samples with main on their stack; samples in all;
    chunks or samples perf lost; the wall time of perf record)."""
    data = os.path.join(work, 'perf.data')
    cmd = ['perf', 'record', '-q', '-F', str(a.freq), '-e', 'cpu-clock',
           '--call-graph=' + a.call_graph, '-o', data]
    if a.perf_mmap:
        cmd += ['-m', a.perf_mmap]
    wall = run(prefix + cmd + ['--'] + argv, stdin_path, env)
    # --no-inline: perf's own expansion prints some frames (a clone such as
    # yy_reduce.constprop.0) only as '(inlined)' lines, with no object;
    # addr2line -i expands the program's frames instead
    p = subprocess.run(['perf', 'script', '--no-inline', '-i', data, '-F', 'ip,sym,dso'],
                       capture_output=True, text=True, check=True)
    os.unlink(data)     # DWARF samples carry 32 KB of stack each
    lost = sum(int(n) for n in re.findall(r'lost (\d+) (?:chunks|samples)', p.stderr))
    base = os.path.basename(inl.exe)
    samples = []
    for block in re.split(r'\n[ \t]*\n', p.stdout):
        if not block.strip():
            continue
        frames = []
        for ln in block.strip().splitlines():
            parts = ln.split()
            if len(parts) < 3:
                continue
            dso = os.path.basename(parts[-1].strip('()'))
            if dso == base:
                frames.append((int(parts[0], 16), parts[1]))
        samples.append(frames)
    inl.resolve({(addr if k == 0 else addr - 1) for fr in samples
                 for k, (addr, _) in enumerate(fr)})
    incl = collections.Counter()
    for fr in samples:
        seen = set()
        for k, (addr, sym) in enumerate(fr):
            names = [norm(n) for n in (inl.names(addr if k == 0 else addr - 1) or [sym])]
            seen.update(names)
            if 'main' in names:     # main's callers (_start) are not main's share
                incl.update(seen)
                break
    return incl, len(samples), lost, wall


def parse_variant(item):
    """'FLAGS[@KEY]' -> (flags, key)."""
    flags, _, key = item.partition('@')
    return shlex.split(flags), key or 'total_ns'


def cygprof_run(cyg, argv, stdin_path, work, rec_flags, variants, prefix, env):
    """One `cygprof record REC_FLAGS`, then each report variant: ({label:
    {function: value} or None when main has no time}, record's wall time)."""
    cap = os.path.join(work, 'cyg.data')
    wall = run(prefix + [cyg, 'record', '-q', '-f', '-o', cap] + rec_flags + ['--'] + argv,
               stdin_path, env)
    out = {}
    for label, item in variants:
        flags, key = parse_variant(item)
        rep = subprocess.run([cyg, 'report', '--format=json', '--flat'] + flags + [cap],
                             capture_output=True, text=True, check=True).stdout
        vals = collections.Counter()
        for f in json.loads(rep)['functions']:
            n = norm(f['name'])
            vals[n] = max(vals[n], f.get(key) or 0)
        out[label] = dict(vals) if vals['main'] > 0 else None
    os.unlink(cap)
    return out, wall


# --- figures ---------------------------------------------------------------

def pooled(runs):
    """Shares of main (percent) over the sum of RUNS ({function: value})."""
    tot = collections.Counter()
    for r in runs:
        tot.update(r)
    m = tot.get('main', 0)
    return {f: 100.0 * v / m for f, v in tot.items()} if m else None


def shares_of(run):
    m = run.get('main', 0)
    return {f: 100.0 * v / m for f, v in run.items()} if m else None


def errors(shares, ref, funcs):
    """Signed relative errors of SHARES against REF over FUNCS."""
    return {f: (shares.get(f, 0.0) - ref[f]) / ref[f] for f in funcs}


def stat(errs):
    if not errs:
        return None
    worst = max(errs, key=lambda f: abs(errs[f]))
    return {'n': len(errs), 'mean': sum(abs(e) for e in errs.values()) / len(errs),
            'worst': abs(errs[worst]), 'worst_function': worst}


def above(shares, minimum):
    return sorted((f for f, v in shares.items() if v >= minimum and f != 'main'),
                  key=lambda f: -shares[f])


def summarize(cond, columns, minimum):
    """Shares, errors and spreads of one condition's runs."""
    plain, floor = pooled(cond['plain']['runs']), pooled(cond['floor']['runs'])
    if not plain or not floor:
        return None
    fset, pset = above(floor, minimum), above(plain, minimum)
    s = {'shares': {'plain': plain, 'floor': floor}, 'floor_functions': fset,
         'plain_functions': pset,
         'floor_vs_plain': stat(errors(floor, plain, pset)), 'columns': {}}
    for label in columns:
        runs = [r for r in cond['cygprof'][label] if r is not None]
        sh_ = pooled(runs) if runs else None
        c = {'runs_with_times': len(runs), 'runs': len(cond['cygprof'][label])}
        if sh_:
            s['shares'][label] = sh_
            c['vs_floor'] = stat(errors(sh_, floor, fset))
            c['vs_plain'] = stat(errors(sh_, plain, pset))
            per = [stat(errors(shares_of(r), floor, fset)) for r in runs]
            c['run_means_vs_floor'] = [p['mean'] for p in per if p]
        s['columns'][label] = c
    big = {f for sh_ in s['shares'].values() for f, v in sh_.items() if v >= 0.5}
    s['shares'] = {k: {f: v for f, v in sh_.items() if f in big} for k, sh_ in s['shares'].items()}
    for ref, funcs in (('floor', fset), ('plain', pset)):
        sp = spread(cond[ref]['runs'], funcs)
        if sp:
            s[ref + '_spread'] = sp
    return s


def spread(runs, funcs):
    """How far a reference pooled over k of RUNS is from its expectation:
    two disjoint pools of k runs differ by |a - b| / ((a + b) / 2) per
    function, and for independent pools E|a - b| = sqrt(2) E|a - mean|.
    Also each function's coefficient of variation over single runs, and
    the runs that bring the reference's own error to a fifth of issue 30's
    goals (2% mean, 5% worst) if errors fall as 1/sqrt(runs)."""
    runs = [r for r in runs if r.get('main')]
    n = len(runs)
    if n < 2 or not funcs:
        return None
    per = [shares_of(r) for r in runs]
    cv = {}
    for f in funcs:
        xs = [p.get(f, 0.0) for p in per]
        mu = sum(xs) / n
        sd = math.sqrt(sum((x - mu) ** 2 for x in xs) / (n - 1))
        cv[f] = sd / mu if mu else 0.0
    pools = {}
    for k in range(1, n // 2 + 1):
        by_f = {f: [] for f in funcs}
        for A in itertools.combinations(range(n), k):
            rest = [i for i in range(n) if i not in A]
            for B in itertools.combinations(rest, k):
                if B < A:
                    continue
                sa, sb = pooled([runs[i] for i in A]), pooled([runs[i] for i in B])
                for f in funcs:
                    a_, b_ = sa.get(f, 0.0), sb.get(f, 0.0)
                    by_f[f].append(abs(a_ - b_) / ((a_ + b_) / 2) if a_ + b_ else 0.0)
        est = {f: sum(v) / len(v) / math.sqrt(2) for f, v in by_f.items()}
        worst = max(est, key=est.get)
        pools[k] = {'mean': sum(est.values()) / len(est), 'worst': est[worst],
                    'worst_function': worst}
    one = pools[1]
    return {'runs': n, 'cv_mean': sum(cv.values()) / len(cv), 'cv_worst': max(cv.values()),
            'cv_worst_function': max(cv, key=cv.get), 'pools': pools,
            'runs_for_goal': max(math.ceil((one['mean'] / 0.02) ** 2),
                                 math.ceil((one['worst'] / 0.05) ** 2))}


def pct(x):
    return '%.0f%%' % (100 * x)


def cell(x):
    return '%.0f%% / %.0f%%' % (100 * x['mean'], 100 * x['worst']) if x else '-'


def markdown(name, info, cname, cond, s, columns, a):
    out = []
    w = out.append
    w('\n## %s (%s), %s: inclusive share of main, %d runs each\n' %
      (name, info['version'], 'CPU hog pinned with it' if cname == 'hog' else 'no hog',
       a.runs))
    w('perf -F %d --call-graph=%s; samples with main on the stack: plain %s, floor %s; '
      'lost: plain %d, floor %d.  Load average during the rounds: %s.\n' %
      (a.freq, a.call_graph, '{:,}'.format(sum(cond['plain']['main'])),
       '{:,}'.format(sum(cond['floor']['main'])), sum(cond['plain']['lost']),
       sum(cond['floor']['lost']),
       '%.1f..%.1f' % (min(cond['load']), max(cond['load'])) if cond['load'] else '?'))
    med = lambda xs: sorted(xs)[len(xs) // 2] if xs else float('nan')  # noqa: E731
    w('Run time (median, s): perf plain %.2f, perf floor %.2f, %s.\n' % (
        med(cond['plain']['wall']), med(cond['floor']['wall']),
        ', '.join('record %s %.2f' % (m, med(ws)) for m, ws in cond['wall'].items())))
    sh_ = s['shares']
    listed = set(s['floor_functions']) | set(s['plain_functions'])
    for label in columns:
        if label in sh_:
            listed |= set(above(sh_[label], a.min))
    floor, plain = sh_['floor'], sh_['plain']
    listed = sorted(listed, key=lambda f: (-floor.get(f, 0.0), f))
    head = ['function', 'plain', 'floor (vs plain)'] + [l + ' (vs floor)' for l in columns]
    w('| ' + ' | '.join(head) + ' |')
    w('|' + '---|' * len(head))

    def rel(v, ref):
        return '%+.0f%%' % (100 * (v - ref) / ref) if ref >= 0.01 else 'n/a'
    for f in listed:
        p, fl = plain.get(f, 0.0), floor.get(f, 0.0)
        row = [f, '%.2f%%' % p, '%.2f%% (%s)' % (fl, rel(fl, p))]
        for label in columns:
            if label not in sh_:
                row.append('no times')
                continue
            v = sh_[label].get(f, 0.0)
            row.append('%.2f%% (%s)' % (v, rel(v, fl)))
        w('| ' + ' | '.join(row) + ' |')
    w('\nRelative errors, mean / worst (the worst function): against the floor over the %d '
      'functions at or above %g%% of main at the floor, against plain over the %d at or above '
      '%g%% at plain.\n' % (len(s['floor_functions']), a.min, len(s['plain_functions']), a.min))
    w('| column | vs floor | vs plain | per-run means vs floor |')
    w('|---|---|---|---|')
    fp = s['floor_vs_plain']
    w('| floor | - | %s%s | - |' % (cell(fp), ' (%s)' % fp['worst_function'] if fp else ''))
    for label in columns:
        c = s['columns'][label]
        if 'vs_floor' not in c:
            w('| %s | no times (%d runs) | - | - |' % (label, c['runs']))
            continue
        vf, vp = c['vs_floor'], c['vs_plain']
        runs = c['run_means_vs_floor']
        some = '' if c['runs_with_times'] == c['runs'] else ' (%d of %d runs with times)' % (
            c['runs_with_times'], c['runs'])
        w('| %s | %s%s%s | %s | %s |' % (
            label, cell(vf), ' (%s)' % vf['worst_function'] if vf else '', some, cell(vp),
            '%s..%s' % (pct(min(runs)), pct(max(runs))) if runs else '-'))
    for ref in ('floor', 'plain'):
        sp = s.get(ref + '_spread')
        if sp:
            w('\n%s run-to-run (%d runs): a pool of k runs is off its expectation by about %s '
              '(mean / worst over the functions); coefficient of variation of single runs %.1f%% '
              'mean, %.1f%% worst (%s); runs for its own error to be at most 2%% mean and 5%% '
              'worst: %d.' % (
                  ref.capitalize(), sp['runs'],
                  ', '.join('%s / %s (%s) for k=%s' % (pct(p['mean']), pct(p['worst']),
                                                      p['worst_function'], k)
                            for k, p in sorted(sp['pools'].items(), key=lambda x: int(x[0]))),
                  100 * sp['cv_mean'], 100 * sp['cv_worst'], sp['cv_worst_function'],
                  sp['runs_for_goal']))
    return '\n'.join(out) + '\n'


def readme_table(results, columns, a):
    head = ['program', 'load', 'functions', 'floor vs plain'] + columns
    out = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for name, pr in results.items():
        for cname, s in pr.get('summary', {}).items():
            if not s:
                continue
            row = [name, 'hog' if cname == 'hog' else '-', str(len(s['floor_functions'])),
                   cell(s['floor_vs_plain'])]
            for label in columns:
                c = s['columns'].get(label, {})
                part = '' if c.get('runs_with_times') == c.get('runs') else ' (%d of %d runs)' % (
                    c.get('runs_with_times', 0), c.get('runs', 0))
                row.append(cell(c['vs_floor']) + part if 'vs_floor' in c else 'no times')
            out.append('| ' + ' | '.join(row) + ' |')
    return ('\nREADME table: relative error of each function\'s inclusive share of main, mean / '
            'worst, against the floor (perf on the instrumented build without cygprof), over '
            'the functions at or above %g%% of main at the floor; "floor vs plain" over those at '
            'or above %g%% at plain; "(k of n runs)": only k runs had a time in main.\n\n' % (
                a.min, a.min) + '\n'.join(out) + '\n')


# --- main ------------------------------------------------------------------

def has_raw_times(cyg):
    h = subprocess.run([cyg, 'report', '--help'], capture_output=True, text=True).stdout
    return '--raw-times' in h


def git_head(path):
    try:
        p = subprocess.run(['git', '-C', os.path.dirname(path), 'rev-parse', '--short', 'HEAD'],
                           capture_output=True, text=True)
    except OSError:
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def start_hog(work, cpu):
    src = os.path.join(work, 'hog.c')
    exe = os.path.join(work, 'hog')
    if not os.path.exists(exe):
        with open(src, 'w') as f:
            f.write('int main(void) { for (volatile unsigned long n = 0;; n++) ; }\n')
        sh(['gcc', '-O1', '-o', exe, src])
    return subprocess.Popen(['taskset', '-c', str(cpu), exe])


def keep(vals):
    """A run's figures as kept: the functions at 0.5% of main or more (a
    function at 3% of the pooled runs is never under that in one run)."""
    m = vals.get('main', 0)
    return {f: v for f, v in vals.items() if v * 200 >= m}


def run_config(c, cond, a, cyg, inl, plain, instr, modes, variants, prefix, env, work):
    """One run of configuration C (plain, floor or a mode) into COND."""
    if c in ('plain', 'floor'):
        argv, inp = plain if c == 'plain' else instr
        incl, n, lost, wall = perf_run(inl[c], argv, inp, work, a, prefix, env)
        d = cond[c]
        d['wall'].append(wall)
        d['runs'].append(keep(incl))
        d['main'].append(incl.get('main', 0))
        d['samples'].append(n)
        d['lost'].append(lost)
        return
    vs = [(l, it) for (m, l, it) in variants if m == c]
    got, wall = cygprof_run(cyg, instr[0], instr[1], work, modes[c], vs, prefix, env)
    cond['wall'][c].append(wall)
    for l, vals in got.items():
        cond['cygprof'][l].append(keep(vals) if vals else None)


def measure(name, src, info, a, cyg, modes, variants, columns, conditions, env):
    """Builds NAME, runs every configuration in interleaved rounds under each
    condition: the raw figures."""
    flags = CFLAGS + (FP_FLAGS if a.fp_flags else [])
    tmp = a.tmp if a.tmp else None
    with tempfile.TemporaryDirectory(prefix='true-times-%s-' % name, dir=tmp) as work:
        progress('%s: building (%s)' % (name, ' '.join(flags)))
        pargv, pin = BUILDERS[name](src, os.path.join(work, name + '-plain'), flags, work, a.cache)
        iargv, iin = BUILDERS[name](src, os.path.join(work, name + '-instr'), flags + INSTR, work,
                                    a.cache)
        inl = {'plain': Inliner(pargv[0]), 'floor': Inliner(iargv[0])}
        info['cflags'] = flags
        info['argv'] = [os.path.basename(x) for x in pargv]
        info['conditions'] = {}
        for cname in conditions:
            prefix = ['taskset', '-c', str(a.hog_cpu)] if cname == 'hog' else []
            hog = start_hog(work, a.hog_cpu) if cname == 'hog' else None
            try:
                cond = {'plain': {'runs': [], 'main': [], 'samples': [], 'lost': [], 'wall': []},
                        'floor': {'runs': [], 'main': [], 'samples': [], 'lost': [], 'wall': []},
                        'cygprof': {l: [] for l in columns}, 'wall': {m: [] for m in modes},
                        'load': [], 'errors': []}
                configs = ['plain', 'floor'] + list(modes)
                for r in range(a.runs):
                    k = r % len(configs)
                    for c in configs[k:] + configs[:k]:
                        progress('%s %s round %d/%d: %s' % (name, cname, r + 1, a.runs, c))
                        cond['load'].append(os.getloadavg()[0])
                        try:
                            run_config(c, cond, a, cyg, inl, (pargv, pin), (iargv, iin), modes,
                                       variants, prefix, env, work)
                        except subprocess.CalledProcessError as e:
                            progress('%s %s: %s failed: %s' % (name, cname, c, e))
                            cond['errors'].append('%s: %s' % (c, e))
                            for m, label, _ in variants:
                                if m == c:
                                    cond['cygprof'][label].append(None)
            finally:
                if hog:
                    hog.terminate()
                    hog.wait()
            for c in ('plain', 'floor'):
                if not any(cond[c]['main']):
                    raise Skip('%s: main not seen by perf on the %s build' % (name, c))
            info['conditions'][cname] = cond
    return info


def from_json(a):
    """The tables of an earlier run's --json FILE, summarized again."""
    try:
        with (gzip.open if a.from_json.endswith('.gz') else open)(a.from_json, 'rt') as f:
            doc = json.load(f)
        runs_args = dict(doc['args'], min=a.min)
        columns = [v[1] for v in doc['variants']]
    except KeyError as e:
        sys.exit('true-times: --from-json %s: not a true-times --json file (no %s)' %
                 (a.from_json, e))
    except (OSError, EOFError, ValueError, TypeError) as e:
        sys.exit('true-times: --from-json %s: %s' % (a.from_json, e))
    old = argparse.Namespace(**runs_args)
    text = ['# true-times, %s, cygprof %s (%s); %d runs each, perf -F %d --call-graph=%s\n' % (
        doc['date'], doc['cygprof']['git'] or '?', doc['cygprof']['path'], old.runs, old.freq,
        old.call_graph)]
    for name, info in doc['programs'].items():
        info['summary'] = {}
        for cname, cond in info['conditions'].items():
            s = summarize(cond, columns, a.min)
            info['summary'][cname] = s
            if s:
                text.append(markdown(name, info, cname, cond, s, columns, old))
    for name, why in doc.get('skipped', {}).items():
        text.append('\n%s: skipped: %s\n' % (name, why))
    text.append(readme_table(doc['programs'], columns, old))
    sys.stdout.write(''.join(text))
    if a.markdown:
        with open(a.markdown, 'w') as f:
            f.write(''.join(text))
    return 0


def main():
    intro, _, rest = __doc__.partition('\n\n')
    ap = argparse.ArgumentParser(description=intro, epilog=rest,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--cygprof', help='the cygprof executable to measure (required unless '
                    '--from-json)')
    ap.add_argument('--runs', type=int, default=5,
                    help='runs of every configuration (default 5), in interleaved rounds')
    ap.add_argument('--min', type=float, default=3.0,
                    help='percent of main at the reference for a function to count (default 3)')
    ap.add_argument('--program', action='append', choices=sorted(BUILDERS),
                    help='measure only this program (repeatable; default: all five)')
    ap.add_argument('--src', action='append', default=[], metavar='NAME=DIR',
                    help="a program's source tree instead of Debian's source package")
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/cygprof-bench'),
                    help='where the Debian sources are kept (default ~/.cache/cygprof-bench)')
    ap.add_argument('--tmp', default='/dev/shm' if os.path.isdir('/dev/shm') else None,
                    help='where builds, perf data and captures go while measured '
                    '(default /dev/shm: perf writes about 330 MB/s at 10 kHz)')
    ap.add_argument('--fp-flags', action='store_true',
                    help='build both with -fno-omit-frame-pointer -fno-optimize-sibling-calls '
                    '(the flags of earlier runs)')
    ap.add_argument('--freq', type=int, default=10000, help="perf's rate (default 10000 Hz)")
    ap.add_argument('--call-graph', default='dwarf,32768',
                    choices=['dwarf,32768', 'dwarf,65528', 'fp'],
                    help="perf's unwinding (default dwarf,32768)")
    ap.add_argument('--perf-mmap', default='32M' if os.geteuid() == 0 else None,
                    help="perf record -m (default 32M as root, else perf's own)")
    ap.add_argument('--modes',
                    help='cygprof modes to measure, comma-separated (default: %s, then the '
                    'modes --mode adds)' % ','.join(MODES))
    ap.add_argument('--mode', action='append', default=[], metavar='NAME=FLAGS',
                    help='add or redefine a mode: its record flags (it is measured when --modes '
                    'names it; a new NAME is appended to the default list)')
    ap.add_argument('--reports', action='append', default=[], metavar='MODE=F1;F2',
                    help="a mode's report variants, ';'-separated (an empty item: the report "
                    "without flags; ITEM@KEY reads KEY instead of total_ns); MODE * sets all")
    ap.add_argument('--hog', action='store_true',
                    help='also measure with a busy loop pinned on --hog-cpu, every run pinned '
                    'there')
    ap.add_argument('--only-hog', action='store_true', help='only the condition with the hog')
    ap.add_argument('--hog-cpu', type=int, default=0, help='the CPU of --hog (default 0)')
    ap.add_argument('--json', metavar='FILE', help='write every figure to FILE')
    ap.add_argument('--markdown', metavar='FILE', help='also write the tables to FILE')
    ap.add_argument('--from-json', metavar='FILE',
                    help='measure nothing: print the tables of the runs --json wrote to FILE '
                    '(gzipped when it ends in .gz) with this --min')
    a = ap.parse_args()
    if a.from_json:
        return from_json(a)
    if not a.cygprof:
        sys.exit('true-times: --cygprof is required (or --from-json)')

    cyg = os.path.abspath(a.cygprof)
    if not os.access(cyg, os.X_OK):
        sys.exit('true-times: --cygprof %s: not an executable' % a.cygprof)
    hog_tools = ('taskset',) if a.hog or a.only_hog else ()
    for tool in ('perf', 'addr2line', 'readelf', 'gcc', 'make') + hog_tools:
        if not shutil.which(tool):
            sys.exit('true-times: %s not found' % tool)
    if a.runs < 1:
        sys.exit('true-times: --runs must be at least 1')
    given = {}
    for s in a.src:
        if '=' not in s or s.split('=', 1)[0] not in BUILDERS:
            sys.exit('true-times: --src %s: expected NAME=DIR with NAME one of %s' %
                     (s, ', '.join(sorted(BUILDERS))))
        given[s.split('=', 1)[0]] = s.split('=', 1)[1]
    modes_all = dict(MODES)
    order = list(MODES)
    for m in a.mode:
        n, eq, fl = m.partition('=')
        if not eq or not n:
            sys.exit('true-times: --mode %s: expected NAME=FLAGS' % m)
        modes_all[n] = shlex.split(fl)
        if n not in order:
            order.append(n)
    wanted = [m for m in a.modes.split(',') if m] if a.modes else order
    for m in wanted:
        if m not in modes_all:
            sys.exit('true-times: --modes: no mode %s (known: %s)' % (m, ', '.join(modes_all)))
    modes = {m: modes_all[m] for m in wanted}
    reports = {m: list(REPORTS.get(m, [''])) for m in modes}
    if not has_raw_times(cyg):
        reports = {m: [v for v in vs if '--raw-times' not in v] or ['']
                   for m, vs in reports.items()}
    for r in a.reports:
        m, eq, items = r.partition('=')
        if not eq or (m != '*' and m not in modes):
            sys.exit('true-times: --reports %s: expected MODE=F1;F2 with MODE one of %s or *' %
                     (r, ', '.join(modes)))
        for mm in (modes if m == '*' else [m]):
            reports[mm] = items.split(';')
    variants = []       # (mode, column label, report item)
    for m in modes:
        for it in reports[m]:
            variants.append((m, (m + ' ' + it.strip()).strip(), it))
    columns = [l for _, l, _ in variants]
    if len(set(columns)) != len(columns):
        sys.exit('true-times: two report variants have the same label: %s' % ', '.join(columns))
    conditions = ['hog'] if a.only_hog else (['quiet', 'hog'] if a.hog else ['quiet'])
    env = dict(os.environ, LC_ALL='C')

    results = collections.OrderedDict()
    doc = {'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
           'host': ' '.join(os.uname()), 'cpus': os.cpu_count(),
           'cygprof': {'path': cyg, 'git': git_head(cyg)},
           'args': {k: v for k, v in vars(a).items()}, 'modes': modes, 'variants': variants,
           'skipped': {}, 'programs': results}
    md = []

    def emit(text):
        sys.stdout.write(text)
        sys.stdout.flush()
        md.append(text)

    def save():
        if a.json:
            with open(a.json, 'w') as f:
                json.dump(doc, f, separators=(',', ':'))
                f.write('\n')
        if a.markdown:
            with open(a.markdown, 'w') as f:
                f.write(''.join(md))

    emit('# true-times, %s, cygprof %s (%s); %d runs each, perf -F %d --call-graph=%s, %s\n' % (
        doc['date'], doc['cygprof']['git'] or '?', cyg, a.runs, a.freq, a.call_graph,
        ' '.join(CFLAGS + (FP_FLAGS if a.fp_flags else []))))
    for name in a.program or list(BUILDERS):
        try:
            src, version = source(name, given, a.cache)
            info = measure(name, src, {'source': src, 'version': version}, a, cyg, modes,
                           variants, columns, conditions, env)
        except Skip as e:
            progress('%s skipped: %s' % (name, e))
            emit('\n%s: skipped: %s\n' % (name, e))
            doc['skipped'][name] = str(e)
            save()
            continue
        info['summary'] = {}
        for cname, cond in info['conditions'].items():
            s = summarize(cond, columns, a.min)
            info['summary'][cname] = s
            if s:
                emit(markdown(name, info, cname, cond, s, columns, a))
        results[name] = info
        save()
    emit(readme_table(results, columns, a))
    save()
    return 0


if __name__ == '__main__':
    sys.exit(main())
