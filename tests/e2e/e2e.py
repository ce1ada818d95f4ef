#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of cygprof on the programs in examples/.

Usage:
  e2e.py --cygprof CYGPROF --example EXAMPLE --test NAME [--skip REASON] [-v]

Each test records EXAMPLE under CYGPROF into a temporary directory, reads the
capture back with `cygprof report --format=json`, and compares it with the
exact expectations written below (the same numbers as the comment block at
the top of each example). Exit status: 0 passed, 1 failed, 77 skipped (meson's
convention; only used when the test cannot run here, e.g. no C++ compiler).

Standard library only.
"""

import argparse
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
TIMEOUT = 100  # seconds for one command; meson's own timeout is 120

VERBOSE = False


class Failure(Exception):
    """A failed check that makes the rest of the test meaningless."""


class Checker:
    """Collects failed checks so that one run shows all of them."""

    def __init__(self):
        self.failures = []
        self.count = 0

    def fail(self, msg):
        self.failures.append(msg)
        print('FAIL: ' + msg)

    def ok(self, msg):
        if VERBOSE:
            print('ok: ' + msg)

    def check(self, cond, msg):
        self.count += 1
        if cond:
            self.ok(msg)
        else:
            self.fail(msg)
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, '%s: expected %r, got %r' % (what, want, got))


# --------------------------------------------------------------------------
# running things


def no_core():
    # A crashing example must not leave core files behind.
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(cmd, cwd=None, timeout=TIMEOUT):
    print('$ ' + ' '.join(cmd))
    try:
        cp = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, timeout=timeout, preexec_fn=no_core)
    except subprocess.TimeoutExpired as e:
        raise Failure('timed out after %ds: %s' % (timeout, ' '.join(cmd))) from e
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    if VERBOSE or cp.returncode != 0:
        print('  -> exit %d' % cp.returncode)
        for line in cp.err.splitlines()[:20]:
            print('  stderr: ' + line)
    return cp


def describe_status(rc):
    if rc < 0:
        return 'killed by signal %d' % -rc
    return 'exit %d' % rc


class Cygprof:
    def __init__(self, exe, workdir):
        self.exe = exe
        self.workdir = workdir

    def record(self, capture, prog_args, opts=(), cwd=None):
        return run([self.exe, 'record', '-o', capture] + list(opts) + ['--'] + list(prog_args),
                   cwd=cwd or self.workdir)

    def report_json(self, capture, ck):
        cp = run([self.exe, 'report', '--format=json', capture])
        if cp.returncode != 0:
            raise Failure('report --format=json failed (%s): %s' %
                          (describe_status(cp.returncode), cp.err.strip()))
        try:
            data = json.loads(cp.out)
        except ValueError as e:
            raise Failure('report output is not JSON (%s); first 500 chars:\n%s' %
                          (e, cp.out[:500])) from e
        validate_schema(data, ck)
        return data, cp.out


# --------------------------------------------------------------------------
# the report's shape


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def validate_schema(data, ck):
    if not isinstance(data, dict):
        raise Failure('report JSON is not an object')
    for key, typ in (('functions', list), ('arcs', list), ('processes', list),
                     ('threads', list), ('lost_events', int)):
        if key not in data:
            raise Failure('report JSON has no "%s" (keys: %s)' % (key, sorted(data)))
        if not isinstance(data[key], typ) or isinstance(data[key], bool):
            raise Failure('report JSON "%s" is %s, not %s' %
                          (key, type(data[key]).__name__, typ.__name__))
    for f in data['functions']:
        for k in ('name', 'calls', 'self_ns', 'total_ns'):
            if k not in f:
                raise Failure('function entry without "%s": %r' % (k, f))
        for k in ('calls', 'self_ns', 'total_ns'):
            if not is_int(f[k]) or f[k] < 0:
                raise Failure('function %r: %s is not a non-negative integer: %r' %
                              (f['name'], k, f[k]))
    for a in data['arcs']:
        for k in ('caller', 'callee', 'calls'):
            if k not in a:
                raise Failure('arc entry without "%s": %r' % (k, a))
        if not is_int(a['calls']) or a['calls'] < 0:
            raise Failure('arc %r: calls is not a non-negative integer' % (a,))
    for p in data['processes']:
        for k in ('pid', 'command', 'end'):
            if k not in p:
                raise Failure('process entry without "%s": %r' % (k, p))
        if not re.fullmatch(r'exit \d+|signal \d+|exec|unknown', str(p['end'])):
            ck.fail('process %r: malformed end %r' % (p.get('pid'), p['end']))
    names = [f['name'] for f in data['functions']]
    dups = sorted({n for n in names if names.count(n) > 1})
    ck.check(not dups, 'functions are merged by name (duplicates: %s)' % dups)
    pairs = [(a['caller'], a['callee']) for a in data['arcs']]
    dups = sorted({p for p in pairs if pairs.count(p) > 1})
    ck.check(not dups, 'arcs are merged by (caller, callee) (duplicates: %s)' % dups)


# --------------------------------------------------------------------------
# comparisons with clear diffs


def diff_table(title, want, got, key_fmt=str):
    """Print want/got side by side; return True when equal."""
    keys = sorted(set(want) | set(got), key=lambda k: key_fmt(k))
    if want == got:
        return True
    width = max([len(key_fmt(k)) for k in keys] + [8])
    print('--- %s: expected vs got (! marks a difference)' % title)
    print('  %-*s %12s %12s' % (width, 'name', 'expected', 'got'))
    for k in keys:
        w, g = want.get(k), got.get(k)
        mark = ' ' if w == g else '!'
        print('%s %-*s %12s %12s' % (mark, width, key_fmt(k),
                                      '-' if w is None else w, '-' if g is None else g))
    return False


def fn_map(data):
    return {f['name']: f for f in data['functions']}


def check_functions(ck, data, want):
    got = {f['name']: f['calls'] for f in data['functions']}
    ck.check(diff_table('calls per function', want, got),
             'calls per function are exact (%d functions)' % len(want))


def check_arcs(ck, data, want, roots):
    """Exact arcs between instrumented functions.

    Arcs whose caller is no reported function (the spontaneous calls of
    main and of thread start routines) are allowed only into `roots`."""
    names = {f['name'] for f in data['functions']}
    got, outside = {}, {}
    for a in data['arcs']:
        key = (a['caller'], a['callee'])
        if a['caller'] in names:
            got[key] = a['calls']
        else:
            outside[key] = a['calls']
    fmt = lambda k: '%s -> %s' % k
    ck.check(diff_table('calls per arc', want, got, fmt), 'calls per arc are exact')
    bad = {k: v for k, v in outside.items() if k[1] not in roots}
    ck.check(not bad, 'arcs from outside the program go only into %s (others: %s)' %
             (sorted(roots), {fmt(k): v for k, v in bad.items()}))


def check_times(ck, data, busy):
    fns = fn_map(data)
    for f in data['functions']:
        ck.check(f['self_ns'] <= f['total_ns'],
                 '%s: self_ns %d <= total_ns %d' % (f['name'], f['self_ns'], f['total_ns']))
    for name in busy:
        if name in fns:
            ck.check(fns[name]['total_ns'] > 0,
                     '%s does work: total_ns %d > 0' % (name, fns[name]['total_ns']))
            ck.check(fns[name]['self_ns'] > 0,
                     '%s does work: self_ns %d > 0' % (name, fns[name]['self_ns']))


def check_processes(ck, data, ends, example):
    procs = data['processes']
    ck.eq(sorted(p['end'] for p in procs), sorted(ends), 'process ends')
    base = os.path.basename(example)
    for p in procs:
        ck.check(base in str(p['command']),
                 'process %s: command %r names %s' % (p['pid'], p['command'], base))


def check_stdout(ck, cp, lines):
    out = cp.out.splitlines()
    for line in lines:
        ck.check(line in out, 'program printed %r (stdout: %r)' % (line, out))


# --------------------------------------------------------------------------
# expectations, one per example (see the comment block of each example)


def exp_calls():
    return dict(
        args=[], status=0, threads=1, ends=['exit 0'],
        stdout=['calls: a=3 b=6 c=30'],
        functions={'main': 1, 'a': 3, 'b': 6, 'c': 30},
        arcs={('main', 'a'): 3, ('a', 'b'): 6, ('b', 'c'): 30},
        roots={'main'}, busy=['main', 'a', 'b', 'c'])


def exp_recursion():
    return dict(
        args=[], status=0, threads=1, ends=['exit 0'],
        stdout=['recursion: fib=65673 value=6765 even=10 odd=9'],
        functions={'main': 1, 'run': 1, 'fib': 65673, 'is_even': 10, 'is_odd': 9},
        arcs={('main', 'run'): 1, ('run', 'fib'): 3, ('fib', 'fib'): 65670,
              ('main', 'is_even'): 1, ('main', 'is_odd'): 1,
              ('is_even', 'is_odd'): 8, ('is_odd', 'is_even'): 9},
        roots={'main'}, busy=['main', 'run', 'fib'])


def exp_threads(n=1000):
    return dict(
        args=[str(n)], status=0, threads=6, ends=['exit 0'],
        stdout=['threads: work=%d exited=1' % (4 * n + 1)],
        functions={'main': 1, 'worker': 4, 'work': 4 * n + 1, 'exiter': 1, 'exit_l1': 1,
                   'exit_l2': 1, 'exit_l3': 1, 'after_join': 1},
        arcs={('worker', 'work'): 4 * n, ('exiter', 'exit_l1'): 1,
              ('exit_l1', 'exit_l2'): 1, ('exit_l2', 'exit_l3'): 1,
              ('main', 'after_join'): 1, ('after_join', 'work'): 1},
        roots={'main', 'worker', 'exiter'}, busy=['worker', 'work'])


def exp_longjmp(k=5):
    return dict(
        args=[str(k)], status=0, threads=1, ends=['exit 0'],
        stdout=['longjmp: jumps=%d deep3=%d after=1' % (k, k)],
        functions={'main': 1, 'deep1': k, 'deep2': k, 'deep3': k, 'after': 1, 'leaf': 1},
        arcs={('main', 'deep1'): k, ('deep1', 'deep2'): k, ('deep2', 'deep3'): k,
              ('main', 'after'): 1, ('after', 'leaf'): 1},
        roots={'main'}, busy=['main', 'after', 'leaf'])


def exp_exceptions(k=5):
    return dict(
        args=[str(k)], status=0, threads=1, ends=['exit 0'],
        stdout=['exceptions: caught=%d after=%d method=4 sum=%d' %
                (k, k, k * (k - 1) // 2 + 52 + 4)],
        functions={'main': 1, 'catcher(int)': k, 'mid(int)': k, 'thrower(int)': k,
                   'after_catch()': k, 'ns::Klass::method(int)': 4, 'ns::helper(int)': 4,
                   'ns::helper(double)': 1},
        arcs={('main', 'catcher(int)'): k, ('catcher(int)', 'mid(int)'): k,
              ('mid(int)', 'thrower(int)'): k, ('catcher(int)', 'after_catch()'): k,
              ('main', 'ns::Klass::method(int)'): 4,
              ('ns::Klass::method(int)', 'ns::helper(int)'): 4,
              ('main', 'ns::helper(double)'): 1},
        roots={'main'}, busy=['main', 'catcher(int)', 'after_catch()'])


def exp_forkexec():
    return dict(
        args=[], status=0, threads=None, ends=['exec', 'exit 7', 'exit 0'],
        stdout=['forkexec: child=3', 'forkexec: parent=4 status=7', 'forkexec: exec-image=5'],
        functions={'main': 2, 'child_work': 3, 'parent_work': 4, 'exec_image_work': 5,
                   'spin': 12},
        arcs={('main', 'child_work'): 3, ('main', 'parent_work'): 4,
              ('main', 'exec_image_work'): 5, ('child_work', 'spin'): 3,
              ('parent_work', 'spin'): 4, ('exec_image_work', 'spin'): 5},
        roots={'main'}, busy=['spin', 'child_work', 'parent_work', 'exec_image_work'])


def exp_crash(n=10):
    return dict(
        args=[str(n)], status=139, threads=1, ends=['signal 11'],
        stdout=['crash: work=%d' % n],
        functions={'main': 1, 'work': n, 'crash_l1': 1, 'crash_l2': 1},
        arcs={('main', 'work'): n, ('main', 'crash_l1'): 1, ('crash_l1', 'crash_l2'): 1},
        roots={'main'}, busy=['work'])


def exp_exitdeep():
    return dict(
        args=[], status=3, threads=1, ends=['exit 3'],
        stdout=['exitdeep: prelude=2 depth=4'],
        functions={'main': 1, 'prelude': 2, 'level1': 1, 'level2': 1, 'level3': 1,
                   'level4': 1},
        arcs={('main', 'prelude'): 2, ('main', 'level1'): 1, ('level1', 'level2'): 1,
              ('level2', 'level3'): 1, ('level3', 'level4'): 1},
        roots={'main'}, busy=['prelude'])


def exp_timefilter():
    return dict(
        args=[], status=0, threads=1, ends=['exit 0'],
        stdout=['timefilter: fast=1000 slow=3'],
        functions={'main': 1, 'fast': 1000, 'slow': 3},
        arcs={('main', 'fast'): 1000, ('main', 'slow'): 3},
        roots={'main'}, busy=['main', 'fast'])


def exp_killself(n=20):
    return dict(
        args=[str(n)], status=137, threads=1, ends=['signal 9'],
        stdout=['killself: work=%d' % n],
        functions={'main': 1, 'work': n, 'kill_l1': 1, 'kill_l2': 1},
        arcs={('main', 'work'): n, ('main', 'kill_l1'): 1, ('kill_l1', 'kill_l2'): 1},
        roots={'main'}, busy=['work'])


def exp_manythreads(total=200, wave=20, k=50):
    return dict(
        args=[str(total), str(wave), str(k)], status=0, threads=total + 1, ends=['exit 0'],
        stdout=['manythreads: threads=%d wave=%d work=%d' % (total, wave, total * k)],
        functions={'main': 1, 'worker': total, 'work': total * k},
        arcs={('worker', 'work'): total * k},
        roots={'main', 'worker'}, busy=['worker', 'work'])


def exp_waitsig(n=7, handle=False, sig=15):
    functions = {'main': 1, 'work': n, 'waiter': 1}
    arcs = {('main', 'work'): n, ('main', 'waiter'): 1}
    stdout = ['waitsig: work=%d ready' % n]
    if handle:
        functions['on_signal'] = 1
        arcs[('waiter', 'on_signal')] = 1
        stdout.append('waitsig: signal=%d' % sig)
    return dict(
        args=[str(n)] + (['handle'] if handle else []),
        status=42 if handle else 128 + sig, threads=1,
        ends=['exit 42' if handle else 'signal %d' % sig],
        stdout=stdout, functions=functions, arcs=arcs, roots={'main'}, busy=['work'])


def exp_longrun(rounds=20, k=2000):
    return dict(
        args=[str(rounds), str(k)], status=0, threads=1, ends=['exit 0'],
        stdout=['longrun: round=%d' % (r + 1) for r in range(rounds)] +
        ['longrun: done rounds=%d work=%d' % (rounds, rounds * k)],
        functions={'main': 1, 'round_': rounds, 'work': rounds * k},
        arcs={('main', 'round_'): rounds, ('round_', 'work'): rounds * k},
        roots={'main'}, busy=['work', 'round_'])


EXPECT = {
    'calls': exp_calls, 'recursion': exp_recursion, 'threads': exp_threads,
    'longjmp': exp_longjmp, 'exceptions': exp_exceptions, 'forkexec': exp_forkexec,
    'crash': exp_crash, 'exitdeep': exp_exitdeep, 'timefilter': exp_timefilter,
    'killself': exp_killself, 'manythreads': exp_manythreads,
}


# --------------------------------------------------------------------------
# tests


def record_and_check(ck, cyg, example, exp, opts=(), capname='cap.data'):
    capture = os.path.join(cyg.workdir, capname)
    cp = cyg.record(capture, [example] + exp['args'], opts)
    ck.eq(describe_status(cp.returncode), describe_status(exp['status']),
          'record exit status (the program\'s)')
    check_stdout(ck, cp, exp['stdout'])
    # The examples write nothing to stderr: what is there is cygprof's summary.
    lines = [line for line in cp.err.splitlines() if line.strip()]
    ck.check(len(lines) == 1 and lines[0].startswith('cygprof'),
             'record prints a one-line summary on stderr (got %r)' % lines)
    if not os.path.exists(capture):
        raise Failure('record left no capture at %s' % capture)
    data, text = cyg.report_json(capture, ck)
    return capture, data, text


def check_all(ck, data, exp, example):
    check_functions(ck, data, exp['functions'])
    check_arcs(ck, data, exp['arcs'], exp['roots'])
    check_processes(ck, data, exp['ends'], example)
    if exp['threads'] is not None:
        ck.eq(len(data['threads']), exp['threads'], 'number of threads')
    check_times(ck, data, exp['busy'])


def test_example(name):
    def t(ck, cyg, example):
        exp = EXPECT[name]()
        _, data, _ = record_and_check(ck, cyg, example, exp)
        ck.eq(data['lost_events'], 0, 'lost_events')
        check_all(ck, data, exp, example)
        if name == 'calls':
            fns = fn_map(data)
            chain = [fns[n]['total_ns'] for n in ('main', 'a', 'b', 'c') if n in fns]
            ck.check(chain == sorted(chain, reverse=True),
                     'nested totals: main >= a >= b >= c (%s)' % chain)
        if name == 'forkexec':
            procs = data['processes']
            by_end = {p['end']: p for p in procs}
            if len(procs) == 3 and set(by_end) == {'exec', 'exit 0', 'exit 7'}:
                ck.eq(by_end['exit 0']['pid'], by_end['exec']['pid'],
                      'the exec\'d image keeps the pid of the image that exec\'d')
                ck.check(by_end['exit 7']['pid'] != by_end['exec']['pid'],
                         'the fork child has a pid of its own')
    return t


def timeline_events(exp):
    """Timeline events the program implies: an entry and an exit (or an
    unwind) per call."""
    return 2 * sum(exp['functions'].values())


def check_event_accounting(ck, cyg, capture, exp, tag):
    """Per thread and in total, stored + lost events == 2 per call, and the
    number the program implies; returns the total lost."""
    info = info_json(ck, cyg, capture)
    threads = info.get('threads', [])
    for t in threads:
        ck.eq(t['events'] + t['lost'], 2 * t['calls'],
              '[%s] thread %d: events %d + lost %d == 2 x calls' %
              (tag, t['tid'], t['events'], t['lost']))
    events = sum(t['events'] for t in threads)
    lost = sum(t['lost'] for t in threads)
    ck.eq(events + lost, timeline_events(exp),
          '[%s] stored %d + lost %d events == the exact number the program implies' %
          (tag, events, lost))
    ck.eq(info.get('lost_events'), lost, '[%s] info: lost_events is the threads\' sum' % tag)
    ck.eq(info.get('limits', {}).get('lost'), lost, '[%s] info: limits.lost' % tag)
    return events, lost


def test_tiny_ring(ck, cyg, example):
    """4 busy threads, a 4096-byte ring, timeline on: nothing may be lost,
    every event is stored."""
    exp = exp_threads(100000)
    capture, data, _ = record_and_check(ck, cyg, example, exp,
                                        opts=['--timeline', '--ring-size', '4096'])
    ck.eq(data['lost_events'], 0, 'lost_events with a tiny ring (blocking mode)')
    check_all(ck, data, exp, example)
    events, lost = check_event_accounting(ck, cyg, capture, exp, 'blocking')
    ck.eq((events, lost), (timeline_events(exp), 0), 'blocking mode: every event stored')
    cp = run([cyg.exe, 'report', capture])
    ck.check('were lost' not in cp.err, 'blocking mode: no lost-events warning (%r)' % cp.err)


LOST_WARNING = r'^cygprof: warning: .*: %d timeline events were lost during recording'


def test_drop(ck, cyg, example):
    """--drop with a tiny ring on 4 busy threads: events are lost, counted
    exactly (stored + lost == 2 per call), and every command says how many."""
    exp = exp_threads(100000)
    capture, data, text = record_and_check(ck, cyg, example, exp,
                                           opts=['--timeline', '--ring-size', '4096', '--drop'])
    lost = data['lost_events']
    ck.check(is_int(lost) and lost > 0, '--drop with a 4 KiB ring on 4 busy threads loses '
             'events: lost_events %r > 0' % lost)
    print('info: lost_events = %d with --drop' % lost)
    events, ilost = check_event_accounting(ck, cyg, capture, exp, 'drop')
    ck.eq(ilost, lost, 'info and report agree on the lost events')
    ck.eq(data.get('limits', {}).get('lost'), lost, 'report json: limits.lost')
    data2, text2 = cyg.report_json(capture, ck)
    ck.check(data2 == data, 'two reports of the same capture are equal')
    # The call trees do not depend on the timeline: still exact.
    check_functions(ck, data, exp['functions'])
    check_arcs(ck, data, exp['arcs'], exp['roots'])
    check_processes(ck, data, exp['ends'], example)
    check_times(ck, data, [])
    # The summary line of record, and every command, give the count.
    for cmd in (['report'], ['report', '--format=json'], ['info'], ['replay'],
                ['gprof', '-b'], ['annotate']):
        cp = run([cyg.exe] + cmd + [capture])
        ck.eq(cp.returncode, 0, '%s exit status' % ' '.join(cmd))
        warns = re.findall(LOST_WARNING % lost, cp.err, re.M)
        ck.eq(len(warns), 1, '%s: one warning line with the %d lost events (stderr %r)' %
              (' '.join(cmd), lost, cp.err[:300]))
    cp = run([cyg.exe, 'info', capture])
    ck.check(re.search(r'^totals: \d+ calls, %d events, %d lost events' % (events, lost),
                       cp.out, re.M) is not None, 'info: totals line with the stored and lost '
             'events')
    cp = run([cyg.exe, 'replay', capture])
    entries = sum(1 for line in cp.out.splitlines() if re.search(r'\(\)\s*(;|\{)\s*$', line))
    ck.check(entries < sum(exp['functions'].values()),
             'replay shows fewer calls (%d) than were made (gaps)' % entries)


def expect_error(ck, cp, what, status=None):
    """One line on stderr starting 'cygprof:', a clean non-zero exit."""
    ck.check(cp.returncode >= 0, '%s: not killed by a signal (%s)' %
             (what, describe_status(cp.returncode)))
    if status is None:
        ck.check(cp.returncode > 0, '%s: non-zero exit (%s)' %
                 (what, describe_status(cp.returncode)))
    else:
        ck.eq(describe_status(cp.returncode), describe_status(status), '%s: exit status' % what)
    lines = cp.err.splitlines()
    ck.check(len(lines) == 1 and lines[0].startswith('cygprof:'),
             '%s: exactly one stderr line starting "cygprof:" (got %r)' % (what, lines))


def test_errors_record(ck, cyg, example):
    d = cyg.workdir
    cap = os.path.join(d, 'err.data')
    missing = os.path.join(d, 'no-such-program')
    expect_error(ck, cyg.record(cap, [missing]), 'record of a missing program', 127)
    noexec = os.path.join(d, 'not-executable')
    with open(noexec, 'w') as f:
        f.write('#!/bin/sh\necho hello\n')
    os.chmod(noexec, 0o644)
    expect_error(ck, cyg.record(cap, [noexec]), 'record of a non-executable file', 126)
    cp = run([cyg.exe, 'record', '--no-such-option', '-o', cap, '--', example])
    expect_error(ck, cp, 'record with an unknown option', 2)
    cp = run([cyg.exe, 'report', '--no-such-option', cap])
    expect_error(ck, cp, 'report with an unknown option', 2)


def truncate_capture(path):
    """Truncate a capture (a file, or the largest file of a directory) to half."""
    if os.path.isdir(path):
        files = [os.path.join(path, f) for f in os.listdir(path)]
        files = [f for f in files if os.path.isfile(f)]
        if not files:
            raise Failure('capture directory %s holds no file' % path)
        path = max(files, key=os.path.getsize)
    size = os.path.getsize(path)
    with open(path, 'r+b') as f:
        f.truncate(size // 2)
    return path, size


def test_errors_report(ck, cyg, example):
    d = cyg.workdir
    cp = run([cyg.exe, 'report', '--format=json', os.path.join(d, 'missing.data')])
    expect_error(ck, cp, 'report of a missing file', 1)

    rnd = os.path.join(d, 'random.data')
    with open(rnd, 'wb') as f:
        f.write(random.Random(1234).randbytes(65536))
    cp = run([cyg.exe, 'report', '--format=json', rnd])
    expect_error(ck, cp, 'report of random bytes', 1)

    empty = os.path.join(d, 'empty.data')
    open(empty, 'wb').close()
    cp = run([cyg.exe, 'report', '--format=json', empty])
    expect_error(ck, cp, 'report of an empty file', 1)

    cap = os.path.join(d, 'trunc.data')
    rec = cyg.record(cap, [example])
    if rec.returncode != 0 or not os.path.exists(cap):
        raise Failure('could not record a capture to truncate (%s)' %
                      describe_status(rec.returncode))
    cp = run([cyg.exe, 'report', '--format=json', cap])
    ck.eq(cp.returncode, 0, 'report of the intact capture')
    path, size = truncate_capture(cap)
    print('info: truncated %s from %d to %d bytes' % (path, size, size // 2))
    cp = run([cyg.exe, 'report', '--format=json', cap])
    expect_error(ck, cp, 'report of a truncated capture', 1)
    cp = run([cyg.exe, 'report', cap])
    expect_error(ck, cp, 'text report of a truncated capture', 1)


def test_replay(ck, cyg, example):
    d = cyg.workdir
    cap = os.path.join(d, 'timeline.data')
    rec = cyg.record(cap, [example], ['--timeline'])
    ck.eq(rec.returncode, 0, 'record --timeline exit status')
    cp = run([cyg.exe, 'replay', cap])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay exit status')
    lines = cp.out.splitlines()
    first = {}
    for fn in ('a', 'b', 'c'):
        pat = re.compile(r'(?<![\w:])%s\(\)' % fn)
        hits = [i for i, line in enumerate(lines) if pat.search(line)]
        want = {'a': 3, 'b': 6, 'c': 30}[fn]
        ck.check(len(hits) >= want, 'replay shows %s() on at least %d lines (got %d)' %
                 (fn, want, len(hits)))
        first[fn] = hits[0] if hits else None
    if None not in first.values():
        ck.check(first['a'] < first['b'] < first['c'],
                 'replay order: first a() before first b() before first c() (%s)' % first)
    if ck.failures:
        print('--- replay output (first 40 lines)')
        print('\n'.join(lines[:40]))

    plain = os.path.join(d, 'plain.data')
    rec = cyg.record(plain, [example])
    ck.eq(rec.returncode, 0, 'record (no timeline) exit status')
    cp = run([cyg.exe, 'replay', plain])
    expect_error(ck, cp, 'replay of a capture without timeline', 1)


# --------------------------------------------------------------------------
# record-time filters (-F, -N, -D, -t)


def nm_functions(prog):
    """name -> (start, size) of the defined functions of prog (nm -S)."""
    out = subprocess.run(['nm', '-S', '--defined-only', prog], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    syms = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'tT':
            syms[f[3]] = (int(f[0], 16), int(f[1], 16))
    return syms


def info_json(ck, cyg, capture):
    cp = run([cyg.exe, 'info', '--format=json', capture])
    if cp.returncode != 0:
        raise Failure('info --format=json failed (%s): %s' %
                      (describe_status(cp.returncode), cp.err.strip()))
    try:
        return json.loads(cp.out)
    except ValueError as e:
        raise Failure('info output is not JSON (%s); first 500 chars:\n%s' %
                      (e, cp.out[:500])) from e


def check_filters_shown(ck, cyg, capture, opts):
    """`cygprof info` shows the record-time filters as they were given (only
    the filters: -F, -N, -D, -t and their values)."""
    kept, i = [], 0
    while i < len(opts):
        if opts[i] in ('-F', '-N', '-D', '-t'):
            kept += opts[i:i + 2]
            i += 2
        else:
            i += 1
    want = ' '.join(kept) or '(none)'
    if not kept:
        want_json = ''
    else:
        want_json = want
    meta = info_json(ck, cyg, capture).get('meta', {})
    ck.eq(meta.get('filters'), want_json, 'info --format=json: meta.filters')
    cp = run([cyg.exe, 'info', capture])
    ck.eq(cp.returncode, 0, 'info exit status')
    lines = [line for line in cp.out.splitlines() if re.match(r'filters\s*:', line)]
    got = [re.sub(r'^filters\s*:\s*', '', line) for line in lines]
    ck.eq(got, [want], 'info text: the "filters" line')


def filter_case(ck, cyg, example, base, opts, functions, arcs, roots):
    """Record `example` with `opts`; the trees hold exactly `functions`/`arcs`."""
    tag = ' '.join(opts)
    print('--- case: %s' % tag)
    exp = dict(base, functions=functions, arcs=arcs, roots=roots,
               busy=[n for n in base['busy'] if n in functions])
    capname = 'f%d.data' % ck.count
    capture, data, _ = record_and_check(ck, cyg, example, exp, opts=opts, capname=capname)
    n = len(ck.failures)
    ck.eq(data['lost_events'], 0, '[%s] lost_events' % tag)
    check_all(ck, data, exp, example)
    check_filters_shown(ck, cyg, capture, opts)
    if len(ck.failures) > n:
        print('--- case failed: %s' % tag)
    return capture


def filter_cases_calls():
    m, a, b, c = 'main', 'a', 'b', 'c'
    return [
        (['-F', 'b'], {b: 6, c: 30}, {(b, c): 30}, {b}),
        (['-N', 'b'], {m: 1, a: 3, c: 30}, {(m, a): 3, (a, c): 30}, {m}),
        (['-D', '2'], {m: 1, a: 3}, {(m, a): 3}, {m}),
        (['-D', '1'], {m: 1}, {}, {m}),
        (['-F', 'b', '-N', 'c'], {b: 6}, {}, {b}),
        (['-F', 'a', '-N', 'b'], {a: 3, c: 30}, {(a, c): 30}, {a}),
        (['-F', 'a', '-D', '2'], {a: 3, b: 6}, {(a, b): 6}, {a}),
        (['-N', 'a', '-D', '2'], {m: 1, b: 6}, {(m, b): 6}, {m}),
        (['-N', 'a', '-N', 'b'], {m: 1, c: 30}, {(m, c): 30}, {m}),
        (['-F', 'b', '-F', 'a'], {a: 3, b: 6, c: 30}, {(a, b): 6, (b, c): 30}, {a}),
        (['-F', '[bc]'], {b: 6, c: 30}, {(b, c): 30}, {b}),
        (['-F', 'no_such_function'], {}, {}, set()),
    ]


def test_filters_calls(ck, cyg, example):
    base = exp_calls()
    m, a, b, c = 'main', 'a', 'b', 'c'
    for opts, functions, arcs, roots in filter_cases_calls():
        filter_case(ck, cyg, example, base, opts, functions, arcs, roots)

    # The filters apply to the timeline too.
    opts = ['--timeline', '-F', 'b']
    print('--- case: %s (replay)' % ' '.join(opts))
    capture = filter_case(ck, cyg, example, base, opts, {b: 6, c: 30}, {(b, c): 30}, {b})
    cp = run([cyg.exe, 'replay', capture])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay of -F b exit status')
    got = {fn: replay_calls(cp.out, fn) for fn in (m, a, b, c)}
    ck.eq(got, {m: 0, a: 0, b: 6, c: 30}, 'replay of -F b: lines per function')


def filter_cases_recursion():
    m, r, f, e, o = 'main', 'run', 'fib', 'is_even', 'is_odd'
    return [
        (['-D', '3'], {m: 1, r: 1, f: 3, e: 2, o: 2},
         {(m, r): 1, (r, f): 3, (m, e): 1, (m, o): 1, (e, o): 1, (o, e): 1}, {m}),
        (['-N', 'fib'], {m: 1, r: 1, e: 10, o: 9},
         {(m, r): 1, (m, e): 1, (m, o): 1, (e, o): 8, (o, e): 9}, {m}),
        # is_odd hidden: an is_even called by is_odd attaches to the nearest
        # kept ancestor, another is_even (8 times) or main (is_odd(7)'s call).
        (['-N', 'is_odd'], {m: 1, r: 1, f: 65673, e: 10},
         {(m, r): 1, (r, f): 3, (f, f): 65670, (m, e): 2, (e, e): 8}, {m}),
        (['-F', 'is_*'], {e: 10, o: 9}, {(e, o): 8, (o, e): 9}, {e, o}),
        # -D counts in the tree left by -F: run is at depth 1.
        (['-F', 'run', '-D', '2'], {r: 1, f: 3}, {(r, f): 3}, {r}),
        (['-N', 'fib', '-N', 'is_*', '-D', '2'], {m: 1, r: 1}, {(m, r): 1}, {m}),
    ]


def test_filters_recursion(ck, cyg, example):
    base = exp_recursion()
    for opts, functions, arcs, roots in filter_cases_recursion():
        filter_case(ck, cyg, example, base, opts, functions, arcs, roots)


def filters_after(ck, cyg, example, cases, replay=False):
    """Record once without filters (with a timeline); report with each case's
    filters gives exactly the functions and arcs record's filters give."""
    cap = os.path.join(cyg.workdir, 'all.data')
    cp = run([cyg.exe, 'record', '-q', '--timeline', '-o', cap, '--', example])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'record exit status')
    full = report_json(ck, cyg, cap, [])
    for opts, functions, arcs, roots in cases:
        tag = ' '.join(opts)
        d = report_json(ck, cyg, cap, opts)
        ck.eq(dict((f['name'], f['calls']) for f in d['functions'] if f['calls']), functions,
              '[report %s] calls per function' % tag)
        ck.eq(dict(((x['caller'], x['callee']), x['calls']) for x in d['arcs']), arcs,
              '[report %s] arcs' % tag)
        ck.eq(set(f['name'] for f in d['functions'] if f['spontaneous_calls']), roots,
              '[report %s] functions called from the root' % tag)
        a = run([cyg.exe, 'annotate', '--format=json'] + opts + [cap])
        ck.eq(a.returncode, 0, '[annotate %s] exit status' % tag)
        if a.returncode == 0:
            ck.eq(json.loads(a.out)['totals']['calls'], sum(functions.values()),
                  '[annotate %s] total calls' % tag)
        if replay:
            r = run([cyg.exe, 'replay'] + opts + [cap])
            ck.eq(describe_status(r.returncode), 'exit 0', '[replay %s] exit status' % tag)
            got = dict((fn, replay_calls(r.out, fn)) for fn in full_names(full))
            ck.eq(dict((k, v) for k, v in got.items() if v), functions,
                  '[replay %s] lines per function' % tag)
    return cap, full


def full_names(rep):
    return [f['name'] for f in rep['functions']]


def report_json(ck, cyg, cap, opts):
    cp = run([cyg.exe, 'report', '--format=json'] + list(opts) + [cap])
    if cp.returncode != 0:
        raise Failure('report --format=json %s failed: %s' % (' '.join(opts), cp.err.strip()))
    return json.loads(cp.out)


def test_filters_after_calls(ck, cyg, example):
    cap, full = filters_after(ck, cyg, example, filter_cases_calls(), replay=True)
    calls = dict((f['name'], f['calls']) for f in full['functions'])
    dur = int(info_json(ck, cyg, cap)['meta']['duration_ns'])
    # a time range covering the whole run changes nothing; one after the end
    # keeps nothing; the first half and the second half add up to the whole
    whole = report_json(ck, cyg, cap, ['--time-range', '0,%dns' % (dur + 10**9)])
    ck.eq(dict((f['name'], f['calls']) for f in whole['functions'] if f['calls']), calls,
          '--time-range over the whole run: every call')
    # the trees' times and the timeline's are rounded apart: a ns here and there
    ck.check(abs(whole['total_self_ns'] - full['total_self_ns']) <= 1000,
             '--time-range over the whole run: all the time (%d vs %d)' %
             (whole['total_self_ns'], full['total_self_ns']))
    late = report_json(ck, cyg, cap, ['--time-range', '%dns,' % (dur + 10**9)])
    ck.eq(sum(f['calls'] for f in late['functions']), 0, '--time-range after the end: no call')
    mid = dur // 2
    h1 = report_json(ck, cyg, cap, ['--time-range', '0,%dns' % mid])
    h2 = report_json(ck, cyg, cap, ['--time-range', '%dns,' % mid])
    for name, n in calls.items():
        n1 = sum(f['calls'] for f in h1['functions'] if f['name'] == name)
        n2 = sum(f['calls'] for f in h2['functions'] if f['name'] == name)
        ck.eq(n1 + n2, n, '--time-range halves: calls of %s add up' % name)
    t = h1['total_self_ns'] + h2['total_self_ns']
    ck.check(abs(t - full['total_self_ns']) <= 1000,
             '--time-range halves: self times add up (%d vs %d)' % (t, full['total_self_ns']))
    r = run([cyg.exe, 'replay', '--time-range', '%dns,' % (dur + 10**9), cap])
    ck.eq(r.returncode, 0, 'replay --time-range after the end: exit 0')
    ck.eq(sum(replay_calls(r.out, fn) for fn in calls), 0, 'replay --time-range after the end: no call')
    # bad values and a capture without a timeline
    for bad in (['--time-range', '5'], ['--time-range', '2s,1s'], ['-D', '0'], ['-D', 'x']):
        p = run([cyg.exe, 'report'] + bad + [cap])
        ck.eq(p.returncode, 2, 'report %s: exit 2' % ' '.join(bad))
        ck.eq(len(p.err.strip().splitlines()), 1, 'report %s: one line' % ' '.join(bad))
    nt = os.path.join(cyg.workdir, 'notl.data')
    run([cyg.exe, 'record', '-q', '-o', nt, '--', example])
    p = run([cyg.exe, 'report', '--time-range', '0,1s', nt])
    ck.eq(p.returncode, 1, 'report --time-range without a timeline: exit 1')
    ck.check('needs one (record with --timeline)' in p.err, 'it says why: %r' % p.err.strip())


def test_export_gmon(ck, cyg, example):
    """export --format=gmon writes what gprof --gmon-out writes; the export
    command's usage errors are one line and exit 2."""
    cap = os.path.join(cyg.workdir, 'c.data')
    run([cyg.exe, 'record', '-q', '-o', cap, '--', example])
    g1, g2 = os.path.join(cyg.workdir, 'g1.out'), os.path.join(cyg.workdir, 'g2.out')
    p = run([cyg.exe, 'export', '--format=gmon', '-o', g1, cap])
    ck.eq(p.returncode, 0, 'export --format=gmon exit')
    p = run([cyg.exe, 'gprof', '--gmon-out', g2, cap])
    ck.eq(p.returncode, 0, 'gprof --gmon-out exit')
    if os.path.exists(g1) and os.path.exists(g2):
        with open(g1, 'rb') as f1, open(g2, 'rb') as f2:
            ck.check(f1.read() == f2.read(), 'the same gmon.out bytes')
    for bad in ([], ['--format=nope'], ['--format=folded', '--weight=nope'],
                ['--format=folded', '--memory=calls'], ['--format']):
        p = run([cyg.exe, 'export'] + bad + [cap])
        ck.eq(p.returncode, 2, 'export %s: exit 2' % ' '.join(bad))
        ck.eq(len(p.err.strip().splitlines()), 1, 'export %s: one line' % ' '.join(bad))
    p = run([cyg.exe, 'export', '--format=gmon', os.path.join(cyg.workdir, 'missing.data')])
    ck.eq(p.returncode, 1, 'export of a missing capture: exit 1')


def test_filters_after_recursion(ck, cyg, example):
    filters_after(ck, cyg, example, filter_cases_recursion())


REPLAY_LINE = re.compile(r'^\s*(?:([\d.]+)\s*(ns|us|ms|s))?\s*\[\s*\d+\]\s*\|\s*(.*)$')
UNIT_NS = {'ns': 1, 'us': 1e3, 'ms': 1e6, 's': 1e9}


def replay_entries(text):
    """(duration_ns or None, rest) for each call line of a replay."""
    out = []
    for line in text.splitlines():
        mt = REPLAY_LINE.match(line)
        if mt:
            dur = float(mt.group(1)) * UNIT_NS[mt.group(2)] if mt.group(1) else None
            out.append((dur, mt.group(3).strip()))
    return out


def replay_calls(text, fn):
    """Number of calls of fn in a replay: its `fn();` and `fn() {` lines."""
    pat = re.compile(r'^%s\(\)\s*(;|\{)' % re.escape(fn))
    return sum(1 for _, rest in replay_entries(text) if pat.match(rest))


def test_timefilter(ck, cyg, example):
    """--timeline -t 1ms: the timeline keeps slow() and loses fast(); the trees
    keep every call."""
    exp = exp_timefilter()
    opts = ['--timeline', '-t', '1ms']
    capture, data, _ = record_and_check(ck, cyg, example, exp, opts=opts)
    ck.eq(data['lost_events'], 0, 'lost_events')
    check_all(ck, data, exp, example)
    check_filters_shown(ck, cyg, capture, opts)
    cp = run([cyg.exe, 'replay', capture])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay exit status')
    entries = replay_entries(cp.out)
    ck.eq(replay_calls(cp.out, 'slow'), 3, 'replay with -t 1ms: slow() lines')
    ck.eq(replay_calls(cp.out, 'main'), 1, 'replay with -t 1ms: main() lines')
    # A fast() call only passes -t 1ms if it really took 1 ms (the thread was
    # preempted inside it): none may be shown with a shorter duration.
    fast = [(d, rest) for d, rest in entries if rest.startswith('fast()')]
    short = [(d, rest) for d, rest in fast if d is None or d < 1e6]
    ck.check(not short, 'replay with -t 1ms: no fast() call shorter than 1 ms (got %s)' %
             short[:5])
    ck.check(len(fast) <= 2, 'replay with -t 1ms: no fast() (got %d, each >= 1 ms)' % len(fast))
    for d, rest in entries:
        if d is not None and rest.endswith(';'):
            ck.check(d >= 1e6, 'replay with -t 1ms: leaf %r lasted %d ns >= 1 ms' % (rest, d))
    for d, rest in entries:
        if rest.startswith('slow()'):
            ck.check(d is not None and d >= 4.5e6, 'slow() lasted >= 5 ms (%s)' % d)
    info = info_json(ck, cyg, capture)
    ck.eq(info.get('events'), 2 * (3 + 1 + len(fast)),
          'info: timeline events = 2 per kept call')
    if ck.failures:
        print('--- replay output (first 30 lines)')
        print('\n'.join(cp.out.splitlines()[:30]))

    # Control: without -t every fast() call is in the timeline.
    cap2, data2, _ = record_and_check(ck, cyg, example, exp, opts=['--timeline'],
                                      capname='nofilter.data')
    check_functions(ck, data2, exp['functions'])
    cp = run([cyg.exe, 'replay', cap2])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'replay (no -t) exit status')
    got = {fn: replay_calls(cp.out, fn) for fn in ('main', 'fast', 'slow')}
    ck.eq(got, {'main': 1, 'fast': 1000, 'slow': 3}, 'replay without -t: lines per function')
    ck.eq(info_json(ck, cyg, cap2).get('events'), 2 * 1004, 'info: events without -t')


# --------------------------------------------------------------------------
# signals sent to cygprof, many threads, a collector that dies


def read_line(proc, deadline_s):
    """One line of proc's stdout, or Failure after deadline_s seconds."""
    import select
    buf = b''
    end = time.monotonic() + deadline_s
    fd = proc.stdout.fileno()
    while not buf.endswith(b'\n'):
        left = end - time.monotonic()
        if left <= 0:
            raise Failure('no line from the program within %ds (got %r)' % (deadline_s, buf))
        r, _, _ = select.select([fd], [], [], left)
        if r:
            chunk = os.read(fd, 1)
            if not chunk:
                raise Failure('the program\'s stdout closed before a full line (got %r)' % buf)
            buf += chunk
    return buf.decode('utf-8', 'replace').rstrip('\n')


def children(pid):
    """The child pids of pid (Linux /proc)."""
    kids = []
    try:
        for tid in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, tid)) as f:
                kids += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return kids


def proc_status(pid, keys):
    try:
        with open('/proc/%d/status' % pid) as f:
            return ' '.join(l.replace('\t', ' ') for l in f.read().splitlines()
                            if l.split(':')[0] in keys)
    except OSError as e:
        return str(e)


def signal_test(sig, handle):
    """SIGTERM/SIGINT sent to `cygprof record` reach the program; the capture
    is finished and exact."""
    def t(ck, cyg, example):
        exp = exp_waitsig(7, handle, sig)
        capture = os.path.join(cyg.workdir, 'sig.data')
        cmd = [cyg.exe, 'record', '-o', capture, '--', example] + exp['args']
        print('$ ' + ' '.join(cmd))
        p = subprocess.Popen(cmd, cwd=cyg.workdir, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                             preexec_fn=no_core)
        try:
            first = read_line(p, 30)
            ck.eq(first, exp['stdout'][0], 'the program\'s "ready" line')
            print('send signal %d to cygprof (pid %d)' % (sig, p.pid))
            kids = children(p.pid)
            p.send_signal(sig)
            out, err = p.communicate(timeout=10)
        except subprocess.TimeoutExpired as e:
            state = ['pid %s: %s' % (k, proc_status(k, ('State', 'SigPnd', 'ShdPnd', 'SigCgt')))
                     for k in kids]
            raise Failure('cygprof record did not end within 10 s of signal %d; the program: %s '
                          '(no signal pending: cygprof did not forward it)' % (sig, state)) from e
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
        out = (first + '\n' + out.decode('utf-8', 'replace')).splitlines()
        err = err.decode('utf-8', 'replace')
        ck.eq(describe_status(p.returncode), describe_status(exp['status']),
              'record exit status after signal %d' % sig)
        for line in exp['stdout']:
            ck.check(line in out, 'program printed %r (stdout: %r)' % (line, out))
        lines = [line for line in err.splitlines() if line.strip()]
        ck.check(len(lines) == 1 and lines[0].startswith('cygprof'),
                 'record prints a one-line summary on stderr (got %r)' % lines)
        if not os.path.exists(capture):
            raise Failure('record left no capture at %s' % capture)
        data, _ = cyg.report_json(capture, ck)
        ck.eq(data['lost_events'], 0, 'lost_events')
        check_all(ck, data, exp, example)
        info = info_json(ck, cyg, capture)
        ck.check(example in str(info.get('meta', {}).get('command')),
                 'info: the capture holds its command (%r)' % info.get('meta'))
        ck.eq([p_['end'] for p_ in info.get('processes', [])], exp['ends'], 'info: process end')
    return t


def many_threads_test(total, wave, k):
    def t(ck, cyg, example):
        exp = exp_manythreads(total, wave, k)
        capture, data, _ = record_and_check(ck, cyg, example, exp, opts=['--timeline'])
        ck.eq(data['lost_events'], 0, 'lost_events')
        check_all(ck, data, exp, example)
        tids = [th.get('tid') for th in data['threads']]
        ck.eq(len(set(tids)), total + 1, 'distinct thread ids')
        info = info_json(ck, cyg, capture)
        ths = info.get('threads', [])
        ck.eq(len(ths), total + 1, 'info: threads')
        ck.eq(info.get('lost_events'), 0, 'info: lost_events')
        ck.eq(info.get('calls'), 1 + total + total * k, 'info: calls')
        ck.eq(info.get('events'), 2 * (1 + total + total * k), 'info: timeline events')
        ended = [th.get('tid') for th in ths if not (th.get('flags', 0) & 1)]
        ck.check(not ended, 'info: every thread ended by itself (not: %s)' % ended[:10])
        cp = run([cyg.exe, 'replay', capture])
        ck.eq(describe_status(cp.returncode), 'exit 0', 'replay exit status')
        got = {fn: replay_calls(cp.out, fn) for fn in ('main', 'worker', 'work')}
        ck.eq(got, {'main': 1, 'worker': total, 'work': total * k}, 'replay: calls per function')
        shown = {int(x) for x in re.findall(r'\[\s*(\d+)\]', cp.out)}
        ck.eq(len(shown), total + 1, 'replay: distinct tids')
    return t


def test_collector_gone(ck, cyg, example):
    """SIGKILL to cygprof itself while the program runs: the program (its child)
    must go on and finish by itself; its writers stop waiting for the ring."""
    import ctypes
    exp = exp_longrun()
    PR_SET_CHILD_SUBREAPER = 36
    libc = ctypes.CDLL(None, use_errno=True)
    # The program becomes an orphan when cygprof dies: be its reaper, to get
    # its exit status.
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise Failure('prctl(PR_SET_CHILD_SUBREAPER): errno %d' % ctypes.get_errno())
    d = cyg.workdir
    pidfile = os.path.join(d, 'pid')
    outpath = os.path.join(d, 'stdout')
    capture = os.path.join(d, 'gone.data')
    cmd = [cyg.exe, 'record', '-o', capture, '--timeline', '--ring-size', '4096', '--',
           example, pidfile] + exp['args']
    print('$ ' + ' '.join(cmd))
    with open(outpath, 'wb') as out:
        p = subprocess.Popen(cmd, cwd=d, stdout=out, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, preexec_fn=no_core)
    pid = None
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end and p.poll() is None:
            if os.path.exists(pidfile):
                with open(pidfile) as f:
                    text = f.read()
                if text.endswith('\n'):
                    pid = int(text)
                    break
            time.sleep(0.01)
        if pid is None:
            raise Failure('the program did not write its pid (cygprof: %s)' %
                          (describe_status(p.returncode) if p.poll() is not None else 'running'))
        time.sleep(0.5)
        ck.check(p.poll() is None, 'cygprof still runs after 0.5 s')
        p.kill()
        p.wait()
        killed_at = time.monotonic()
        print('killed cygprof (pid %d) with SIGKILL; the program is pid %d' % (p.pid, pid))
        status = None
        while time.monotonic() < killed_at + 30:
            wpid, st = os.waitpid(pid, os.WNOHANG)
            if wpid == pid:
                status = st
                break
            time.sleep(0.05)
        took = time.monotonic() - killed_at
        if status is None:
            raise Failure('the program (pid %d) did not end within 30 s of the collector\'s '
                          'death' % pid)
        print('info: the program ended %.2f s after the collector' % took)
        pid = None
        rc = os.waitstatus_to_exitcode(status)
        ck.eq(describe_status(rc), 'exit 0', 'the program ends by itself')
        ck.check(took < 10, 'the program ended within 10 s of the collector\'s death '
                 '(%.2f s)' % took)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if pid is not None:
            try:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            except OSError:
                pass
    with open(outpath, 'rb') as f:
        lines = f.read().decode('utf-8', 'replace').splitlines()
    ck.eq(lines, exp['stdout'], 'the program\'s whole output')
    # What was left at the capture's path must not crash a reader.
    if os.path.exists(capture):
        cp = run([cyg.exe, 'report', '--format=json', capture])
        ck.check(cp.returncode >= 0, 'report of the capture of a killed collector: no '
                 'death by signal (%s)' % describe_status(cp.returncode))


# --------------------------------------------------------------------------
# output errors, info


def test_errors_output(ck, cyg, example):
    """-o that cannot be created: one error line, exit 1, the program not run."""
    d = cyg.workdir
    marker = os.path.join(d, 'marker')
    prog = ['/bin/sh', '-c', 'echo ran > "$0"', marker]
    ok = os.path.join(d, 'ok.data')
    cp = cyg.record(ok, prog)
    ck.eq(describe_status(cp.returncode), 'exit 0', 'control: record of the marker program')
    ck.check(os.path.exists(marker), 'control: the program creates its marker')
    regular = os.path.join(d, 'regular-file')
    with open(regular, 'w') as f:
        f.write('not a directory\n')
    adir = os.path.join(d, 'a-directory')
    os.mkdir(adir)
    cases = [
        ('a directory that does not exist', os.path.join(d, 'no-such-dir', 'c.data')),
        ('a path whose parent is a regular file', os.path.join(regular, 'c.data')),
        ('/proc (not writable)', '/proc/cygprof-e2e-%d.data' % os.getpid()),
        ('an existing directory', adir),
    ]
    if os.geteuid() != 0:
        ro = os.path.join(d, 'read-only')
        os.mkdir(ro, 0o555)
        cases.append(('a read-only directory', os.path.join(ro, 'c.data')))
    for what, path in cases:
        if os.path.exists(marker):
            os.unlink(marker)
        cp = cyg.record(path, prog)
        expect_error(ck, cp, '-o into %s' % what, 1)
        ck.check(not os.path.exists(marker), '-o into %s: the program was not run' % what)
        if path != adir:
            ck.check(not os.path.exists(path), '-o into %s: no capture left' % what)
    ck.eq(sorted(os.listdir(adir)), [], 'the existing directory is left alone')


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


def test_disk_full(ck, cyg, example):
    """A capture that does not fit on its file system: one line naming the
    problem and exit 1, never a crash.  (An already full file system is
    tested by safety.py, disk-full-empty.)"""
    mnt = os.path.join(cyg.workdir, 'small')
    os.mkdir(mnt)
    if os.geteuid() != 0 or run(['mount', '-t', 'tmpfs', '-o', 'size=96k', 'tmpfs', mnt]).returncode:
        print('SKIP: needs root to mount a small tmpfs')
        sys.exit(SKIP)
    try:
        # threads-O2 with --timeline: more than 96 KB even compressed (a capture is
        # at least 16 pages), and more than the 64 KiB record checks for at the start
        target = os.path.join(mnt, 'cap.data')
        cp = cyg.record(target, [example, '100000'], ['--timeline'])
        expect_error(ck, cp, 'record onto a full file system', 1)
        ck.check(re.match(r'^cygprof: record: %s: no space left on device$' % re.escape(target),
                          cp.err) is not None,
                 'the error says there is no space left (got %r)' % cp.err.strip())
    finally:
        run(['umount', mnt])


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


def test_clock(ck, cyg, example):
    """The capture's clock written down: the tick read with CLOCK_MONOTONIC
    and CLOCK_REALTIME at the start and at the end (meta clock_start,
    clock_end) and the tsc frequency, so that an event at t_ns is at
    clock_start.mono_ns + t_ns on perf's clock (perf record -k
    CLOCK_MONOTONIC)."""
    cap = os.path.join(cyg.workdir, 'clock.data')
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    cp = cyg.record(cap, [example], ['--timeline'])
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    ck.eq(cp.returncode, 0, 'record')
    meta = info_json(ck, cyg, cap).get('meta', {})

    def pair(key):
        try:
            return {k: int(v) for k, v in (f.split('=') for f in meta[key].split())}
        except (KeyError, ValueError, AttributeError):
            raise Failure('meta %s malformed: %r' % (key, meta.get(key)))
    a, b = pair('clock_start'), pair('clock_end')
    ck.eq(sorted(a), ['mono_ns', 'real_ns', 'tick'], 'clock_start: tick, mono_ns, real_ns')
    dur = int(meta['duration_ns'])
    ck.check(t0 <= a['mono_ns'] <= b['mono_ns'] <= t1,
             'both pairings taken during the recording, on CLOCK_MONOTONIC')
    ck.check(b['mono_ns'] - a['mono_ns'] >= dur, 'the end pairing is after the last event')
    drift = abs((b['real_ns'] - b['mono_ns']) - (a['real_ns'] - a['mono_ns']))
    ck.check(drift < 1000000, 'realtime - monotonic the same at both ends (%d ns apart)' % drift)
    if meta.get('clock') == 'tsc':
        hz = int(meta['tsc_hz'])
        ck.check(10**8 <= hz <= 10**11, 'tsc_hz plausible (%d)' % hz)
        ck.check(abs((b['tick'] - a['tick']) * 1e9 / hz - (b['mono_ns'] - a['mono_ns'])) < 1000,
                 'ticks / tsc_hz = the monotonic time between the pairings')
    else:
        ck.eq(meta.get('tsc_hz'), None, 'no tsc_hz with the monotonic clock')


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


def test_info_forkexec(ck, cyg, example):
    exp = exp_forkexec()
    capture, data, _ = record_and_check(ck, cyg, example, exp)
    check_all(ck, data, exp, example)
    cp = run([cyg.exe, 'info', capture])
    ck.eq(describe_status(cp.returncode), 'exit 0', 'info exit status')
    lines = cp.out.splitlines()
    ck.eq(lines[:1], ['# capture: %s' % capture], 'info: first line')
    cmd = [re.sub(r'^command\s*:\s*', '', l) for l in lines if re.match(r'command\s*:', l)]
    ck.eq(cmd, [example], 'info: the command line')
    ck.check('processes (3):' in lines, 'info: "processes (3):"')
    ck.check('threads (3):' in lines, 'info: "threads (3):"')
    for p in data['processes']:
        row = re.compile(r'^\s*%d\s+\d+\s+%s\s+%s' % (p['pid'], re.escape(p['end']),
                                                    re.escape(p['command'])))
        ck.check(any(row.match(l) for l in lines),
                 'info: a process row "%d ... %s %s"' % (p['pid'], p['end'], p['command']))
    ends = sorted(re.findall(r'^\s*\d+\s+\d+\s+(exit \d+|signal \d+|exec|unknown)\s',
                             cp.out, re.M))
    ck.eq(ends, sorted(exp['ends']), 'info: the ends of the process table')
    total = sum(exp['functions'].values())
    tot = [l for l in lines if l.startswith('totals:')]
    ck.check(len(tot) == 1 and tot[0].startswith('totals: %d calls, 0 events, 0 lost' % total),
             'info: totals line with %d calls (got %r)' % (total, tot))

    info = info_json(ck, cyg, capture)
    ck.eq(info.get('file'), capture, 'info json: file')
    ck.eq(info.get('meta', {}).get('command'), example, 'info json: meta.command')
    ck.eq(info.get('meta', {}).get('mode'), 'profile', 'info json: meta.mode')
    ck.eq(info.get('processes'), data['processes'], 'info json: processes = report\'s')
    keys = ('idx', 'tid', 'pid', 'name', 'calls', 'events', 'lost', 'unpaired', 'unwound')
    ith = [{k: t.get(k) for k in keys} for t in info.get('threads', [])]
    rth = [{k: t.get(k) for k in keys} for t in data['threads']]
    ck.eq(ith, rth, 'info json: threads = report\'s')
    ck.eq(len(ith), 3, 'info json: 3 threads')
    ck.eq(info.get('lost_events'), data['lost_events'], 'info json: lost_events')
    ck.eq(info.get('calls'), total, 'info json: calls (all entries)')
    ck.eq(info.get('calls'), sum(f['calls'] for f in data['functions']),
          'info json: calls = the sum of the report\'s calls')
    ck.eq(info.get('calls'), sum(t.get('calls', 0) for t in info.get('threads', [])),
          'info json: calls = the sum over threads')
    if os.path.isfile(capture):
        ck.eq(info.get('size'), os.path.getsize(capture), 'info json: size is the file\'s size')
    flags = {t['pid'] if t.get('flags', 0) & 4 else None for t in info.get('threads', [])}
    child = [p['pid'] for p in data['processes'] if p['end'] == 'exit 7']
    ck.eq(flags - {None}, set(child), 'info json: flag 4 marks the fork child\'s thread')


TESTS = {name: test_example(name) for name in EXPECT}
TESTS.update({
    'tiny-ring': test_tiny_ring,
    'drop': test_drop,
    'errors-record': test_errors_record,
    'errors-report': test_errors_report,
    'replay': test_replay,
    'filters-calls': test_filters_calls,
    'filters-recursion': test_filters_recursion,
    'filters-after-calls': test_filters_after_calls,
    'export-gmon': test_export_gmon,
    'filters-after-recursion': test_filters_after_recursion,
    'time-filter': test_timefilter,
    'sigterm': signal_test(15, False),
    'sigint': signal_test(2, False),
    'sigint-handled': signal_test(2, True),
    'sigterm-handled': signal_test(15, True),
    'manythreads-timeline': many_threads_test(200, 20, 50),
    'threads64': many_threads_test(64, 64, 100),
    'collector-gone': test_collector_gone,
    'errors-output': test_errors_output,
    'info-forkexec': test_info_forkexec,
    'mount-namespace': test_mount_namespace,
    'disk-full': test_disk_full,
    'stripped-debug-dir': test_stripped,
    'names-after-the-fact': test_names_after,
    'clock': test_clock,
    'inlined-frames': test_inlined_frames,
})


def driver_main(tests, prefix, doc, extra=None, call=None):
    """The main() of a test driver (runtime.py, hostile.py, safety.py): the
    common options plus extra(ap)'s, then tests[--test] run in a temporary
    directory as call(fn, ck, cyg, example, args) (default fn(ck, cyg,
    example, args)).  Returns the exit status: 0, 1 failed, 77 skipped."""
    global VERBOSE
    ap = argparse.ArgumentParser(description=doc.split('\n')[0])
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--example', required=True)
    ap.add_argument('--test', required=True, choices=sorted(tests))
    ap.add_argument('--skip', metavar='REASON')
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('-v', '--verbose', action='store_true')
    if extra:
        extra(ap)
    args = ap.parse_args()
    VERBOSE = args.verbose or bool(os.environ.get('CYGPROF_E2E_VERBOSE'))
    if args.skip:
        print('SKIP %s: %s' % (args.test, args.skip))
        return SKIP
    for what, path in (('cygprof', args.cygprof), ('example', args.example)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            print('FAIL %s: %s %s is not an executable file' % (args.test, what, path))
            return 1
    ck = Checker()
    workdir = tempfile.mkdtemp(prefix='cygprof-%s-%s-' % (prefix, args.test))
    cyg = Cygprof(os.path.abspath(args.cygprof), workdir)
    example = os.path.abspath(args.example)
    try:
        if call:
            call(tests[args.test], ck, cyg, example, args)
        else:
            tests[args.test](ck, cyg, example, args)
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


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', required=True, help='the cygprof executable')
    ap.add_argument('--example', required=True, help='the example program to record')
    ap.add_argument('--test', required=True, choices=sorted(TESTS))
    ap.add_argument('--skip', metavar='REASON', help='report the test as skipped (exit 77)')
    ap.add_argument('--keep', action='store_true', help='keep the temporary directory')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()
    VERBOSE = args.verbose or bool(os.environ.get('CYGPROF_E2E_VERBOSE'))

    if args.skip:
        print('SKIP %s: %s' % (args.test, args.skip))
        return SKIP
    for what, path in (('cygprof', args.cygprof), ('example', args.example)):
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            print('FAIL %s: %s %s is not an executable file' % (args.test, what, path))
            return 1
    cygprof = os.path.abspath(args.cygprof)
    example = os.path.abspath(args.example)

    ck = Checker()
    workdir = tempfile.mkdtemp(prefix='cygprof-e2e-%s-' % args.test)
    try:
        TESTS[args.test](ck, Cygprof(cygprof, workdir), example)
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
