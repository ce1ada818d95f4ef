#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the runtime's side of record --attach (cyg/cyg-attach.h,
docs/attach.md steps 5, 7 and 8), without the injector.

Usage:
  attach_runtime.py --cygprof CYGPROF --example ATTACH_SELF --runtime LIBCYGPROF_CYG
                    --test NAME [--skip REASON] [-v] [--keep]

tests/attach/attach-self.c is built with -finstrument-functions and runs
WITHOUT the runtime preloaded: it dlopen()s the runtime itself, calls
cygprof_attach_fd() on the collector's mapping, seeds its own stack, points
its own GOT slots of the hooks at the runtime, and at the end puts them
back and calls cygprof_detach().  The collector is a plain `cygprof record`
of `sh -c`, which takes CYGPROF_SHM_FD and LD_PRELOAD out of the
environment and execs attach-self with the fd number as an argument: the
exec'd image finds no environment (its constructor leaves the runtime off)
and is attached only through the entry.

Tests:
  attach-self        exact calls and arcs: main 1 -> run 1 -> work 1 -> leaf
                     1000 on the main thread (the seeded frames are the
                     roots), worker -> work -> leaf 500 on a thread made
                     after the attach; nothing of the 100 calls before the
                     attach nor of the 77 + 55 (+ a thread's) after the detach
                     (some of them through the runtime's hooks); no unpaired
                     exit.
  attach-noseed      the same without a seed: work has no caller, leaf the
                     same counts, no unpaired exit.
  attach-exitfirst   the main thread's first hook is the exit of a seeded
                     call made before the attach: it pairs (work_attach 1
                     under run), no unpaired exit.
  attach-timeline    attach-self recorded with --timeline: the same counts,
                     every recorded event balanced.
  attach-again       detached, then attached again (to a second descriptor
                     of the same mapping): a thread that waited across the
                     detach gets a new writer at its first hook (an enter),
                     the main thread at its first (an exit); exact totals
                     of both windows, nothing in between, no unpaired exit.
  attach-abort       first attached by cygprof_attach_path() and undone by
                     cygprof_attach_abort(collector) (another pid's is
                     refused, a second returns -EINVAL), as the injector's
                     trampoline undoes an attach whose attacher died; calls
                     through the runtime's hooks then are not recorded;
                     attached again: the same exact counts as attach-self.
  attach-smaller     attached again to a smaller mapping of the program's own
                     (the earlier writers' nodes lie past its end): the
                     capture has the first window only, the program finds
                     the second in its mapping, nothing crashes.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, describe_status  # noqa: E402

# sh takes the fd out of the environment, so that the exec'd program sees
# neither CYGPROF_SHM_FD nor LD_PRELOAD.
WRAP = 'f=$CYGPROF_SHM_FD; unset CYGPROF_SHM_FD LD_PRELOAD; exec "$0" "$1" "$f" "$2"'


def calls_of(data):
    return {f['name']: f['calls'] for f in data['functions']}


def arcs_of(data):
    return {(a['caller'], a['callee']): a['calls'] for a in data['arcs']}


def spont_of(data):
    return {f['name']: f['spontaneous_calls'] for f in data['functions']}


def record(ck, cyg, example, runtime, mode, opts=()):
    capture = os.path.join(cyg.workdir, 'cap-%s.data' % (mode or 'seed'))
    cp = cyg.record(capture, ['/bin/sh', '-c', WRAP, example, os.path.abspath(runtime), mode],
                    opts)
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record exit status (the program\'s)')
    if cp.returncode != 0:
        raise Failure('attach-self failed: %s' % (cp.err.strip() or cp.out.strip()))
    ck.check('attach-self: sink' in cp.out, 'attach-self ran to its end')
    data, _ = cyg.report_json(capture, ck)
    return capture, data


def check_common(ck, data, tag, main_calls):
    got = calls_of(data)
    ck.eq(got.get('leaf'), 1500, tag + 'calls of leaf (1000 + 500, none before the attach '
          'or after the detach)')
    ck.eq(got.get('work'), 2, tag + 'calls of work')
    ck.eq(got.get('worker'), 1, tag + 'calls of worker (the thread made after the attach; '
          'the one made after the detach not counted)')
    arcs = arcs_of(data)
    ck.eq(arcs.get(('work', 'leaf')), 1500, tag + 'arc work -> leaf')
    ck.eq(arcs.get(('worker', 'work')), 1, tag + 'arc worker -> work')
    ck.eq(data['limits']['unpaired'], 0, tag + 'unpaired exits')
    ck.eq(data['limits']['damaged'], None, tag + 'nothing rejected as damage')
    # the image attached: the one sh exec'd, with two threads recorded
    procs = [p for p in data['processes']
             if os.path.basename(p['exe']).startswith('attach-self')]
    ck.eq(len(procs), 1, tag + 'process images of attach-self')
    if procs:
        pid = procs[0]['pid']
        ths = [t for t in data['threads'] if t['pid'] == pid and t['calls']]
        ck.eq(len(ths), 2, tag + 'threads of attach-self with calls (main, the worker)')
        ck.eq(sorted(t['calls'] for t in ths), sorted([main_calls, 502]),
              tag + 'calls per thread (the main thread\'s, worker + work + leaf 500)')


def test_seed(ck, cyg, example, args):
    _, data = record(ck, cyg, example, args.runtime, '')
    check_common(ck, data, '', 1003)
    got = calls_of(data)
    ck.eq(got.get('main'), 1, 'calls of main (seeded)')
    ck.eq(got.get('run'), 1, 'calls of run (seeded)')
    arcs = arcs_of(data)
    ck.eq(arcs.get(('main', 'run')), 1, 'arc main -> run (seeded frames)')
    ck.eq(arcs.get(('run', 'work')), 1, 'arc run -> work: the call path starts at main')
    sp = spont_of(data)
    ck.eq(sp.get('main'), 1, 'main is the main thread\'s root')
    ck.eq(sp.get('work'), 0, 'work has a caller')
    ck.eq(sp.get('worker'), 1, 'worker is its thread\'s root')


def test_noseed(ck, cyg, example, args):
    _, data = record(ck, cyg, example, args.runtime, 'noseed')
    check_common(ck, data, '', 1001)
    got = calls_of(data)
    ck.eq(got.get('main'), None, 'main not recorded (entered before the attach, left after '
          'the detach)')
    ck.eq(got.get('run'), None, 'run not recorded')
    ck.eq(spont_of(data).get('work'), 1, 'work without a seed: a root of its thread')


def test_exitfirst(ck, cyg, example, args):
    _, data = record(ck, cyg, example, args.runtime, 'exitfirst')
    check_common(ck, data, '', 1004)
    got = calls_of(data)
    ck.eq(got.get('work_attach'), 1, 'calls of work_attach (seeded, its exit the first hook)')
    arcs = arcs_of(data)
    ck.eq(arcs.get(('run', 'work_attach')), 1, 'arc run -> work_attach')
    ck.eq(arcs.get(('run', 'work')), 1, 'arc run -> work')
    ck.eq(arcs.get(('main', 'run')), 1, 'arc main -> run')


def test_timeline(ck, cyg, example, args):
    capture, data = record(ck, cyg, example, args.runtime, '', ['--timeline'])
    check_common(ck, data, 'timeline: ', 1003)
    cp = cygtest.run([cyg.exe, 'replay', capture])
    ck.eq(cp.returncode, 0, 'replay exit status')
    ck.eq(data['lost_events'], 0, 'events lost')


def test_again(ck, cyg, example, args):
    _, data = record(ck, cyg, example, args.runtime, 'reattach')
    got = calls_of(data)
    want = {'main': 2, 'run': 2, 'work_reattach': 1, 'work': 5, 'leaf': 2200, 'worker': 1,
            'parker': 2}
    for name, n in sorted(want.items()):
        ck.eq(got.get(name), n, 'calls of %s over both windows' % name)
    arcs = arcs_of(data)
    want = {('main', 'run'): 2, ('run', 'work'): 2, ('run', 'work_reattach'): 1,
            ('work', 'leaf'): 2200, ('worker', 'work'): 1, ('parker', 'work'): 2}
    for arc, n in sorted(want.items()):
        ck.eq(arcs.get(arc), n, 'arc %s -> %s' % arc)
    ck.eq(data['limits']['unpaired'], 0, 'unpaired exits')
    ck.eq(data['limits']['damaged'], None, 'nothing rejected as damage')
    sp = spont_of(data)
    ck.eq(sp.get('main'), 2, 'main is the main thread\'s root in both windows')
    ck.eq(sp.get('parker'), 2, 'parker is its thread\'s root in both windows')
    ck.eq(sp.get('work'), 0, 'work always has a caller')


def test_abort(ck, cyg, example, args):
    _, data = record(ck, cyg, example, args.runtime, 'abort')
    got = calls_of(data)
    want = {'main': 1, 'run': 1, 'work': 2, 'leaf': 1500, 'worker': 1}
    for name, n in sorted(want.items()):
        ck.eq(got.get(name), n, 'calls of %s (the attach after the undone one only)' % name)
    ck.eq(arcs_of(data).get(('run', 'work')), 1, 'arc run -> work')
    ck.eq(data['limits']['unpaired'], 0, 'unpaired exits')
    ck.eq(data['limits']['damaged'], None, 'nothing rejected as damage')


def test_smaller(ck, cyg, example, args):
    _, data = record(ck, cyg, example, args.runtime, 'smaller')
    got = calls_of(data)
    want = {'main': 1, 'run': 1, 'work': 3, 'leaf': 1700, 'worker': 1, 'parker': 1}
    for name, n in sorted(want.items()):
        ck.eq(got.get(name), n, 'calls of %s (the first window only)' % name)
    ck.eq(got.get('work_reattach'), None, 'work_reattach not in the capture')
    ck.eq(data['limits']['unpaired'], 0, 'unpaired exits')
    ck.eq(data['limits']['damaged'], None, 'nothing rejected as damage')


TESTS = {
    'attach-self': test_seed,
    'attach-noseed': test_noseed,
    'attach-exitfirst': test_exitfirst,
    'attach-timeline': test_timeline,
    'attach-again': test_again,
    'attach-smaller': test_smaller,
    'attach-abort': test_abort,
}


def main():
    return cygtest.driver_main(TESTS, 'attach-rt', __doc__, extra=lambda ap: ap.add_argument(
        '--runtime', required=True, help='libcygprof-cyg.so'))


if __name__ == '__main__':
    sys.exit(main())
