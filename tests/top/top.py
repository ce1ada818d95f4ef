#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof top` (the live view): its non-interactive
mode `top --once --format=json` (everything the view shows, with exact
numbers), the plain snapshots of a live run into a pipe, and the
full-screen view in a real terminal (tmux).

Usage:
  top.py --cygprof CYGPROF --example CALLS-O2 --threads THREADS-O2
         --longrun LONGRUN-O2 [--recursion RECURSION-O2]
         [--mem-basic MEM-BASIC --mem-threads MEM-THREADS]
         --test NAME [--skip REASON] [-v] [--keep]

CALLS-O2 is examples/calls.c (main 1, a 3, b 6, c 30 calls); THREADS-O2 is
examples/threads.c (4 workers calling work N times, main once more);
LONGRUN-O2 is examples/longrun.c; MEM-BASIC and MEM-THREADS are
examples/mem-basic.c and mem-threads.c built with instrumentation.

Tests:
  top-once      top --once --format=json on calls: main 1, a 3, b 6, c 30
                calls, sorted by self time (the hottest first), and the self
                times those of report --format=json on the capture the same
                run kept (-o); the interval of the one snapshot is the total;
                the one thread's block the same; --sort calls, name, total
                and total,name order the functions so (and say so); -O FILE
                takes the program's output (appended), not stdout; -n 1
                keeps only the hottest; the text form names the four; the
                program's stdout passes through, its exit status is top's;
                on recursion (direct and mutual) the self and total times
                of the report (a total counts the outermost frame only)
  top-threads   top --once on threads 200: work 801 calls merged over the
                threads, 6 threads counted, one block per thread (tid, name
                from the program) whose calls add up to the merged ones:
                200 work calls in each of the 4 workers
  top-live      top without --once into a pipe on longrun (10 rounds of 2000
                work calls, 100 ms apart), snapshots every 0.2 s (-d) with
                checkpoints off (CYGPROF_CHECKPOINT_MS=0: the snapshots come
                from the poll loop): several snapshots, work's calls never
                going down, its last-interval calls summing to the 20000 of
                the last one; the same with --format=json: one object a line
                per snapshot, the last one final with the exit status, the
                intervals adding up to the run and to work's 20000 calls
  top-memory    top --once --memory --format=json on mem-basic: the heap's
                totals (allocations, frees, bytes, peak, live = leaked)
                equal those of 'cygprof memory --format=json' on the capture
                of the same run (-o); the one stack still live is leaker's
                (5 blocks, 385 bytes, innermost frame leaker); on
                mem-threads (4 producers, 4 stressing threads handing blocks
                to each other) the same totals: the threads' events merged by
                time as the memory analysis merges them, also in a live run
                (--format=json, -d 0.1) where the heap follows the program
  top-tty       top in a real terminal (tmux) on longrun with -d 3600 (one
                snapshot, the first, within a second): the full-screen view
                (alternate screen) with its header, rows and key line; the
                program's output goes to -O FILE; d, s, t, h and p change
                the view at once (no snapshot comes in between), a smaller
                window gets the view drawn again to its size, q stops the
                program (SIGTERM: exit 143), the alternate screen is left and
                the last snapshot stays on the normal screen; ^C on the
                full screen is a key that acts as q; SIGTERM to top itself
                stops the program too (143); after q, ^C and SIGTERM the
                terminal's mode is put back (stty: icanon echo isig);
                skipped without tmux
  top-errors    no program, a bad --format, a
                bad --limit, --sort, --view or --delay, an empty --output-of,
                an unknown option: one line, exit 2; a missing program: 127
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status, expect_error  # noqa: E402


def top_json(cyg, prog_args, opts=()):
    cp = run([cyg.exe, 'top', '--once', '--format=json'] + list(opts) + ['--'] +
             list(prog_args), cwd=cyg.workdir)
    if cp.returncode != 0:
        raise Failure('top --once failed (%s): %s' % (describe_status(cp.returncode),
                                                     cp.err.strip()))
    # stdout is the JSON only: the program's output went to -O FILE or
    # /dev/null (said on stderr)
    try:
        return json.loads(cp.out), cp
    except ValueError as e:
        raise Failure('top --once --format=json: stdout is not one JSON object (%s):\n%s' %
                      (e, cp.out[:500]))


def check_sorted(ck, fns):
    selfs = [f['self_ns'] for f in fns]
    ck.check(selfs == sorted(selfs, reverse=True),
             'functions sorted by self time, hottest first (%s)' % selfs)


def t_once(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'top.cyg')
    data, cp = top_json(cyg, [example], ['-o', cap])
    err = cp.err.strip().splitlines()
    ck.check(len(err) == 1 and "output goes to /dev/null (-O FILE keeps it)" in err[0],
             "--format=json: one line says where the program's output went (%r)" % cp.err)
    outf = os.path.join(cyg.workdir, 'prog.out')
    d2, cp2 = top_json(cyg, [example], ['-O', outf])
    with open(outf) as f:
        ck.eq(f.read(), 'calls: a=3 b=6 c=30\n', "-O FILE: the program's stdout is there")
    ck.eq(cp2.err, '', '-O FILE: nothing said')
    ck.eq(data.get('exit_status'), 0, 'exit_status')
    ck.eq(data.get('threads'), 1, 'threads')
    ck.eq(data.get('sort'), ['self', 'calls'], 'default sort keys')
    fns = data['functions']
    calls = {f['name']: f['calls'] for f in fns}
    ck.eq(calls, {'main': 1, 'a': 3, 'b': 6, 'c': 30}, 'calls per function')
    ck.eq(data.get('calls'), 40, 'calls in all')
    check_sorted(ck, fns)
    ck.eq(data['interval_ns'], data['elapsed_ns'], 'one snapshot: the interval is the run')
    for f in fns:
        ck.eq((f['interval_calls'], f['interval_self_ns'], f['interval_total_ns']),
              (f['calls'], f['self_ns'], f['total_ns']),
              '%s: one snapshot: the interval is the total' % f['name'])
    # the one thread: the same rows
    pt = data.get('per_thread') or [{}]
    ck.eq(len(data.get('per_thread', [])), 1, 'one thread block')
    ck.eq([(f['name'], f['calls'], f['self_ns']) for f in pt[0].get('functions', [])],
          [(f['name'], f['calls'], f['self_ns']) for f in fns], 'the thread block: the same rows')
    # the same run's capture, through the report: the same self times
    rep, _ = cyg.report_json(cap, ck)
    want = {f['name']: (f['calls'], f['self_ns'], f['total_ns']) for f in rep['functions']}
    for f in fns:
        w = want.get(f['name'])
        if not w:
            ck.fail('%s: not in the report of the capture' % f['name'])
            continue
        ck.eq(f['calls'], w[0], '%s: calls as the report' % f['name'])
        ck.check(abs(f['self_ns'] - w[1]) <= 10 and abs(f['total_ns'] - w[2]) <= 10,
                 '%s: self %d total %d ns as the report (%d, %d) within 10 ns' %
                 (f['name'], f['self_ns'], f['total_ns'], w[1], w[2]))
    hottest = max(rep['functions'], key=lambda f: f['self_ns'])['name']
    ck.eq(fns[0]['name'], hottest, 'the hottest function first')
    # sort keys
    for keys, order in (('calls', lambda f: (-f['calls'], f['name'])),
                        ('name', lambda f: f['name']),
                        ('total', lambda f: (-f['total_ns'], f['name'])),
                        ('calls,name', lambda f: (-f['calls'], f['name']))):
        d, _ = top_json(cyg, [example], ['--sort', keys])
        ck.eq(d.get('sort'), keys.split(','), '--sort %s: said' % keys)
        got = [f['name'] for f in d['functions']]
        ck.eq(got, [f['name'] for f in sorted(d['functions'], key=order)],
              '--sort %s: the order' % keys)
    d, _ = top_json(cyg, [example], ['--sort', 'name'])
    ck.eq([f['name'] for f in d['functions']], ['a', 'b', 'c', 'main'], '--sort name')
    d, _ = top_json(cyg, [example], ['--sort', 'calls'])
    ck.eq([f['name'] for f in d['functions']], ['c', 'b', 'a', 'main'], '--sort calls')
    d, _ = top_json(cyg, [example], ['--sort', 'total', '--view=total'])
    ck.eq(d['functions'][0]['name'] if d['functions'] else None, 'main',
          '--sort total: main (everything under it) first')
    ck.eq(d.get('view'), 'total', '--view=total: said')
    # -O FILE: the program's output there (appended), the snapshot alone on stdout
    pout = os.path.join(cyg.workdir, 'prog.out')
    with open(pout, 'w') as f:
        f.write('before\n')
    _, cp = top_json(cyg, [example], ['-O', pout])
    ck.check(cp.out.startswith('{"elapsed_ns"'), '-O: the snapshot alone on stdout')
    ck.eq(open(pout).read(), 'before\ncalls: a=3 b=6 c=30\n', "-O: the program's output appended")
    os.unlink(pout)
    # -n 1: only the hottest
    one, _ = top_json(cyg, [example], ['-n', '1'])
    ck.eq(len(one['functions']), 1, '-n 1: one function')
    cp = run([cyg.exe, 'top', '--once', '--', example], cwd=cyg.workdir)
    ck.eq(cp.returncode, 0, 'text: exit status')
    lines = cp.out.splitlines()
    head = [i for i, ln in enumerate(lines) if ln.rstrip().endswith('function')]
    rows = [ln.split()[-1] for ln in lines[head[0] + 1:] if ln.strip()] if head else []
    ck.eq(sorted(rows), ['a', 'b', 'c', 'main'], 'text: the four functions')
    ck.eq(os.listdir(cyg.workdir), ['top.cyg'], 'nothing left behind but the -o capture')
    if args.recursion:
        # recursion, direct (fib) and mutual (is_even, is_odd): a total counts
        # the outermost frame only, as the report's does
        rcap = os.path.join(cyg.workdir, 'rec.cyg')
        d, _ = top_json(cyg, [os.path.abspath(args.recursion)], ['-o', rcap, '-n', '0'])
        rep, _ = cyg.report_json(rcap, ck)
        want = {f['name']: (f['calls'], f['self_ns'], f['total_ns']) for f in rep['functions']}
        got = {f['name']: (f['calls'], f['self_ns'], f['total_ns']) for f in d['functions']}
        ck.eq({k: v[0] for k, v in got.items()},
              {'main': 1, 'run': 1, 'fib': 65673, 'is_even': 10, 'is_odd': 9},
              'recursion: calls')
        for name, (c, sn, tn) in sorted(got.items()):
            w = want.get(name, (None, 0, 0))
            ck.check(c == w[0] and abs(sn - w[1]) <= 10 and abs(tn - w[2]) <= 10,
                     'recursion: %s calls %d self %d total %d as the report %r within 10 ns'
                     % (name, c, sn, tn, w))


def t_threads(ck, cyg, example, args):
    prog = os.path.abspath(args.threads)
    data, _ = top_json(cyg, [prog, '200'])
    ck.eq(data['threads'], 6, 'threads')
    calls = {f['name']: f['calls'] for f in data['functions']}
    ck.eq(calls.get('work'), 801, 'work: calls merged over the threads')
    check_sorted(ck, data['functions'])
    blocks = data.get('per_thread', [])
    ck.eq(len(blocks), 6, 'one block per thread')
    ck.eq(len({b['tid'] for b in blocks}), 6, 'six different tids')
    name = os.path.basename(prog)[:15]
    ck.check(all(b['name'] == name for b in blocks),
             'threads named as the program (%r): %r' % (name, [b['name'] for b in blocks]))
    per = {}
    for b in blocks:
        for f in b['functions']:
            ck.eq(f.get('tid'), b['tid'], '%s: its row names its thread' % f['name'])
            per[f['name']] = per.get(f['name'], 0) + f['calls']
    ck.eq(per, calls, 'the threads\' calls add up to the merged ones')
    works = sorted(f['calls'] for b in blocks for f in b['functions'] if f['name'] == 'work')
    ck.eq(works, [1, 200, 200, 200, 200], 'work per thread: 200 in each worker, 1 in main')


def t_live(ck, cyg, example, args):
    pidfile = os.path.join(cyg.workdir, 'pid')
    os.environ['CYGPROF_CHECKPOINT_MS'] = '0'
    try:
        cp = run([cyg.exe, 'top', '-n', '0', '-d', '0.2', '--', os.path.abspath(args.longrun),
                  pidfile, '10', '2000'], cwd=cyg.workdir)
    finally:
        del os.environ['CYGPROF_CHECKPOINT_MS']
    ck.eq(cp.returncode, 0, 'exit status')
    totals, last = [], []
    for ln in cp.out.splitlines():
        f = ln.split(None, 6)
        if len(f) == 7 and f[6] == 'work':
            totals.append(int(f[4]))
            last.append(int(f[2]))
    ck.check(len(totals) >= 3, 'several snapshots (%d)' % len(totals))
    ck.check(totals == sorted(totals), 'work: calls never go down (%s)' % totals)
    ck.eq(totals[-1] if totals else None, 20000, 'work: calls at the end')
    ck.eq(sum(last), 20000, 'work: the intervals add up to the total')
    ck.check('longrun: done rounds=10 work=20000' in cp.out,
             "not on a terminal: the program's output passes through")
    # --format=json without --once: one object a line per snapshot, the last final
    cp = run([cyg.exe, 'top', '--format=json', '-d', '0.2', '-O', os.devnull, '--',
              os.path.abspath(args.longrun), pidfile, '10', '2000'], cwd=cyg.workdir)
    ck.eq(cp.returncode, 0, 'json: exit status')
    try:
        snaps = [json.loads(ln) for ln in cp.out.splitlines()]
    except ValueError as e:
        raise Failure('json: a line is not JSON (%s):\n%s' % (e, cp.out[:500]))
    ck.check(len(snaps) >= 3, 'json: several snapshots (%d)' % len(snaps))
    ck.eq([x['final'] for x in snaps], [False] * (len(snaps) - 1) + [True],
          'json: the last one is final')
    ck.eq(snaps[-1].get('exit_status'), 0, 'json: the exit status in the final one')
    works = [sum(f['interval_calls'] for f in x['functions'] if f['name'] == 'work')
             for x in snaps]
    ck.eq(sum(works), 20000, 'json: work\'s intervals add up to 20000 (%s)' % works)
    ck.eq(sum(x['interval_ns'] for x in snaps), snaps[-1]['elapsed_ns'],
          'json: the intervals add up to the run')


def t_memory(ck, cyg, example, args):
    if not args.mem_basic or not args.mem_threads:
        print('SKIP top-memory: no memory examples')
        sys.exit(cygtest.SKIP)
    for prog, opts in ((args.mem_basic, []), (args.mem_threads, ['500', '5000'])):
        tag = os.path.basename(prog)
        cap = os.path.join(cyg.workdir, tag + '.cyg')
        data, _ = top_json(cyg, [os.path.abspath(prog)] + opts, ['--memory', '-o', cap])
        mem = data.get('memory')
        if not mem:
            ck.fail('%s: no "memory" in the snapshot' % tag)
            continue
        cp = run([cyg.exe, 'memory', '--format=json', cap], cwd=cyg.workdir)
        if cp.returncode != 0:
            ck.fail('%s: cygprof memory failed: %s' % (tag, cp.err.strip()))
            continue
        tot = json.loads(cp.out)['totals']
        for mine, theirs in (('allocations', 'allocations'), ('frees', 'frees'),
                             ('allocated_bytes', 'allocated_bytes'),
                             ('freed_bytes', 'freed_bytes'), ('peak_bytes', 'peak_bytes'),
                             ('live_bytes', 'leaked_bytes'),
                             ('live_blocks', 'leaked_allocations'),
                             ('untracked_frees', 'untracked_frees')):
            ck.eq(mem.get(mine), tot.get(theirs), '%s: %s as cygprof memory\'s %s' %
                  (tag, mine, theirs))
        ck.eq(mem.get('interval_allocations'), mem.get('allocations'),
              '%s: one snapshot: the interval is the run' % tag)
        if prog == args.mem_threads:
            # live, with snapshots (and the heap merged) while it runs:
            # the last snapshot's totals are still cygprof memory's
            cap2 = os.path.join(cyg.workdir, tag + '-live.cyg')
            cp = run([cyg.exe, 'top', '--memory', '--format=json', '-d', '0.1', '-o', cap2,
                      '-O', os.devnull, '--', os.path.abspath(prog), '2000', '60000'],
                     cwd=cyg.workdir)
            lines = cp.out.splitlines()
            ck.eq(cp.returncode, 0, '%s live: exit status' % tag)
            last = json.loads(lines[-1]).get('memory', {}) if lines else {}
            cp = run([cyg.exe, 'memory', '--format=json', cap2], cwd=cyg.workdir)
            tot = json.loads(cp.out)['totals'] if cp.returncode == 0 else {}
            ck.check(len(lines) >= 2, '%s live: several snapshots (%d)' % (tag, len(lines)))
            for mine, theirs in (('allocations', 'allocations'), ('frees', 'frees'),
                                 ('freed_bytes', 'freed_bytes'), ('peak_bytes', 'peak_bytes'),
                                 ('live_bytes', 'leaked_bytes'),
                                 ('untracked_frees', 'untracked_frees')):
                ck.eq(last.get(mine), tot.get(theirs), '%s live: %s as cygprof memory\'s %s' %
                      (tag, mine, theirs))
        if prog == args.mem_basic:
            st = mem.get('stacks', [])
            ck.eq([(s['live_bytes'], s['live_blocks'], s['frames'][:1]) for s in st],
                  [(385, 5, ['leaker'])], '%s: the one live stack is leaker\'s' % tag)
            calls = {f['name']: f['calls'] for f in data['functions']}
            ck.eq((calls.get('new_node'), calls.get('rec_alloc')), (50, 4),
                  '%s: the calls are there too' % tag)


def tmux(sock, *a):
    return subprocess.run(['tmux', '-L', sock] + list(a), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=30)


def pane(sock):
    return tmux(sock, 'capture-pane', '-p', '-t', 'top').stdout.decode('utf-8', 'replace')


def wait_pane(sock, what, timeout=20, gone=False):
    end = time.time() + timeout
    while time.time() < end:
        out = pane(sock)
        if (what in out) != gone:
            return out
        time.sleep(0.1)
    raise Failure('the terminal %s %r; it shows:\n%s' %
                  ('still shows' if gone else 'never showed', what, out))


def alternate(sock):
    return tmux(sock, 'display', '-p', '-t', 'top', '#{alternate_on}').stdout.decode().strip()


def t_tty(ck, cyg, example, args):
    if not shutil.which('tmux'):
        print('SKIP top-tty: no tmux')
        sys.exit(cygtest.SKIP)
    sock = 'cygprof-top-%d' % os.getpid()
    done = os.path.join(cyg.workdir, 'exit')
    progout = os.path.join(cyg.workdir, 'prog.out')
    # one snapshot (the first, within a second): every later change of the
    # screen comes from a key, not from a refresh
    stty = os.path.join(cyg.workdir, 'stty')
    cmd = ('%s top -d 3600 -O %s -- %s %s 300 2000; s=$?; stty -a > %s; echo $s > %s; '
           'sleep 30' % (cyg.exe, progout, os.path.abspath(args.longrun),
                         os.path.join(cyg.workdir, 'pid'), stty, done))

    def tty_restored(what):
        # the terminal's mode as it was: canonical input, echo, signals
        modes = open(stty).read().split() if os.path.exists(stty) else []
        ck.check(modes and all(m in modes for m in ('icanon', 'echo', 'isig')),
                 '%s: the terminal mode is put back (icanon echo isig): %r' %
                 (what, [m for m in modes if m.lstrip('-') in ('icanon', 'echo', 'isig')]))
    tmux(sock, 'new-session', '-d', '-s', 'top', '-x', '120', '-y', '40', cmd)
    try:
        out = wait_pane(sock, 'q: quit  p: pause')
        ck.check('work' in out and 'round_' in out, 'the view shows work and round_')
        ck.check('program output: %s' % progout in out, 'the header names the output file')
        ck.check('view: last interval, sorted by self,calls' in out, 'the header: view and sort')
        ck.eq(alternate(sock), '1', 'the view is on the alternate screen')
        ck.check(out.splitlines()[0].startswith('cygprof top: ') and 'calls/s' in out,
                 'the header line')
        for key, want in (('d', 'view: total'), ('d', 'view: last interval'),
                          ('s', 'sorted by total,calls'), ('t', 'per thread'),
                          ('h', 'pause the display'), ('h', None), ('t', None),
                          ('p', '[paused]'), ('p', None)):
            before = pane(sock)
            tmux(sock, 'send-keys', '-t', 'top', key)
            if want:
                out = wait_pane(sock, want, timeout=10)
            else:
                end = time.time() + 10
                while pane(sock) == before and time.time() < end:
                    time.sleep(0.1)
                out = pane(sock)
            ck.check(out != before, '%s changes the view' % key)
        ck.check('per thread' not in out and '[paused]' not in out, 't and p twice: back')
        ck.check('sorted by total,calls' in out, 's: the sort stays')
        # a smaller window: the view is drawn again to its size (SIGWINCH)
        tmux(sock, 'resize-window', '-t', 'top', '-x', '70', '-y', '20')
        end = time.time() + 10
        while time.time() < end:
            lines = pane(sock).rstrip('\n').split('\n')
            if len(lines) <= 20 and lines[-1].startswith('q: quit'):
                break
            time.sleep(0.1)
        ck.check(len(lines) <= 20 and lines[-1].startswith('q: quit') and
                 all(len(ln) <= 70 for ln in lines),
                 'resized to 70x20: the key line at the bottom, no line wider (%r)' % lines[-3:])
        tmux(sock, 'send-keys', '-t', 'top', 'q')
        end = time.time() + 30
        while not os.path.exists(done) and time.time() < end:
            time.sleep(0.2)
        status = open(done).read().strip() if os.path.exists(done) else None
        ck.eq(status, '143', 'q: the program stopped by SIGTERM, top exits 128+15')
        out = wait_pane(sock, 'function')
        ck.eq(alternate(sock), '0', 'q: the alternate screen is left')
        tty_restored('q')
        ck.check('work' in out, 'the last snapshot stays on the normal screen')
        text = open(progout).read() if os.path.exists(progout) else ''
        ck.check('longrun: round=1\n' in text, "the program's output went to -O FILE")
    finally:
        tmux(sock, 'kill-server')
    # ^C on the full screen is a key, as q; SIGTERM to top itself (as a
    # session's end or kill(1) sends it) is passed on to the program: each
    # ends top with 143 and the terminal put back
    for how in ('^C', 'SIGTERM'):
        for f in (done, stty):
            if os.path.exists(f):
                os.unlink(f)
        sock = 'cygprof-top-%d-%s' % (os.getpid(), how.strip('^'))
        tmux(sock, 'new-session', '-d', '-s', 'top', '-x', '100', '-y', '30', cmd)
        try:
            wait_pane(sock, 'q: quit  p: pause')
            if how == '^C':
                tmux(sock, 'send-keys', '-t', 'top', 'C-c')
            else:
                shell = int(tmux(sock, 'display', '-p', '-t', 'top',
                                 '#{pane_pid}').stdout.decode())
                tops = [k for k in cygtest.children(shell)
                        if open('/proc/%d/comm' % k).read().strip() == 'cygprof']
                if len(tops) != 1:
                    raise Failure('cygprof top is not the one child of the shell: %r' % tops)
                os.kill(tops[0], signal.SIGTERM)
            end = time.time() + 30
            while not os.path.exists(done) and time.time() < end:
                time.sleep(0.2)
            status = open(done).read().strip() if os.path.exists(done) else None
            ck.eq(status, '143', '%s: the program stopped by SIGTERM, top exits 143' % how)
            wait_pane(sock, 'function')
            ck.eq(alternate(sock), '0', '%s: the alternate screen is left' % how)
            tty_restored(how)
        finally:
            tmux(sock, 'kill-server')


def t_errors(ck, cyg, example, args):
    for what, argv in (('no program', ['top', '--once']),
                       ('bad --format', ['top', '--once', '--format=xml', '--', example]),
                       ('bad --limit', ['top', '--once', '-n', 'x', '--', example]),
                       ('bad --sort', ['top', '--once', '--sort', 'self,size', '--', example]),
                       ('empty --sort', ['top', '--once', '--sort', ',', '--', example]),
                       ('bad --view', ['top', '--once', '--view=delta', '--', example]),
                       ('bad --delay', ['top', '-d', '0', '--', example]),
                       ('empty --output-of', ['top', '-O', '', '--', example]),
                       ('unknown option', ['top', '--bogus', '--', example])):
        expect_error(ck, run([cyg.exe] + argv, cwd=cyg.workdir), what, 2)
    expect_error(ck, run([cyg.exe, 'top', '--once', '--', os.path.join(cyg.workdir, 'nope')],
                         cwd=cyg.workdir), 'missing program', 127)


TESTS = {'top-once': t_once, 'top-threads': t_threads, 'top-live': t_live,
         'top-memory': t_memory, 'top-tty': t_tty, 'top-errors': t_errors}


def extra(ap):
    ap.add_argument('--threads', required=True)
    ap.add_argument('--longrun', required=True)
    ap.add_argument('--recursion')
    ap.add_argument('--mem-basic')
    ap.add_argument('--mem-threads')


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'top', __doc__, extra))
