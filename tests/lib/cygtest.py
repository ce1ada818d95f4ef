#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cygtest: the helpers every end-to-end driver of tests/ imports.

A driver puts tests/lib on sys.path and imports this module; see
tests/README.md.  What is here:

  - Checker, Failure, run(), expect_error(): checks that collect their
    failures, commands with a timeout and without core files, the one-line
    error rule;
  - Cygprof: record and report --format=json (the JSON's shape checked);
  - the exact expectations of the shared examples of examples/ (exp_NAME,
    EXPECT: the numbers stated in each example's comment block) and
    record_and_check() / check_all(), which compare a report with them;
  - info_json(), replay_calls(), nm_functions() and the process helpers;
  - driver_main(): the main() of a driver: the common options, a
    temporary directory, exit 0 passed, 1 failed, 77 skipped (meson's
    convention; only when the test cannot run here, e.g. no C++ compiler).

Standard library only.
"""

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
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
    """A crashing example must not leave core files behind: no core file
    for this process nor (inherited) for anything it starts."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# Once for the driver, whose children inherit it: then subprocess starts
# them with vfork (a preexec_fn would fork the whole driver, page tables and
# copy-on-write faults included, for every command).
no_core()


def run(cmd, cwd=None, timeout=TIMEOUT, env=None):
    print('$ ' + ' '.join(cmd))
    try:
        cp = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, timeout=timeout, env=env)
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

    def report_json(self, capture, ck, raw=False):
        """The JSON report; raw: --raw-times (the times as measured, with
        the hooks' own cost: what the checks of a program's structure
        compare, as the timeline does)."""
        cp = run([self.exe, 'report', '--format=json', capture] + (['--raw-times'] if raw else []))
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


def exp_forkpath(r=20):
    return dict(
        args=[str(r)], status=0, threads=None, ends=['exit 0'] * (r + 1),
        stdout=['forkpath: rounds=%d' % r],
        functions={'main': 1, 'serve': r, 'handle': r, 'save_background': r, 'do_fork': r,
                   'idle': r, 'wait_child': r, 'child_save': r, 'child_write': 3 * r},
        arcs={('main', 'serve'): r, ('serve', 'handle'): r, ('handle', 'save_background'): r,
              ('save_background', 'do_fork'): r, ('save_background', 'child_save'): r,
              ('child_save', 'child_write'): 3 * r, ('main', 'idle'): r,
              ('idle', 'wait_child'): r},
        roots={'main'}, busy=['child_write'])


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
    'forkpath': exp_forkpath,
    'crash': exp_crash, 'exitdeep': exp_exitdeep, 'timefilter': exp_timefilter,
    'killself': exp_killself, 'manythreads': exp_manythreads,
}


# --------------------------------------------------------------------------
# tests


def record_and_check(ck, cyg, example, exp, opts=(), capname='cap.data', warnings=()):
    """Record example with opts; warnings: the lines record must print
    after its summary, exactly."""
    capture = os.path.join(cyg.workdir, capname)
    cp = cyg.record(capture, [example] + exp['args'], opts)
    ck.eq(describe_status(cp.returncode), describe_status(exp['status']),
          'record exit status (the program\'s)')
    check_stdout(ck, cp, exp['stdout'])
    # The examples write nothing to stderr: what is there is cygprof's summary.
    lines = [line for line in cp.err.splitlines() if line.strip()]
    ck.check(len(lines) == 1 + len(warnings) and lines[0].startswith('cygprof') and
             lines[1:] == list(warnings),
             'record prints a one-line summary on stderr%s (got %r)' %
             (' and %r' % list(warnings) if warnings else '', lines))
    if not os.path.exists(capture):
        raise Failure('record left no capture at %s' % capture)
    # as measured: the examples' nesting (a caller's total at least its
    # callee's) holds of what was measured; compensation may take a little
    # more out of a caller than the noise of its callee allows
    # (tests/overhead/ checks the compensated figures)
    data, text = cyg.report_json(capture, ck, raw=True)
    return capture, data, text


def check_all(ck, data, exp, example):
    check_functions(ck, data, exp['functions'])
    check_arcs(ck, data, exp['arcs'], exp['roots'])
    check_processes(ck, data, exp['ends'], example)
    if exp['threads'] is not None:
        ck.eq(len(data['threads']), exp['threads'], 'number of threads')
    check_times(ck, data, exp['busy'])


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
