#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of how functions get their names: from the
program's symbols and DWARF, from debug files found later, through another
mount namespace.

Usage:
  symbols.py --cygprof CYGPROF --example EXAMPLE --test NAME [--skip REASON] [-v] [--keep]

Tests (meson names symbols-TEST):
  mount-namespace  a library that only exists in the program's mount
                   namespace: its functions are named (/proc/PID/root)
  stripped-debug-dir
                   a stripped program named through its debug file by
                   build-id (--debug-dir, CYGPROF_DEBUG_DIRS)
  names-after-the-fact
                   a program without -g, stripped: named at report time by
                   a debug file or --symfs, in every command
  inlined-frames   an allocation in an inlined function: its frame named
                   after it, "inlined in" its caller
"""

import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cygtest import (  # noqa: E402
    driver_main, Failure, SKIP, check_functions, describe_status, run)


NS_LIB_C = r'''
#define N __attribute__((noinline, noipa))
N int foo_inner(int x) { return x * 2; }
N int foo_outer(int x) { return foo_inner(x) + 1; }
'''


NS_MAIN_C = r'''
int foo_outer(int);
int main(void) { int s = 0; for (int i = 0; i < 7; i++) s += foo_outer(i); return s == 49 ? 0 : 1; }
'''


def test_mount_namespace(ck, cyg, example):
    """A process in another mount namespace (as in a container) uses a
    library that only exists there: its functions are still named, because
    the collector opens its objects through /proc/PID/root."""
    unshare = shutil.which('unshare')
    cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
    if os.geteuid() != 0 or not unshare or not cc:
        print('SKIP: needs root, unshare(1) and a C compiler')
        sys.exit(SKIP)
    w = cyg.workdir
    lib = os.path.join(w, 'lib')
    mnt = os.path.join(w, 'mnt')  # empty here; the library appears there only inside
    os.mkdir(lib)
    os.mkdir(mnt)
    for name, text in (('foo.c', NS_LIB_C), ('main.c', NS_MAIN_C)):
        with open(os.path.join(w, name), 'w') as f:
            f.write(text)
    cp = run([cc, '-O2', '-g', '-finstrument-functions', '-fPIC', '-shared', '-o',
              os.path.join(lib, 'libfoo.so'), os.path.join(w, 'foo.c')])
    ck.eq(cp.returncode, 0, 'the library builds')
    prog = os.path.join(w, 'prog')
    cp = run([cc, '-O2', '-g', '-finstrument-functions', '-o', prog, os.path.join(w, 'main.c'),
              '-L', lib, '-lfoo', '-Wl,-rpath,' + mnt])
    ck.eq(cp.returncode, 0, 'the program builds')
    probe = run([unshare, '--mount', '--propagation', 'private', 'true'])
    if probe.returncode != 0:
        print('SKIP: cannot make a mount namespace here: %s' % probe.err.strip())
        sys.exit(SKIP)
    capture = os.path.join(w, 'ns.data')
    cp = cyg.record(capture, [unshare, '--mount', '--propagation', 'private', 'sh', '-c',
                              'mount --bind %s %s && exec %s' % (lib, mnt, prog)])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record exit status')
    ck.check(not os.path.exists(os.path.join(mnt, 'libfoo.so')),
             'the library is not visible outside the namespace')
    data, _ = cyg.report_json(capture, ck)
    calls = {f['name']: f['calls'] for f in data['functions']}
    ck.eq(calls.get('foo_outer'), 7, 'foo_outer (in the namespace-only library) named, 7 calls')
    ck.eq(calls.get('foo_inner'), 7, 'foo_inner named, 7 calls')
    ck.eq(calls.get('main'), 1, 'main')


def test_stripped(ck, cyg, example):
    """A fully stripped program: without its debug file its functions have
    no names; with the debug file found by build-id in --debug-dir (or
    CYGPROF_DEBUG_DIRS) they do, and the counts are the same."""
    objcopy, strip = shutil.which('objcopy'), shutil.which('strip')
    if not objcopy or not strip:
        print('SKIP: needs objcopy and strip')
        sys.exit(SKIP)
    w = cyg.workdir
    prog = os.path.join(w, 'prog')
    shutil.copy(example, prog)
    notes = run(['readelf', '-n', prog]).out
    m = re.search(r'Build ID: ([0-9a-f]+)', notes)
    if not m:
        raise Failure('no build-id in %s' % example)
    bid = m.group(1)
    dbg = os.path.join(w, 'dbg', '.build-id', bid[:2])
    os.makedirs(dbg)
    ck.eq(run([objcopy, '--only-keep-debug', prog, os.path.join(dbg, bid[2:] + '.debug')]).returncode,
          0, 'objcopy --only-keep-debug')
    ck.eq(run([strip, '--strip-all', prog]).returncode, 0, 'strip --strip-all')
    want = {'main': 1, 'a': 3, 'b': 6, 'c': 30}
    cap1 = os.path.join(w, 'nodebug.data')
    cyg.record(cap1, [prog])
    data, _ = cyg.report_json(cap1, ck)
    names = {f['name'] for f in data['functions']}
    ck.check(not (names & set(want)), 'stripped, no debug file: no names (got %s)' % sorted(names))
    cap2 = os.path.join(w, 'debug.data')
    cyg.record(cap2, [prog], ['--debug-dir', os.path.join(w, 'dbg')])
    data, _ = cyg.report_json(cap2, ck)
    check_functions(ck, data, want)


NODEBUG_C = r"""
#include <stdlib.h>
void *keep[8];
static __attribute__((noinline)) int c(int x) { return x * 3; }
__attribute__((noinline)) int b(int x)
{
	int s = 0;
	for (int i = 0; i < 5; i++)
		s += c(x + i);
	keep[x & 7] = malloc(100);
	return s;
}
__attribute__((noinline)) int a(int x) { return b(x) + b(x + 1); }
int main(void) { int s = 0; for (int i = 0; i < 3; i++) s += a(i); return s == VALUE ? 0 : 1; }
"""


def test_names_after(ck, cyg, example):
    """A program built without -g and stripped is recorded: the capture
    names its functions as addresses.  At report time, its debug file made
    with objcopy --only-keep-debug (by build-id under --debug-dir, or as
    DIR/prog.debug), or its unstripped copy under --symfs, names them in
    report, replay, memory and gprof, with the exact counts; a debug file of
    another build of the program does not."""
    cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
    objcopy, strip = shutil.which('objcopy'), shutil.which('strip')
    if not cc or not objcopy or not strip:
        print('SKIP: needs a C compiler, objcopy and strip')
        sys.exit(SKIP)
    w = cyg.workdir
    src = os.path.join(w, 'nodebug.c')
    prog = os.path.join(w, 'prog')
    # b(x) = 15x + 30, a(i) = 30i + 75: the sum over i = 0..2 is 315
    for value, out in (('315', prog), ('316', os.path.join(w, 'other'))):
        with open(src, 'w') as f:
            f.write(NODEBUG_C.replace('VALUE', value))
        ck.eq(run([cc, '-O1', '-finstrument-functions', '-o', out, src]).returncode, 0,
              'build %s without -g' % os.path.basename(out))
    ck.check('.debug_info' not in run(['readelf', '-S', prog]).out, 'no DWARF in the program')
    bid = re.search(r'Build ID: ([0-9a-f]+)', run(['readelf', '-n', prog]).out).group(1)
    bydir = os.path.join(w, 'dbg')
    os.makedirs(os.path.join(bydir, '.build-id', bid[:2]))
    flat = os.path.join(w, 'flat')
    wrong = os.path.join(w, 'wrong')
    symfs = os.path.join(w, 'sysroot')
    for d in (flat, wrong, symfs + os.path.dirname(prog)):
        os.makedirs(d)
    for inp, outp in ((prog, os.path.join(bydir, '.build-id', bid[:2], bid[2:] + '.debug')),
                      (prog, os.path.join(flat, 'prog.debug')),
                      (os.path.join(w, 'other'), os.path.join(wrong, 'prog.debug'))):
        ck.eq(run([objcopy, '--only-keep-debug', inp, outp]).returncode, 0,
              'objcopy --only-keep-debug > %s' % os.path.relpath(outp, w))
    shutil.copy(prog, symfs + prog)
    ck.eq(run([strip, '--strip-all', prog]).returncode, 0, 'strip --strip-all')

    cap = os.path.join(w, 'cap.data')
    cp = cyg.record(cap, [prog], ['--memory', '--timeline'])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record the stripped program')
    want = {'main': 1, 'a': 3, 'b': 6, 'c': 30}

    def report(opts):
        cp = run([cyg.exe, 'report', '--format=json'] + opts + [cap])
        ck.eq(cp.returncode, 0, 'report %s exits 0' % ' '.join(opts))
        return json.loads(cp.out) if cp.returncode == 0 else {'functions': []}

    names = {f['name'] for f in report([])['functions']}
    ck.check(not (names & set(want)), 'no debug file: addresses only (got %s)' % sorted(names))
    ck.check(all(re.match(r'prog\+0x[0-9a-f]+$', n) for n in names),
             'the capture names them prog+0x... (got %s)' % sorted(names))
    for opts in (['--debug-dir', bydir], ['--debug-dir', flat], ['--symfs', symfs]):
        check_functions(ck, report(opts), want)
    names = {f['name'] for f in report(['--debug-dir', wrong])['functions']}
    ck.check(not (names & set(want)),
             'a debug file of another build is not used (got %s)' % sorted(names))

    cp = run([cyg.exe, 'memory', '--leaks', '--format=json', '--debug-dir', bydir, cap])
    ck.eq(cp.returncode, 0, 'memory --debug-dir exits 0')
    data = json.loads(cp.out) if cp.returncode == 0 else {}
    fns = {f['name']: f['self_allocations'] for f in data.get('functions', [])}
    ck.eq(fns.get('b'), 6, 'memory: b made the 6 allocations')
    tops = sorted(s['frames'][0]['name'] for s in data.get('stacks', []))
    ck.check(tops and set(tops) == {'b'}, 'memory: every leak stack starts in b (got %s)' % tops)
    cp = run([cyg.exe, 'gprof', '-b', '--symfs', symfs, cap])
    ck.eq(cp.returncode, 0, 'gprof --symfs exits 0')
    rows = {m.group(2): int(m.group(1)) for m in
            re.finditer(r'^\s*[\d.]+\s+[\d.]+\s+[\d.]+\s+(\d+)\s+[\d.]+\s+[\d.]+\s+(\S+)$',
                        cp.out, re.M)}
    ck.eq(rows, want, 'gprof --symfs: the flat profile names the calls')
    cp = run([cyg.exe, 'replay', '--debug-dir', bydir, cap])
    ck.eq(cp.returncode, 0, 'replay --debug-dir exits 0')
    called = re.findall(r'\b([abc])\(\)', cp.out)
    ck.eq({n: called.count(n) for n in 'abc'}, {'a': 3, 'b': 6, 'c': 30},
          'replay --debug-dir: every call named')
    for cmd in ('report', 'memory', 'annotate', 'gprof', 'replay'):
        cp = run([cyg.exe, cmd, '--symfs', os.path.join(w, 'nowhere'), cap])
        ck.eq(cp.returncode, 2, '%s --symfs missing-dir: usage error' % cmd)
        ck.check(cp.err.count('\n') == 1 and 'nowhere' in cp.err,
                 '%s: one line naming the directory (got %r)' % (cmd, cp.err))


INLINE_C = r'''
#include <stdlib.h>
void *keep[16];
static inline __attribute__((always_inline)) void *grab(int n) { return malloc(n); }
__attribute__((noinline)) void user(void) { for (int i = 0; i < 3; i++) keep[i] = grab(40); }
int main(void) { user(); return 0; }
'''


def test_inlined_frames(ck, cyg, example):
    """An allocation made in an inlined function: its frame is named after
    the inlined function (from DWARF), 'inlined in' its caller, instrumented
    or not."""
    cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
    if not cc:
        print('SKIP: needs a C compiler')
        sys.exit(SKIP)
    w = cyg.workdir
    src = os.path.join(w, 'inl.c')
    with open(src, 'w') as f:
        f.write(INLINE_C)
    for flags in ([], ['-finstrument-functions']):
        prog = os.path.join(w, 'inl' + ('-instr' if flags else ''))
        ck.eq(run([cc, '-O2', '-g', '-o', prog, src] + flags).returncode, 0, 'build %s' % prog)
        cap = os.path.join(w, os.path.basename(prog) + '.data')
        cyg.record(cap, [prog], ['--memory'])
        cp = run([cyg.exe, 'memory', '--leaks', '--format=json', cap])
        ck.eq(cp.returncode, 0, 'memory --leaks (%s)' % prog)
        stacks = json.loads(cp.out).get('stacks', [])
        mine = [s for s in stacks if s['bytes'] == 120]
        if not ck.check(len(mine) == 1, 'one leak stack of 120 bytes (%s)' % prog):
            continue
        names = [(fr['name'], fr.get('inlined_in')) for fr in mine[0]['frames']]
        ck.eq(names[:3], [('grab', 'user'), ('user', None), ('main', None)],
              'frames of the leak (%s)' % prog)


TESTS = {
    'mount-namespace': test_mount_namespace,
    'stripped-debug-dir': test_stripped,
    'names-after-the-fact': test_names_after,
    'inlined-frames': test_inlined_frames,
}


def main():
    return driver_main(TESTS, 'symbols', __doc__,
                       call=lambda fn, ck, cyg, example, args: fn(ck, cyg, example))


if __name__ == '__main__':
    sys.exit(main())
