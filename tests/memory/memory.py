#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof record --memory` and `cygprof memory`.

Usage:
  memory.py --cygprof CYGPROF --example EXE --test NAME [--source SRC]
            [--sanitize B_SANITIZE] [--skip REASON] [-v] [--keep]

Each test records one of the examples/mem-*.c(pp) programs with --memory into
a temporary directory, reads `cygprof memory --format=json` back and compares
it exactly with the figures stated in the example's comment block (repeated
below).  The examples are built both with -finstrument-functions (stacks from
the instrumentation's shadow stack) and without it (stacks from unwinding):
the per-function figures must be the same for both.

Only the example's own functions are compared exactly: libc, the dynamic
loader and libstdc++ may allocate on their own (pthread_create's TLS,
libstdc++'s exception pool).  Totals are checked against the own figures
plus what the other functions did.

Exit status: 0 passed, 1 failed, 77 skipped (meson's convention: used when
meson's b_sanitize is not 'none', since ASan owns malloc and the malloc
preload cannot run meaningfully under it).  Helpers come from tests/lib/cygtest.py.
"""

import argparse
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, Checker, run, describe_status, diff_table, is_int  # noqa: E402

SKIP = 77

# Innermost frames that are the allocator itself: never a "self" function.
ALLOCATOR_RE = re.compile(
    r'^(malloc|calloc|realloc|reallocarray|free|posix_memalign|aligned_alloc|memalign|valloc|'
    r'pvalloc|operator new|operator new\[\]|operator delete|operator delete\[\])(\(|$)')

SELF_KEYS = ('self_allocations', 'self_bytes', 'self_frees', 'self_temporary',
             'self_leaked_allocations', 'self_leaked_bytes')
TOTAL_KEYS = ('total_allocations', 'total_bytes', 'total_frees')


def S(allocs, nbytes, frees, temp=0, leaks=0, leaked_bytes=0):
    return dict(zip(SELF_KEYS, (allocs, nbytes, frees, temp, leaks, leaked_bytes)))


def T(allocs, nbytes, frees):
    return dict(zip(TOTAL_KEYS, (allocs, nbytes, frees)))


# --------------------------------------------------------------------------
# expectations (the comment blocks of examples/mem-*.c, mem-cxx.cpp)


def exp_basic():
    self_ = {
        'new_node': S(50, 1200, 50),
        'leaker': S(5, 385, 0, 0, 5, 385),
        'use_calloc': S(1, 120, 1),
        'aligned': S(5, 1856, 5),
        'grow': S(8, 8160, 8, 7),
        'use_reallocarray': S(2, 300, 2, 1),
        'rec_alloc': S(4, 64, 4),
        'temp_work': S(30, 3000, 30, 30),
        'peak_phase': S(16, 1048576, 16, 1),
        'main': S(0, 0, 0), 'make_list': S(0, 0, 0),
        'free_list': S(0, 0, 0), 'release_zero': S(0, 0, 0),
    }
    total = {name: T(s['self_allocations'], s['self_bytes'], s['self_frees'])
             for name, s in self_.items()}
    total.update({
        'make_list': T(50, 1200, 50),
        'rec_alloc': T(4, 64, 4),  # 4 stacks, rec_alloc counted once in each
        'main': T(121, 1063661, 116),
    })
    return dict(
        args=[], status=0,
        stdout=['mem-basic: allocs=121 bytes=1063661 frees=116 leaked=5 leaked_bytes=385'],
        self=self_, total=total, threads=1,
        peak=1056497, cross_thread_frees=0,
        leaks={'leaker': (5, 385)},
        peak_stacks={'new_node': (50, 1200), 'leaker': (5, 385), 'use_calloc': (1, 120),
                     'aligned': (5, 1856), 'grow': (1, 4096), 'use_reallocarray': (1, 200),
                     'rec_alloc': (4, 64), 'peak_phase': (16, 1048576)},
        temporary={'grow': (7, 32 + 64 + 128 + 256 + 512 + 1024 + 2048),
                   'use_reallocarray': (1, 100), 'temp_work': (30, 3000),
                   'peak_phase': (1, 65536)},
        first_leak='leaker',
        calls={'main': 1, 'make_list': 1, 'new_node': 50, 'leaker': 1, 'use_calloc': 1,
               'aligned': 1, 'grow': 1, 'use_reallocarray': 1, 'rec_alloc': 4,
               'temp_work': 1, 'peak_phase': 1, 'free_list': 1, 'release_zero': 1},
        arcs={('main', 'make_list'): 1, ('make_list', 'new_node'): 50, ('main', 'leaker'): 1,
              ('main', 'use_calloc'): 1, ('main', 'aligned'): 1, ('main', 'grow'): 1,
              ('main', 'use_reallocarray'): 1, ('main', 'rec_alloc'): 1,
              ('rec_alloc', 'rec_alloc'): 3, ('main', 'temp_work'): 1,
              ('main', 'peak_phase'): 1, ('main', 'free_list'): 1,
              ('main', 'release_zero'): 1},
    )


def exp_cxx():
    self_ = {
        'make_objs()': S(3, 120, 3),
        'make_arrays(int**, Tracked**)': S(2, 172, 2),
        'nothrow_new(Obj**, int**)': S(2, 80, 2),
        'aligned_new(Big**, Big**, Big**)': S(3, 512, 3),
        'raw_ops()': S(2, 1500, 2, 1),
        'cxx_temp()': S(10, 80, 10, 10),
        'cxx_leak()': S(2, 80, 0, 0, 2, 80),
        'main': S(0, 0, 0), 'drop_objs()': S(0, 0, 0),
    }
    total = {name: T(s['self_allocations'], s['self_bytes'], s['self_frees'])
             for name, s in self_.items()}
    total['main'] = T(24, 2544, 22)
    return dict(
        args=[], status=0, stdout=['mem-cxx: allocs=24 bytes=2544 frees=22 leaked=2'],
        self=self_, total=total, threads=1, peak=None, cross_thread_frees=0,
        leaks={'cxx_leak()': (2, 80)},
        temporary={'raw_ops()': (1, 500), 'cxx_temp()': (10, 80)},
        # libstdc++'s constructor mallocs its exception emergency pool (about
        # 72 KiB with GCC 12; heaptrack sees it) before main, never freed.
        min_foreign_leak=65536,
    )


def exp_threads(m=1000, r=20000):
    assert r % 8 == 0
    self_ = {
        'produce': S(4 * m, 176 * m, 4 * m),
        'stress_alloc': S(4 * r, 176 * r, 4 * r),
        'stress_temp': S(4 * r, 192 * r, 4 * r, 4 * r),
        'producer': S(0, 0, 0), 'consumer': S(0, 0, 0), 'consume_one': S(0, 0, 0),
        'stress_thread': S(0, 0, 0), 'main': S(0, 0, 0),
    }
    total = {name: T(0, 0, 0) for name in self_}
    total.update({
        'produce': T(4 * m, 176 * m, 4 * m),
        'producer': T(4 * m, 176 * m, 4 * m),
        'stress_alloc': T(4 * r, 176 * r, 4 * r),
        'stress_temp': T(4 * r, 192 * r, 4 * r),
        'stress_thread': T(8 * r, 368 * r, 8 * r),
    })
    # main's total also holds what pthread_create allocates (TLS): not exact
    del total['main']
    return dict(
        args=[str(m), str(r)], status=0,
        stdout=['mem-threads: produced=%d consumed=%d handed=%d temp=%d' %
                (4 * m, 4 * m, 4 * r, 4 * r)],
        self=self_, total=total, threads=10, peak=None,
        cross_thread_frees=4 * m + 4 * r,
        leaks={}, temporary={'stress_temp': (4 * r, 192 * r)},
    )


def exp_bootstrap(preinit=False):
    self_ = {
        'preinit_alloc': S(1, 45, 1) if preinit else S(0, 0, 0),
        'early_alloc': S(1, 123, 1),
        'mid_alloc': S(1, 10, 1, 1),
        'main': S(0, 0, 0), 'late_free': S(0, 0, 0),
    }
    total = {name: T(s['self_allocations'], s['self_bytes'], s['self_frees'])
             for name, s in self_.items()}
    total['main'] = T(1, 10, 1)
    return dict(
        args=[], status=0,
        stdout=['mem-bootstrap: preinit=%d early=123 mid=10 freed=3' % (45 if preinit else 0)],
        self=self_, total=total, threads=1, peak=None, cross_thread_frees=0,
        leaks={}, temporary={'mid_alloc': (1, 10)},
    )


EXPECT = {'basic': exp_basic, 'cxx': exp_cxx, 'threads': exp_threads,
          'bootstrap': exp_bootstrap, 'preinit': lambda: exp_bootstrap(preinit=True)}


# --------------------------------------------------------------------------
# running


def memory_json(cyg, capture, opts=()):
    cp = run([cyg.exe, 'memory', '--format=json'] + list(opts) + [capture])
    if cp.returncode != 0:
        raise Failure('memory --format=json %s failed (%s): %s' %
                      (' '.join(opts), describe_status(cp.returncode), cp.err.strip()))
    try:
        data = json.loads(cp.out)
    except ValueError as e:
        raise Failure('memory output is not JSON (%s); first 500 chars:\n%s' %
                      (e, cp.out[:500])) from e
    validate(data, bool(opts))
    return data


def validate(data, want_stacks):
    if not isinstance(data, dict):
        raise Failure('memory JSON is not an object')
    keys = ['totals', 'functions', 'heap'] + (['stacks'] if want_stacks else [])
    for k in keys:
        if k not in data:
            raise Failure('memory JSON has no "%s" (keys: %s)' % (k, sorted(data)))
    for k in ('allocations', 'frees', 'allocated_bytes', 'freed_bytes', 'peak_bytes',
              'leaked_allocations', 'leaked_bytes', 'temporary_allocations',
              'cross_thread_frees', 'untracked_frees'):
        v = data['totals'].get(k)
        if not is_int(v) or v < 0:
            raise Failure('totals.%s is not a non-negative integer: %r' % (k, v))
    for f in data['functions']:
        if 'name' not in f:
            raise Failure('function entry without a name: %r' % (f,))
        for k in SELF_KEYS + TOTAL_KEYS:
            if not is_int(f.get(k)) or f[k] < 0:
                raise Failure('function %r: %s is not a non-negative integer: %r' %
                              (f['name'], k, f.get(k)))
    for p in data['heap']:
        if not (is_int(p.get('ts_ns')) and is_int(p.get('live_bytes'))):
            raise Failure('heap point is not {ts_ns, live_bytes} integers: %r' % (p,))
    for s in data.get('stacks', []):
        for k in ('allocations', 'bytes', 'frames'):
            if k not in s:
                raise Failure('stack without "%s": %r' % (k, s))
        for fr in s['frames']:
            if 'name' not in fr or 'file' not in fr or 'line' not in fr:
                raise Failure('frame without name/file/line: %r' % (fr,))


def record_memory(ck, cyg, example, exp, opts=('--memory',), capname='mem.data'):
    capture = os.path.join(cyg.workdir, capname)
    cp = cyg.record(capture, [example] + exp['args'], opts)
    ck.eq(describe_status(cp.returncode), describe_status(exp['status']),
          'record exit status (the program\'s)')
    cygtest.check_stdout(ck, cp, exp['stdout'])
    lines = [line for line in cp.err.splitlines() if line.strip()]
    ck.check(len(lines) == 1 and lines[0].startswith('cygprof'),
             'record prints a one-line summary on stderr (got %r)' % lines)
    if not os.path.exists(capture):
        raise Failure('record left no capture at %s' % capture)
    return capture


# --------------------------------------------------------------------------
# checks


def fn_figures(data, keys):
    return {f['name']: {k: f[k] for k in keys} for f in data['functions']}


def compare_functions(ck, data, want, keys, title):
    got_all = fn_figures(data, keys)
    zero = {k: 0 for k in keys}
    want_rows, got_rows = {}, {}
    for name, w in want.items():
        g = got_all.get(name, zero)  # a function on no stack has all zeros
        for k in keys:
            want_rows[(name, k)] = w[k]
            got_rows[(name, k)] = g[k]
    fmt = lambda key: '%s %s' % key
    ck.check(diff_table(title, want_rows, got_rows, fmt),
             '%s are exact (%d functions)' % (title, len(want)))


def own_sums(exp):
    s = [v for v in exp['self'].values()]
    return {k: sum(v[k] for v in s) for k in SELF_KEYS}


def check_totals(ck, data, exp):
    t = data['totals']
    fns = data['functions']
    own = own_sums(exp)
    # global balances: every allocation is freed or leaked
    ck.eq(t['allocations'], t['frees'] + t['leaked_allocations'],
          'totals: allocations == frees + leaked_allocations (%d, %d, %d)' %
          (t['allocations'], t['frees'], t['leaked_allocations']))
    ck.eq(t['allocated_bytes'], t['freed_bytes'] + t['leaked_bytes'],
          'totals: allocated_bytes == freed_bytes + leaked_bytes')
    for f in fns:
        if f['self_allocations'] != f['self_frees'] + f['self_leaked_allocations']:
            ck.fail('%s: self_allocations %d != self_frees %d + self_leaked_allocations %d' %
                    (f['name'], f['self_allocations'], f['self_frees'],
                     f['self_leaked_allocations']))
        if f['self_allocations'] > f['total_allocations'] or f['self_bytes'] > f['total_bytes']:
            ck.fail('%s: self above total (%r)' % (f['name'], f))
    ck.eq(sum(f['self_allocations'] for f in fns), t['allocations'],
          'sum of self_allocations over functions == totals.allocations')
    ck.eq(sum(f['self_bytes'] for f in fns), t['allocated_bytes'],
          'sum of self_bytes over functions == totals.allocated_bytes')
    alloc_self = [f['name'] for f in fns if ALLOCATOR_RE.match(f['name']) and
                  f['self_allocations']]
    ck.check(not alloc_self, 'no allocator entry point is a "self" function (got %s)' %
             alloc_self)
    # what the rest (libc, ld.so, libstdc++) did
    other_allocs = t['allocations'] - own['self_allocations']
    other_bytes = t['allocated_bytes'] - own['self_bytes']
    print('info: allocations besides the example\'s own: %d (%d bytes)' %
          (other_allocs, other_bytes))
    ck.check(other_allocs >= 0 and other_bytes >= 0,
             'totals are at least the example\'s own figures (%d allocations, %d bytes)' %
             (own['self_allocations'], own['self_bytes']))
    for key, okey in (('leaked_allocations', 'self_leaked_allocations'),
                      ('temporary_allocations', 'self_temporary')):
        lo, hi = own[okey], own[okey] + max(other_allocs, 0)
        ck.check(lo <= t[key] <= hi, 'totals.%s %d within [%d, %d] (own + others)' %
                 (key, t[key], lo, hi))
    if exp.get('min_foreign_leak'):
        other_leaked = t['leaked_bytes'] - own['self_leaked_bytes']
        ck.check(other_leaked >= exp['min_foreign_leak'],
                 'allocations made before the runtime\'s constructor are traced: libstdc++\'s '
                 'emergency pool (>= %d bytes, leaked) is counted (other leaked bytes: %d)' %
                 (exp['min_foreign_leak'], other_leaked))
    ck.eq(t['cross_thread_frees'], exp['cross_thread_frees'], 'totals.cross_thread_frees')
    ck.eq(t['untracked_frees'], 0,
          'totals.untracked_frees (the whole run is traced, nothing frees foreign blocks)')
    if exp['peak'] is not None:
        lo, hi = exp['peak'], exp['peak'] + max(other_bytes, 0)
        if other_bytes == 0:
            ck.eq(t['peak_bytes'], exp['peak'], 'totals.peak_bytes (nothing else allocated)')
        else:
            ck.check(lo <= t['peak_bytes'] <= hi,
                     'totals.peak_bytes %d within [%d, %d]' % (t['peak_bytes'], lo, hi))
    # heap over time
    heap = data['heap']
    ck.check(len(heap) > 0, 'heap series is not empty')
    if heap:
        ck.eq(max(p['live_bytes'] for p in heap), t['peak_bytes'],
              'maximum of the heap series == peak_bytes')
        ts = [p['ts_ns'] for p in heap]
        ck.check(ts == sorted(ts), 'heap series in time order')


def stack_self(stack):
    """The innermost frame that is not the allocator (frames are innermost first)."""
    for fr in stack['frames']:
        if not ALLOCATOR_RE.match(fr['name'] or ''):
            return fr
    return None


def check_stacks(ck, data, kind, want, own_names):
    stacks = [s for s in data['stacks'] if s.get('kind', kind) == kind]
    got = {}
    for s in stacks:
        fr = stack_self(s)
        name = fr['name'] if fr else '<none>'
        if name in own_names:
            a, b = got.get(name, (0, 0))
            got[name] = (a + s['allocations'], b + s['bytes'])
    fmt = lambda n: n
    ck.check(diff_table('--%s stacks (allocations, bytes) per self function' % kind,
                        want, got, fmt),
             '--%s: stacks of the example\'s functions are exact' % kind)
    sizes = [s['bytes'] for s in stacks]
    ck.check(sizes == sorted(sizes, reverse=True), '--%s stacks are largest bytes first' % kind)
    return stacks


def function_lines(source, name):
    """(first, last) line of the definition of C function `name` in source."""
    with open(source) as f:
        lines = f.read().split('\n')
    pat = re.compile(r'^COUNTED\b.*\b%s\(' % re.escape(name))
    for i, line in enumerate(lines):
        if pat.search(line):
            for j in range(i, len(lines)):
                if lines[j] == '}':
                    return i + 1, j + 1
    raise Failure('no definition of %s in %s' % (name, source))


def marker_line(source, marker):
    with open(source) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise Failure('no %s in %s' % (marker, source))


def check_leak_frames(ck, stacks, exp, source, build):
    if not stacks:
        ck.fail('--leaks lists no stack')
        return
    first = stacks[0]
    names = [fr['name'] for fr in first['frames']]
    fr = stack_self(first)
    ck.check(fr is not None and fr['name'] == exp['first_leak'],
             '--leaks: the first stack is %s\'s (frames %s)' % (exp['first_leak'], names))
    ck.check((first['allocations'], first['bytes']) == exp['leaks'][exp['first_leak']],
             '--leaks: first stack has %r (allocations, bytes), got %r' %
             (exp['leaks'][exp['first_leak']], (first['allocations'], first['bytes'])))
    ck.check('main' in names and names.index('main') > names.index(exp['first_leak'])
             if exp['first_leak'] in names else False,
             '--leaks: main is an outer frame of %s (frames %s)' % (exp['first_leak'], names))
    if fr is None or not source:
        return
    lo, hi = function_lines(source, exp['first_leak'])
    site = marker_line(source, 'LEAK-SITE')
    ck.check(bool(fr['file']) and fr['file'].endswith(os.path.join('examples',
                                                                     os.path.basename(source))),
             '--leaks: frame %s has file .../examples/%s (got %r)' %
             (fr['name'], os.path.basename(source), fr['file']))
    line = fr['line']
    print('info: %s frame of the leak: %s:%s (definition %d-%d, malloc call %d)' %
          (build, fr['file'], line, lo, hi, site))
    ck.check(is_int(line) and lo <= line <= hi,
             '--leaks: frame %s line %r is within its definition, lines %d-%d' %
             (fr['name'], line, lo, hi))
    if build == 'plain':
        ck.eq(line, site, '--leaks: unwound frame %s points at the malloc call' % fr['name'])


# --------------------------------------------------------------------------
# tests


def test_example(name):
    def t(ck, cyg, example, args):
        exp = EXPECT[name]()
        capture = record_memory(ck, cyg, example, exp)
        data = memory_json(cyg, capture)
        compare_functions(ck, data, exp['self'], SELF_KEYS, 'self figures per function')
        compare_functions(ck, data, exp['total'], TOTAL_KEYS, 'total figures per function')
        check_totals(ck, data, exp)
        own = set(exp['self'])
        st = memory_json(cyg, capture, ['--leaks', '--top', '0'])
        leaks = check_stacks(ck, st, 'leaks', exp['leaks'], own)
        if exp.get('first_leak'):
            check_leak_frames(ck, leaks, exp, args.source, args.build)
        st = memory_json(cyg, capture, ['--temporary', '--top', '0'])
        check_stacks(ck, st, 'temporary', exp['temporary'], own)
        if 'peak_stacks' in exp:
            st = memory_json(cyg, capture, ['--peak', '--top', '0'])
            check_stacks(ck, st, 'peak', exp['peak_stacks'], own)
            ck.eq(st['totals']['peak_bytes'], data['totals']['peak_bytes'],
                  'peak_bytes with --peak is the same')
    return t


def test_report(ck, cyg, example, args):
    """`cygprof report` on a --memory capture still gives exact call counts;
    `memory -F/-N` warns about a pattern that names no function."""
    exp = exp_basic()
    capture = record_memory(ck, cyg, example, exp)
    data, _ = cyg.report_json(capture, ck)
    cygtest.check_functions(ck, data, exp['calls'])
    cygtest.check_arcs(ck, data, exp['arcs'], {'main'})
    ck.eq(data['lost_events'], 0, 'lost_events')
    ck.eq(len(data['threads']), 1, 'number of threads')
    # a pattern that names no function of the capture is said, one line
    # each, exit 0; those that name one are not
    fn = sorted(f for f in exp['calls'] if f != 'main')[0]
    cp = run([cyg.exe, 'memory', '-F', 'zz_none', '-F', fn, '-N', 'q*', '-N', 'main', capture])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'memory with unmatched filters: exit')
    ck.eq([l for l in cp.err.splitlines() if l.startswith('cygprof: warning:')], [
        "cygprof: warning: memory: -F 'zz_none' matched no function of the capture",
        "cygprof: warning: memory: -N 'q*' matched no function of the capture"],
        'memory: the unmatched patterns named, one line each')


def test_order(ck, cyg, example, args):
    """`cygprof memory`'s function table opens on the functions that
    allocate: by self bytes (then total bytes), the header saying so; main
    and make_list (no allocation of their own) after every allocator;
    --sort total gives main first; --top N exactly N rows."""
    exp = exp_basic()
    capture = record_memory(ck, cyg, example, exp)
    want = [n for n in sorted((n for n in exp['self'] if exp['total'][n]['total_allocations']),
                              key=lambda n: (-exp['self'][n]['self_bytes'],
                                             -exp['total'][n]['total_bytes'], n))]
    cp = run([cyg.exe, 'memory', '--format=json', capture])
    ck.eq([f['name'] for f in json.loads(cp.out)['functions']], want,
          'JSON: functions by self bytes, then total bytes')

    def table(opts):
        cp = run([cyg.exe, 'memory', '--top', '0'] + opts + [capture])
        ck.eq(cp.returncode, 0, 'memory %s: exit 0' % ' '.join(opts))
        out = cp.out.split('Functions (by ', 1)[-1]
        head = out.split('):', 1)[0]
        rows = []
        for line in out.split('\n\n', 2)[1].splitlines()[1:]:
            w = line.split()
            if len(w) == 9 and w[0].replace('.', '').isdigit():
                rows.append((w[8], int(w[2]), int(w[3])))
        return head, rows, cp.out
    head, rows, _ = table([])
    ck.check(head.startswith('self bytes'), 'text: the header says the order (%r)' % head)
    ck.eq([r[0] for r in rows], want, 'text: the rows by self bytes, then total bytes')
    ck.eq({r[0]: (r[1], r[2]) for r in rows},
          {n: (exp['self'][n]['self_bytes'], exp['total'][n]['total_bytes']) for n in want},
          'text: exact self and total bytes per function')
    head, rows, _ = table(['--sort', 'total'])
    ck.check(head.startswith('total bytes'), '--sort total: the header says so')
    ck.eq(rows[0][0] if rows else None, 'main', '--sort total: main (all the bytes) first')
    cp = run([cyg.exe, 'memory', '--top', '3', capture])
    fn_rows = [ln for ln in cp.out.split('Functions (by ', 1)[-1].split('Heap over time')[0]
               .splitlines() if re.match(r'^\s*\d+\.\d\d\s+\d+\.\d\d\s', ln)]
    ck.eq([ln.split()[-1] for ln in fn_rows], want[:3], '--top 3: exactly the first 3 rows')
    ck.check('... %d more (--top 0 shows all)' % (len(want) - 3) in cp.out,
             '--top 3: says %d more' % (len(want) - 3))


def test_no_memory(ck, cyg, example, args):
    """A capture recorded without --memory: `cygprof memory` fails in one line."""
    exp = exp_basic()
    capture = record_memory(ck, cyg, example, exp, opts=(), capname='plain.data')
    for opts in ([], ['--format=json'], ['--leaks']):
        cp = run([cyg.exe, 'memory'] + opts + [capture])
        cygtest.expect_error(ck, cp, 'memory %s of a capture without --memory' % ' '.join(opts), 1)
        ck.eq(cp.out, '', 'nothing on stdout')


def test_zmalloc(ck, cyg, example, args):
    """tests/memory/zmalloc.c: Redis's zmalloc shape.  The allocation stacks
    end in ztrymalloc_usable_internal, inlined or not, never in zmalloc
    again below it (folded, and with source lines); its self figures and
    the callers' totals are exact."""
    exp = dict(args=[], status=0, stdout=[])
    capture = record_memory(ck, cyg, example, exp)
    cp = run([cyg.exe, 'export', '--format=folded', '--memory', 'allocated', capture])
    ck.eq(cp.returncode, 0, 'export --format=folded --memory allocated: exit status')
    folded = {}
    for line in cp.out.splitlines():
        stack, _, n = line.rpartition(' ')
        folded[stack] = folded.get(stack, 0) + int(n)
    ck.eq(folded, {'main;createObject;zmalloc;ztrymalloc_usable_internal': 1000,
                   'main;createString;zmalloc_usable;ztrymalloc_usable_internal': 1000},
          'the allocation stacks and their bytes')
    for stack in folded:
        names = stack.split(';')
        ck.eq(len(names), len(set(names)), 'no function twice in %s' % stack)
    data = memory_json(cyg, capture)
    compare_functions(ck, data, {
        'ztrymalloc_usable_internal': S(15, 2000, 15), 'zmalloc': S(0, 0, 0),
        'zmalloc_usable': S(0, 0, 0), 'createObject': S(0, 0, 0),
        'createString': S(0, 0, 0), 'main': S(0, 0, 0)}, SELF_KEYS, 'self figures')
    compare_functions(ck, data, {
        'ztrymalloc_usable_internal': T(15, 2000, 15), 'zmalloc': T(10, 1000, 10),
        'zmalloc_usable': T(5, 1000, 5), 'createObject': T(10, 1000, 10),
        'createString': T(5, 1000, 5), 'main': T(15, 2000, 15)}, TOTAL_KEYS, 'total figures')
    ck.eq((data['totals']['allocations'], data['totals']['allocated_bytes'],
           data['totals']['frees']), (15, 2000, 15), 'totals: allocations, bytes, frees')
    # with source lines: the frames of the inlined function and its callers
    st = memory_json(cyg, capture, ['--peak', '--top', '0'])
    ck.eq(sorted((s['bytes'], [f['name'] for f in s['frames']]) for s in st['stacks']),
          [(1000, ['ztrymalloc_usable_internal', 'zmalloc', 'createObject', 'main']),
           (1000, ['ztrymalloc_usable_internal', 'zmalloc_usable', 'createString', 'main'])],
          '--peak stacks with source lines (innermost first)')


TESTS = {name: test_example(name) for name in EXPECT}
TESTS.update({'report': test_report, 'no-memory': test_no_memory, 'order': test_order,
              'zmalloc': test_zmalloc})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--example', required=True)
    ap.add_argument('--test', required=True, choices=sorted(TESTS))
    ap.add_argument('--source', help='the example\'s source file (for file/line checks)')
    ap.add_argument('--build', choices=('instr', 'plain'), default='instr',
                    help='instrumented (-finstrument-functions) or plain build')
    ap.add_argument('--sanitize', default='none', help='meson\'s b_sanitize option')
    ap.add_argument('--skip', metavar='REASON')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()
    cygtest.VERBOSE = args.verbose or bool(os.environ.get('CYGPROF_E2E_VERBOSE'))

    if not args.skip and args.sanitize not in ('', 'none'):
        args.skip = ('b_sanitize=%s: the sanitizer owns malloc, the malloc preload '
                     'cannot be tested under it' % args.sanitize)
    if args.skip:
        print('SKIP %s: %s' % (args.test, args.skip))
        return SKIP
    for what, path in (('cygprof', args.cygprof), ('example', args.example)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            print('FAIL %s: %s %s is not an executable file' % (args.test, what, path))
            return 1

    ck = Checker()
    workdir = tempfile.mkdtemp(prefix='cygprof-mem-%s-' % args.test)
    cyg = cygtest.Cygprof(os.path.abspath(args.cygprof), workdir)
    example = os.path.abspath(args.example)
    try:
        TESTS[args.test](ck, cyg, example, args)
    except Failure as e:
        ck.fail(str(e))
    finally:
        if args.keep or (ck.failures and os.environ.get('CYGPROF_E2E_KEEP')):
            print('kept %s' % workdir)
        else:
            shutil.rmtree(workdir, ignore_errors=True)

    if ck.failures:
        print('FAIL %s (%s): %d of %d checks failed' %
              (args.test, os.path.basename(example), len(ck.failures), max(ck.count, 1)))
        return 1
    print('PASS %s (%s): %d checks' % (args.test, os.path.basename(example), ck.count))
    return 0


if __name__ == '__main__':
    sys.exit(main())
