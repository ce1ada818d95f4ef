#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""true-times.py: are cygprof's times the program's?  Compares each
function's inclusive share of main in `cygprof report` (an instrumented
build) with perf's on the plain build of the same source.

    bench/true-times.py --cygprof build/cli/cygprof [--runs 5] [--src lua=DIR]
                        [--src zlib=DIR] [--src bzip2=DIR] [--program lua] [--min 3]
                        [--call-graph dwarf|fp]

Each program (lua: the interpreter on bench/true-times/work.lua; zlib:
minigzip -9, bzip2: bzip2 -9, both on 10 MB of generated text) is built twice from one source
tree, with the same flags but one:

    plain   gcc -O2 -g -fno-omit-frame-pointer
    instr   the same plus -finstrument-functions

perf records the plain build (`perf record -F 20000 -e cpu-clock
--call-graph=dwarf,32768`, children included: a sample counts once for
every function on its stack, recursion once), cygprof the instrumented one
(`cygprof record`, its report's total_ns: recursion counted once; with
`--raw-times` too when this cygprof has it).  Frames are expanded into
their inlined functions with addr2line, so that a function gcc inlined in
the plain build is still seen (the instrumented build calls it out of
line).  Both sides sum --runs runs.  The table lists every function with
at least --min percent of main on either side: perf's share, cygprof's,
and the relative error |cygprof - perf| / perf; then the mean and the
worst error.

Why DWARF and not frame pointers: glibc is built without frame pointers,
so a sample inside malloc, memcpy or strcmp walked by frame pointers loses
its caller and often the whole chain (on Lua, fp charges luaL_alloc, which
is realloc and free, 0.3% of main; DWARF unwinding through libc's CFI
21%).  --call-graph fp gives perf's fp figures for comparison.

Sources: --src NAME=DIR, else a shallow git clone into
~/.cache/cygprof-bench (github.com/lua/lua, github.com/madler/zlib,
github.com/libarchive/bzip2).
Not a test: it takes minutes and its figures depend on the machine.
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPOS = {'lua': 'https://github.com/lua/lua', 'zlib': 'https://github.com/madler/zlib',
         'bzip2': 'https://github.com/libarchive/bzip2'}
PLAIN = ['-O2', '-g', '-fno-omit-frame-pointer', '-fno-optimize-sibling-calls']
QUIET = ['-w']  # the sources' own warnings are not ours


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def source(name, given, cache):
    if name in given:
        return given[name]
    d = os.path.join(cache, name)
    if not os.path.isdir(d):
        os.makedirs(cache, exist_ok=True)
        sh(['git', 'clone', '-q', '--depth', '1', REPOS[name], d])
    return d


def build_lua(src, out, extra, work):
    files = sorted(os.path.join(src, f) for f in os.listdir(src)
                   if f.startswith('l') and f.endswith('.c') and f not in ('ltests.c', 'onelua.c'))
    sh(['gcc', '-std=c99', '-DLUA_USE_LINUX'] + PLAIN + QUIET + extra + ['-o', out] + files +
       ['-lm', '-ldl'])
    return [out, os.path.join(HERE, 'true-times', 'work.lua')], None


def text_input(work):
    """10 MB of generated text (3000 words, 12 to a line), made once."""
    inp = os.path.join(work, 'input.txt')
    if not os.path.exists(inp):
        import random
        rnd = random.Random(1)
        words = [''.join(rnd.choice('abcdefghijklmnopqrstuvwxyz')
                         for _ in range(rnd.randint(2, 9))) for _ in range(3000)]
        with open(inp, 'w') as f:
            for i in range(1500000):
                f.write(rnd.choice(words) + (' ' if i % 12 else '\n'))
    return inp


def build_zlib(src, out, extra, work):
    names = ['adler32', 'crc32', 'deflate', 'infback', 'inffast', 'inflate', 'inftrees',
             'trees', 'zutil', 'compress', 'uncompr', 'gzclose', 'gzlib', 'gzread', 'gzwrite']
    files = [os.path.join(src, n + '.c') for n in names] + [os.path.join(src, 'test', 'minigzip.c')]
    sh(['gcc'] + PLAIN + QUIET + extra + ['-I', src, '-o', out] + files)
    return [out, '-9', '-c'], text_input(work)


def build_bzip2(src, out, extra, work):
    inc = os.path.join(work, 'bzip2-include')
    os.makedirs(inc, exist_ok=True)
    with open(os.path.join(inc, 'bz_version.h'), 'w') as f:  # made by its build system
        f.write('#define BZ_VERSION "true-times"\n')
    names = ['blocksort', 'huffman', 'crctable', 'randtable', 'compress', 'decompress', 'bzlib',
             'bzip2']
    files = [os.path.join(src, n + '.c') for n in names]
    sh(['gcc'] + PLAIN + QUIET + extra + ['-D_GNU_SOURCE', '-DBZ_UNIX=1', '-DBZ_LCCWIN32=0', '-I', inc,
                                          '-I', src, '-o', out] + files)
    return [out, '-9', '-c'], text_input(work)


BUILDERS = {'lua': build_lua, 'zlib': build_zlib, 'bzip2': build_bzip2}


def build(name, src, work, extra):
    out = os.path.join(work, '%s-%s' % (name, 'instr' if extra else 'plain'))
    return BUILDERS[name](src, out, extra, work)


def run(argv, stdin_path, prefix=()):
    with open(stdin_path or os.devnull, 'rb') as fin:
        sh(list(prefix) + argv, stdin=fin, stdout=subprocess.DEVNULL)


class Inliner:
    """addr2line -i, once per distinct address: the inlined functions at an
    address, innermost first, ending with the function that holds it."""

    def __init__(self, exe):
        self.exe = exe
        self.memo = {}

    def resolve(self, addrs):
        todo = sorted(a for a in addrs if a not in self.memo)
        if not todo:
            return
        p = subprocess.run(['addr2line', '-i', '-f', '-a', '-e', self.exe],
                           input=''.join('%x\n' % a for a in todo), capture_output=True,
                           text=True, check=True)
        cur = None
        lines = p.stdout.splitlines()
        i = 0
        while i < len(lines):
            ln = lines[i]
            if ln.startswith('0x'):
                cur = int(ln, 16)
                self.memo[cur] = []
                i += 1
                continue
            self.memo[cur].append(ln)
            i += 2      # function, then file:line
        for a in todo:
            self.memo.setdefault(a, [])

    def names(self, addr):
        return [n for n in self.memo.get(addr, []) if n != '??']


def perf_shares(exe, argv, stdin_path, runs, work, callgraph):
    incl = collections.Counter()
    base = os.path.basename(exe)
    inl = Inliner(exe)
    for r in range(runs):
        data = os.path.join(work, 'perf-%d.data' % r)
        run(argv, stdin_path, ['perf', 'record', '-q', '-F', '20000', '-e', 'cpu-clock',
                               '--call-graph=' + callgraph, '-o', data, '--'])
        out = subprocess.run(['perf', 'script', '-i', data, '-F', 'ip,sym,dso'],
                             capture_output=True, text=True, check=True).stdout
        os.unlink(data)     # DWARF samples carry 32 KB of stack each
        samples = []
        for block in out.split('\n\n'):
            frames = []
            for ln in block.strip().splitlines():
                parts = ln.split()
                if len(parts) < 2:
                    continue
                dso = parts[-1].strip('()')
                frames.append((int(parts[0], 16), parts[1], os.path.basename(dso) == base))
            if frames:
                samples.append(frames)
        inl.resolve({(a if k == 0 else a - 1) for fr in samples
                     for k, (a, _, own) in enumerate(fr) if own})
        for fr in samples:
            seen = set()
            for k, (a, sym, own) in enumerate(fr):
                names = inl.names(a if k == 0 else a - 1) if own else []
                seen.update(names or [sym])
            incl.update(seen)
    return incl


def cygprof_shares(cyg, exe, argv, stdin_path, runs, work, raw):
    tot = collections.Counter()
    for r in range(runs):
        cap = os.path.join(work, 'cyg-%d.data' % r)
        run(argv, stdin_path, [cyg, 'record', '-q', '-f', '-o', cap, '--'])
        rep = subprocess.run([cyg, 'report', '--format=json'] + (['--raw-times'] if raw else []) +
                             [cap], capture_output=True, text=True, check=True).stdout
        for f in json.loads(rep)['functions']:
            tot[f['name']] += f['total_ns']
    return tot


def has_raw_times(cyg):
    h = subprocess.run([cyg, 'report', '--help'], capture_output=True, text=True).stdout
    return '--raw-times' in h


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--runs', type=int, default=5)
    ap.add_argument('--min', type=float, default=3.0, help='percent of main to list')
    ap.add_argument('--src', action='append', default=[], help='NAME=DIR')
    ap.add_argument('--program', action='append', choices=sorted(BUILDERS))
    ap.add_argument('--call-graph', default='dwarf,32768', choices=['dwarf,32768', 'dwarf,65528', 'fp'],
                    help="perf's unwinding on the plain build (default dwarf,32768)")
    ap.add_argument('--cache', default=os.path.expanduser('~/.cache/cygprof-bench'))
    a = ap.parse_args()
    given = dict(s.split('=', 1) for s in a.src)
    cyg = os.path.abspath(a.cygprof)
    raw = has_raw_times(cyg)
    for name in a.program or ['lua', 'zlib', 'bzip2']:
        src = source(name, given, a.cache)
        with tempfile.TemporaryDirectory(prefix='true-times-') as work:
            pargv, pin = build(name, src, work, [])
            iargv, iin = build(name, src, work, ['-finstrument-functions'])
            perf = perf_shares(pargv[0], pargv, pin, a.runs, work, a.call_graph)
            cyg_c = cygprof_shares(cyg, iargv[0], iargv, iin, a.runs, work, False)
            cyg_r = cygprof_shares(cyg, iargv[0], iargv, iin, a.runs, work, True) if raw else None
        if not perf['main'] or not cyg_c['main']:
            sys.exit('%s: main not seen (perf %d, cygprof %d)' % (name, perf['main'], cyg_c['main']))
        ps = {f: 100.0 * n / perf['main'] for f, n in perf.items()}
        cs = {f: 100.0 * n / cyg_c['main'] for f, n in cyg_c.items()}
        rs = {f: 100.0 * n / cyg_r['main'] for f, n in cyg_r.items()} if raw else {}
        funcs = sorted({f for f, v in ps.items() if v >= a.min and f in cs} |
                       {f for f, v in cs.items() if v >= a.min},
                       key=lambda f: -ps.get(f, 0))
        funcs = [f for f in funcs if f != 'main']
        print('\n## %s: inclusive share of main, %d runs each (perf --call-graph=%s: %d samples in main)\n' %
              (name, a.runs, a.call_graph, perf['main']))
        print('| function | perf plain | cygprof | error |%s' % (' cygprof raw | raw error |' if raw else ''))
        print('|---|---|---|---|%s' % ('---|---|' if raw else ''))
        errs, rerrs = [], []
        for f in funcs:
            p, c = ps.get(f, 0.0), cs.get(f, 0.0)
            e = abs(c - p) / p if p else float('inf')
            errs.append(e)
            row = '| %s | %.2f%% | %.2f%% | %.0f%% |' % (f, p, c, 100 * e)
            if raw:
                r = rs.get(f, 0.0)
                re_ = abs(r - p) / p if p else float('inf')
                rerrs.append(re_)
                row += ' %.2f%% | %.0f%% |' % (r, 100 * re_)
            print(row)
        fin = [e for e in errs if e != float('inf')]
        print('\n%s: %d functions; relative error mean %.0f%%, worst %.0f%%' %
              (name, len(errs), 100 * sum(fin) / max(1, len(fin)), 100 * max(errs or [0])))
        if raw:
            rfin = [e for e in rerrs if e != float('inf')]
            print('%s raw (--raw-times): mean %.0f%%, worst %.0f%%' %
                  (name, 100 * sum(rfin) / max(1, len(rfin)), 100 * max(rerrs or [0])))
    return 0


if __name__ == '__main__':
    sys.exit(main())
