#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of cygprof against programs that misbehave on purpose.

Usage:
  hostile.py --cygprof CYGPROF --example EXE --test NAME --meta CAPTURE_META
             --lib DLFIFO_LIB [--sanitize B_SANITIZE] [--skip REASON] [-v] [--keep]

  random      examples/scribble.c overwrites the whole used part of the shared
              mapping with random bytes (7 seeds, with and without --timeline):
              the collector lives, exits with the program's status (3), and
              leaves a capture that report and info read, marked damaged
  targeted    scribble's targeted damage, one run each (a cycle in the thread
              list, a huge ring_off and head, gids out of range, a parent
              cycle, maps_len past the end, an unterminated exe, a stack out of
              range, a cycle in the process list, random ring words, the
              runtime's lock held forever): the same, plus exact counts where
              the damage spares the trees
  sprinkle    256 random words in the records and trees (5 seeds, --timeline)
  memory      random bytes and random ring words with --memory
  words       200,000 words at random places of the mapped window (used or
              not yet), after which the program goes on through the runtime
              (300 calls from three call sites, two new threads, exit(3)):
              8 seeds, 3 of them also with --timeline and 2 with --memory
              (not under a sanitizer): each run ends within 60 s with the
              program's status 3 and its last line (work=600), the runtime
              says at most once which writer it dropped, and info reads
              the capture
  fds         examples/fdlist.c lists its descriptors: only the caller's (0, 1,
              2 and one it passed) and the shared memory, under the number
              CYGPROF_SHM_FD names; with CPU samples (the default) also the
              thread's sampler, a perf event at 1000 or above, out of the
              program's way; with --no-cpu not even that
  dlfifo      examples/dlfifo.c loads a copy of a library, which then becomes
              a FIFO or is deleted: record ends promptly, and the library's
              functions are named (or flagged "libdlfifo-copy.so+0x... [deleted]",
              never "0x7f...")
  checkpoint  examples/waitsig.c makes N calls, then waits: cygprof is
              SIGKILLed after a checkpoint (CYGPROF_CHECKPOINT_MS=200); the
              capture holds the exact counts and says it is incomplete
  rlimit      examples/asthreads.c under `ulimit -v` of 256 MB: all four
              threads are created under cygprof too, exact counts; a limit too
              small for cygprof gives one line saying what to do

Exit status: 0 passed, 1 failed, 77 skipped.  Helpers come from tests/lib/cygtest.py.
"""

import os
import re
import resource
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status  # noqa: E402

SKIP = cygtest.SKIP
ARGS = None
DAMAGED_RE = re.compile(r"^the program wrote into cygprof's shared memory: .+ "
                        r"(rejected|the runtime dropped)$")
RUNTIME_RE = re.compile(r"^cygprof: process \d+ wrote into cygprof's shared memory \(thread "
                        r"\d+'s [a-z' -]+\): that thread is no longer recorded$")


def meta(capture, key):
    """A metadata value of the capture, None when absent."""
    cp = subprocess.run([ARGS.meta, capture, key], stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE)
    if cp.returncode == 3:
        return None
    if cp.returncode != 0:
        raise Failure('capture-meta %s %s: %s' % (capture, key,
                                                  cp.stderr.decode('utf-8', 'replace').strip()))
    return cp.stdout.decode('utf-8', 'replace').rstrip('\n')


# --------------------------------------------------------------------------
# the scribbler

SCRIBBLE_FUNCTIONS = {'main': 1, 'worker': 2, 'work': 200}
SCRIBBLE_ARCS = {('main', 'work'): 100, ('worker', 'work'): 100}


def scribble(ck, cyg, example, mode, seed=None, opts=(), damaged=True, exact=False):
    """Record one damage mode: the collector lives, the capture reads."""
    what = '%s%s%s' % (mode, ' seed %d' % seed if seed is not None else '',
                       ' ' + ' '.join(opts) if opts else '')
    capture = os.path.join(cyg.workdir, 'scribble-%s-%s.data' % (mode, seed))
    args = [example, mode] + ([str(seed)] if seed is not None else [])
    t0 = time.monotonic()
    cp = run([cyg.exe, 'record', '-o', capture] + list(opts) + ['--'] + args,
             cwd=cyg.workdir, timeout=60)
    took = time.monotonic() - t0
    ck.eq(describe_status(cp.returncode), 'exit 3',
          '%s: record ends with the program\'s status' % what)
    ck.check(took < 30, '%s: record ends promptly (%.1f s)' % (what, took))
    ck.check('scribble: work=200 mapping=found' in cp.out,
             '%s: the program found the mapping (stdout %r)' % (what, cp.out))
    if not os.path.exists(capture):
        ck.fail('%s: no capture left' % what)
        return None
    rep = run([cyg.exe, 'report', '--format=json', capture])
    ck.eq(describe_status(rep.returncode), 'exit 0', '%s: report reads the capture' % what)
    info = run([cyg.exe, 'info', '--format=json', capture])
    ck.eq(describe_status(info.returncode), 'exit 0', '%s: info reads the capture' % what)
    dmg = meta(capture, 'damaged')
    if damaged is None:
        pass  # not every word changed is wrong: the mark is not asked for
    elif damaged:
        ck.check(dmg is not None and DAMAGED_RE.match(dmg),
                 '%s: the capture is marked damaged (damaged=%r)' % (what, dmg))
    else:
        ck.check(dmg is None, '%s: the capture is not marked damaged (damaged=%r)' % (what, dmg))
    ck.check(meta(capture, 'complete') == '1', '%s: the capture is complete' % what)
    if exact and rep.returncode == 0:
        data, _ = cyg.report_json(capture, ck)
        cygtest.check_functions(ck, data, SCRIBBLE_FUNCTIONS)
        cygtest.check_arcs(ck, data, SCRIBBLE_ARCS, {'main', 'worker'})
    if dmg:
        print('info: %s: damaged=%s' % (what, dmg))
    return capture


def test_random(ck, cyg, example):
    for seed in range(1, 8):
        scribble(ck, cyg, example, 'random', seed)
        scribble(ck, cyg, example, 'random', seed, ['--timeline'])


# mode: (options, marked damaged, counts exact)
TARGETED = {
    'none': ((), False, True),
    'threads': ((), True, True),
    'ring': (('--timeline',), True, True),
    'gids': (('--timeline',), True, False),
    'parents': ((), True, False),
    'maps': ((), True, True),
    'exe': ((), True, True),
    'stack': ((), True, True),
    'procs': ((), True, True),
    'lock': ((), False, True),
}


def test_targeted(ck, cyg, example):
    for mode, (opts, damaged, exact) in TARGETED.items():
        scribble(ck, cyg, example, mode, None, opts, damaged, exact)
    for seed in (1, 2, 3):
        scribble(ck, cyg, example, 'events', seed, ['--timeline'], True, True)


def test_sprinkle(ck, cyg, example):
    for seed in range(1, 6):
        # a word changed in a record is not always wrong: no "damaged" asked
        capture = os.path.join(cyg.workdir, 'sprinkle.data')
        cp = run([cyg.exe, 'record', '-o', capture, '--timeline', '--', example, 'sprinkle',
                  str(seed)], cwd=cyg.workdir, timeout=60)
        ck.eq(describe_status(cp.returncode), 'exit 3', 'sprinkle seed %d: exit status' % seed)
        for cmd in (['report', '--format=json'], ['info'], ['replay']):
            r = run([cyg.exe] + cmd + [capture])
            ck.eq(describe_status(r.returncode), 'exit 0',
                  'sprinkle seed %d: %s reads the capture' % (seed, cmd[0]))
        print('info: sprinkle seed %d: damaged=%s' % (seed, meta(capture, 'damaged')))


def test_memory(ck, cyg, example):
    if ARGS.sanitize not in ('', 'none'):
        print('SKIP: b_sanitize=%s: the malloc preload is not tested under it' % ARGS.sanitize)
        sys.exit(SKIP)
    for seed in (1, 2):
        for mode in ('random', 'events', 'sprinkle'):
            capture = scribble(ck, cyg, example, mode, seed, ['--memory'],
                               None if mode == 'sprinkle' else True, mode == 'events')
            if capture:
                r = run([cyg.exe, 'memory', '--format=json', capture])
                ck.eq(describe_status(r.returncode), 'exit 0',
                      '%s seed %d: cygprof memory reads the capture' % (mode, seed))


def test_words(ck, cyg, example):
    runs = [(s, []) for s in range(1, 9)] + [(s, ['--timeline']) for s in (1, 2, 3)]
    if ARGS.sanitize in ('', 'none'):
        runs += [(s, ['--memory']) for s in (1, 2)]
    for seed, opts in runs:
        what = 'words seed %d%s' % (seed, ' ' + ' '.join(opts) if opts else '')
        capture = os.path.join(cyg.workdir, 'words.data')
        t0 = time.monotonic()
        cp = run([cyg.exe, 'record', '-o', capture] + opts + ['--', example, 'words', str(seed)],
                 cwd=cyg.workdir, timeout=60)
        took = time.monotonic() - t0
        ck.eq(describe_status(cp.returncode), 'exit 3',
              '%s: the program runs on to its exit(3) (%.1f s)' % (what, took))
        ck.eq(cp.out.splitlines()[-1:], ['scribble: after the damage work=600'],
              '%s: the program\'s last line' % what)
        said = [ln for ln in cp.err.splitlines() if ln.startswith('cygprof: process ')]
        ck.check(len(said) <= 1 and all(RUNTIME_RE.match(ln) for ln in said),
                 '%s: the runtime says at most once, in one line, what it dropped: %r'
                 % (what, said))
        info = run([cyg.exe, 'info', capture])
        ck.eq(describe_status(info.returncode), 'exit 0', '%s: info reads the capture' % what)
        dmg = meta(capture, 'damaged')
        ck.check(dmg is None or DAMAGED_RE.match(dmg), '%s: damaged=%r' % (what, dmg))
        print('info: %s: %.1f s, damaged=%s' % (what, took, dmg))


# --------------------------------------------------------------------------
# what the program inherits


def test_fds(ck, cyg, example):
    for opts in ([], ['--no-cpu']):
        fds_once(ck, cyg, example, opts)


def fds_once(ck, cyg, example, opts):
    capture = os.path.join(cyg.workdir, 'fds.data')
    extra = os.open(os.path.join(cyg.workdir, 'passed'), os.O_CREAT | os.O_WRONLY, 0o600)
    try:
        cmd = [cyg.exe, 'record', '-o', capture] + opts + ['--', example]
        print('$ ' + ' '.join(cmd) + '   (with fd %d passed)' % extra)
        cp = subprocess.run(cmd, cwd=cyg.workdir, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, pass_fds=(extra,),
                            timeout=60)
    finally:
        os.close(extra)
    out = cp.stdout.decode('utf-8', 'replace')
    print(out)
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record exit status')
    fds = dict(re.findall(r'^fd (\d+) -> (.*)$', out, re.M))
    fds = {int(k): v for k, v in fds.items()}
    shm = re.search(r'^fdlist: shm_fd=(\S+)$', out, re.M)
    shm = int(shm.group(1)) if shm and shm.group(1).isdigit() else None
    ck.check(shm is not None, 'CYGPROF_SHM_FD names a descriptor (%r)' % shm)
    want = {0, 1, 2, extra} | ({shm} if shm is not None else set())
    # the CPU samples' perf event of the thread, moved to 1000 or above
    smp = sorted(k for k, v in fds.items() if k >= 1000 and v == 'anon_inode:[perf_event]')
    ck.check(len(smp) == (0 if opts else 1),
             '%s: the sampler\'s descriptor, at 1000 or above (%r)' % (opts or 'default', smp))
    ck.eq(sorted(k for k in fds if k not in smp), sorted(want),
          '%s: the program has only the caller\'s descriptors and the shared memory (%r)' %
          (opts or 'default', fds))
    if shm is not None:
        ck.check(fds.get(shm, '').startswith('/memfd:cygprof'),
                 'fd %d is the shared memory (%r)' % (shm, fds.get(shm)))
    ck.check(not any(v.startswith(cyg.workdir) and not v.endswith('/passed')
                     for v in fds.values()),
             'no descriptor of the capture reaches the program (%r)' % fds)
    data, _ = cyg.report_json(capture, ck)
    cygtest.check_functions(ck, data, {'main': 1, 'list_fds': 1})


# --------------------------------------------------------------------------
# a library taken away


LIB_NAME_RE = re.compile(r'^libdlfifo-copy\.so\+0x[0-9a-f]+ \[deleted\]$')


def test_dlfifo(ck, cyg, example):
    for mode in ('fifo', 'delete', 'fifo-late', 'delete-late', 'fifo-exit', 'delete-exit'):
        d = os.path.join(cyg.workdir, mode)
        os.mkdir(d)
        capture = os.path.join(d, 'cap.data')
        t0 = time.monotonic()
        cp = run([cyg.exe, 'record', '-o', capture, '--', example, ARGS.lib, d, mode],
                 cwd=d, timeout=60)
        took = time.monotonic() - t0
        ck.eq(describe_status(cp.returncode), 'exit 0', '%s: record exit status' % mode)
        ck.check(took < 10, '%s: record ends promptly (%.1f s)' % (mode, took))
        ck.check('dlfifo: calls=20' in cp.out, '%s: the program ran (%r)' % (mode, cp.out))
        if not os.path.exists(capture):
            ck.fail('%s: no capture' % mode)
            continue
        data, _ = cyg.report_json(capture, ck)
        names = {f['name']: f['calls'] for f in data['functions']}
        print('info: %s: functions %r' % (mode, names))
        ck.check(not [n for n in names if n.startswith('0x')],
                 '%s: no function is named by its bare address (%r)' % (mode, names))
        lib = {n: c for n, c in names.items() if n not in ('main',)}
        named = lib == {'lib_entry': 2, 'lib_leaf': 20}
        flagged = (sorted(lib.values()) == [2, 20] and
                   all(LIB_NAME_RE.match(n) for n in lib))
        if mode.endswith('-late'):
            # read while the file was there: named
            ck.check(named, '%s: the library\'s functions are named (%r)' % (mode, lib))
        else:
            ck.check(named or flagged, '%s: the library\'s functions are named or flagged '
                     '"libdlfifo-copy.so+0x... [deleted]" (%r)' % (mode, lib))
        ck.eq(names.get('main'), 1, '%s: main' % mode)


# --------------------------------------------------------------------------
# a killed collector


def test_checkpoint(ck, cyg, example):
    n = 4321
    for opts in ((), ('--timeline',)):
        capture = os.path.join(cyg.workdir, 'ckpt%s.data' % ''.join(opts))
        cmd = [cyg.exe, 'record', '-o', capture] + list(opts) + ['--', example, str(n)]
        print('$ CYGPROF_CHECKPOINT_MS=200 ' + ' '.join(cmd))
        env = dict(os.environ, CYGPROF_CHECKPOINT_MS='200')
        p = subprocess.Popen(cmd, cwd=cyg.workdir, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        kids = []
        try:
            line = cygtest.read_line(p, 30)
            ck.eq(line, 'waitsig: work=%d ready' % n, 'the program\'s "ready" line')
            # the program, not record's witness of signals (cygprof-signals)
            kids = [k for k in cygtest.children(p.pid)
                    if os.path.realpath('/proc/%d/exe' % k) == os.path.realpath(example)]
            time.sleep(0.8)  # past a checkpoint (every 200 ms)
            ck.check(p.poll() is None, 'cygprof still runs')
            p.kill()
            p.wait()
            print('killed cygprof (pid %d) with SIGKILL; the program: %s' % (p.pid, kids))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
            for k in kids:
                try:
                    os.kill(k, signal.SIGKILL)
                except OSError:
                    pass
        ck.check(len(kids) == 1, 'the program was found (%r)' % kids)
        if not os.path.exists(capture):
            raise Failure('no capture after the collector was killed')
        rep = run([cyg.exe, 'report', '--format=json', capture])
        ck.eq(describe_status(rep.returncode), 'exit 0', 'report of the killed collector\'s '
              'capture')
        ck.check('cut off' in rep.err, 'report says the recording was cut off (%r)' %
                 rep.err.strip())
        ck.eq(meta(capture, 'complete'), None, 'no "complete" in the metadata')
        data, _ = cyg.report_json(capture, ck)
        cygtest.check_functions(ck, data, {'main': 1, 'work': n, 'waiter': 1})
        cygtest.check_arcs(ck, data, {('main', 'work'): n, ('main', 'waiter'): 1}, {'main'})
        ck.eq([p_['end'] for p_ in data['processes']], ['unknown'], 'the process had not ended')
        info = run([cyg.exe, 'info', '--format=json', capture])
        ck.eq(describe_status(info.returncode), 'exit 0', 'info of that capture')
        if opts:
            r = run([cyg.exe, 'replay', capture])
            ck.eq(describe_status(r.returncode), 'exit 0', 'replay of that capture')
            ck.check(r.out.count('work') >= n, 'replay shows the %d calls of work' % n)


# --------------------------------------------------------------------------
# a small address space


def limit_as(nbytes):
    def f():
        cygtest.no_core()
        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    return f


def test_rlimit(ck, cyg, example):
    if ARGS.sanitize not in ('', 'none'):
        print('SKIP: b_sanitize=%s: a sanitized cygprof cannot run under ulimit -v' %
              ARGS.sanitize)
        sys.exit(SKIP)
    lim = 256 << 20
    want = 'asthreads: created=4 failed=0 work=4000'
    alone = subprocess.run([example], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           preexec_fn=limit_as(lim), timeout=60)
    ck.eq(alone.stdout.decode().strip(), want, 'control: the program under ulimit -v 262144 '
          'without cygprof')
    capture = os.path.join(cyg.workdir, 'as.data')
    cmd = [cyg.exe, 'record', '-o', capture, '--', example]
    print('$ (ulimit -v 262144; %s)' % ' '.join(cmd))
    cp = subprocess.run(cmd, cwd=cyg.workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        preexec_fn=limit_as(lim), timeout=60)
    out, err = cp.stdout.decode(), cp.stderr.decode()
    print(out + err)
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record under ulimit -v 262144')
    ck.eq(out.strip(), want, 'all four threads created under cygprof')
    if os.path.exists(capture):
        data, _ = cyg.report_json(capture, ck)
        cygtest.check_functions(ck, data, {'main': 1, 'worker': 4, 'work': 4000})
        ck.eq(len(data['threads']), 5, 'threads recorded')
        ck.eq(data['lost_events'], 0, 'lost_events')
    # Too small for even the smallest mapping: one line saying what to do.
    small = 100 << 20
    cp = subprocess.run(cmd, cwd=cyg.workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        preexec_fn=limit_as(small), timeout=60)
    lines = [x for x in cp.stderr.decode().splitlines() if x.strip()]
    print(lines)
    ck.eq(describe_status(cp.returncode), 'exit 1', 'record under ulimit -v 102400')
    ck.check(len(lines) == 1 and lines[0].startswith('cygprof:') and 'ulimit -v' in lines[0]
             and '128 MB' in lines[0],
             'one line saying to raise ulimit -v to 128 MB (%r)' % lines)
    ck.check(not cp.stdout, 'the program was not run (%r)' % cp.stdout)


TESTS = {
    'random': test_random,
    'targeted': test_targeted,
    'sprinkle': test_sprinkle,
    'memory': test_memory,
    'words': test_words,
    'fds': test_fds,
    'dlfifo': test_dlfifo,
    'checkpoint': test_checkpoint,
    'rlimit': test_rlimit,
}


def main():
    def extra(ap):
        ap.add_argument('--meta', required=True, help='the capture-meta test helper')
        ap.add_argument('--lib', required=True, help='the library dlfifo loads')
        ap.add_argument('--sanitize', default='none', help='meson\'s b_sanitize option')

    def call(fn, ck, cyg, example, args):
        global ARGS
        ARGS = args
        ARGS.meta = os.path.abspath(ARGS.meta)
        ARGS.lib = os.path.abspath(ARGS.lib)
        fn(ck, cyg, example)

    return cygtest.driver_main(TESTS, 'hostile', __doc__, extra, call)


if __name__ == '__main__':
    sys.exit(main())
