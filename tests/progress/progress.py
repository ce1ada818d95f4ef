#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""progress-*: the progress line of export, replay and html on a terminal.

Usage:
  progress.py --cygprof CYGPROF --example CALLS --test NAME
              [--mem-prog PROG] [--sanitize B_SANITIZE] [-v] [--keep]

Each command runs with its standard error on a pseudo-terminal
(pty.openpty()) and CYGPROF_PROGRESS_DELAY_MS=0, so that the line shows
at once however fast the command is (no fixed sleep, no big capture).
What the terminal gets must be progress lines only, each rewritten with
\\r ("LABEL: P% (DONE of TOTAL UNIT), T s"), the percentages never going
back, ending with exactly one "LABEL: 100% (TOTAL UNIT), T s, done." and
a newline, TOTAL the capture's own count (info --format=json: the
timeline events, the trees' calls, the memory events).  Nothing at all
with --no-progress, with standard error a file, with standard output on
the terminal too (export to standard output, replay), or before the
delay (CYGPROF_PROGRESS_DELAY_MS=3600000).  Standard output is the same
with the progress or without it.

  progress-export  every --format of export on a --timeline capture of CALLS
  progress-replay  replay, also with -F and --time-range (the events it reads)
  progress-html    html (of a --timeline capture: its events)
  progress-memory  export --memory / --allocations and html of a --memory
                   capture of --mem-prog (skipped under a sanitizer: it owns
                   malloc)
  progress-errors  a bad CYGPROF_PROGRESS_DELAY_MS (one line, exit 2); a
                   command that fails prints its error line at the start of
                   a line and no "done."
"""

import os
import pty
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure  # noqa: E402


class Skip(Exception):
    pass


def env_with(delay, pager='cat'):
    env = dict(os.environ)
    env.pop('CYGPROF_PROGRESS_DELAY_MS', None)
    if delay is not None:
        env['CYGPROF_PROGRESS_DELAY_MS'] = delay
    # no pager (a terminal on stdout would start less), unless asked
    env['CYGPROF_PAGER'] = pager
    return env


def run_tty(cmd, cwd, delay='0', stdout_tty=False, pager='cat'):
    """cmd with standard error on a pseudo-terminal (and standard output
    too when stdout_tty, else a file): (exit status, what the terminal got,
    standard output)."""
    if cygtest.VERBOSE:
        print('$ [tty] CYGPROF_PROGRESS_DELAY_MS=%s %s' % (delay, ' '.join(cmd)))
    master, slave = pty.openpty()
    out_path = os.path.join(cwd, 'stdout.txt')
    with open(out_path, 'wb') as out:
        try:
            p = subprocess.Popen(cmd, cwd=cwd, env=env_with(delay, pager),
                                 stdin=subprocess.DEVNULL,
                                 stdout=slave if stdout_tty else out, stderr=slave)
        finally:
            os.close(slave)
        got = b''
        while True:  # until every end of the terminal is closed: the command exited
            try:
                d = os.read(master, 65536)
            except OSError:  # EIO: no writer left
                break
            if not d:
                break
            got += d
        os.close(master)
        try:
            rc = p.wait(timeout=cygtest.TIMEOUT)
        except subprocess.TimeoutExpired as e:
            p.kill()
            raise Failure('timed out: %s' % ' '.join(cmd)) from e
    with open(out_path, 'rb') as f:
        stdout = f.read()
    return rc, got.decode('utf-8', 'replace'), stdout


def run_file(cmd, cwd, delay='0', extra_env=None):
    """cmd with standard error a file, not a terminal."""
    env = env_with(delay)
    env.update(extra_env or {})
    cp = subprocess.run(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=cygtest.TIMEOUT)
    return cp.returncode, cp.stderr.decode('utf-8', 'replace'), cp.stdout


def count(n):
    """A count as the line shows it (cli/progress.c): exact under 10000,
    else "19.5 M"."""
    if n < 10000:
        return str(n)
    v, u = float(n), -1
    while v >= 1000 and u < 5:
        v /= 1000
        u += 1
    return '%.1f %s' % (v, 'KMGTPE'[u])


LINE = re.compile(r'^(\S+): +(\d+)% \((\S+(?: [KMGTPE])?) of (\S+(?: [KMGTPE])?) (\w+)\), '
                  r'(\d+\.\d) s$')
DONE = re.compile(r'^(\S+): 100% \((\S+(?: [KMGTPE])?) (\w+)\), (\d+\.\d) s, done\.$')


def check_progress(ck, what, tty, label, total, unit):
    """The terminal got progress lines of label ending in the done line
    with total unit, and nothing else."""
    ck.check(tty.endswith('done.\x1b[K\r\n'),
             '%s: the terminal ends with "done." and a newline: %r' % (what, tty[-120:]))
    pieces = [x for x in re.split(r'[\r\n]', tty.replace('\x1b[K', '')) if x]
    if not ck.check(pieces, '%s: progress lines shown' % what):
        return
    last = DONE.match(pieces[-1])
    ck.check(last is not None, '%s: the last line is the done line: %r' % (what, pieces[-1]))
    if last:
        ck.eq((last.group(1), last.group(2), last.group(3)), (label, count(total), unit),
              '%s: the done line\'s label, total and unit' % what)
    ck.eq(sum(1 for x in pieces if DONE.match(x)), 1, '%s: one done line' % what)
    prev = -1
    for x in pieces[:-1]:
        m = LINE.match(x)
        if not ck.check(m is not None, '%s: a progress line: %r' % (what, x)):
            continue
        pct = int(m.group(2))
        ck.check(m.group(1) == label and m.group(4) == count(total) and m.group(5) == unit,
                 '%s: %r is of %s %s' % (what, x, count(total), unit))
        ck.check(prev <= pct <= 100, '%s: percentages never go back: %d then %r' %
                 (what, prev, x))
        prev = pct


def check_quiet(ck, cyg, what, cmd, label, stdout_want=None, stdout_tty_ok=True):
    """No progress: --no-progress on a terminal, standard error a file,
    before the delay."""
    w = cyg.workdir
    rc, tty, out = run_tty(cmd + ['--no-progress'], w)
    ck.eq((rc, tty), (0, ''), '%s --no-progress: nothing on the terminal' % what)
    if stdout_want is not None:
        ck.check(out == stdout_want, '%s --no-progress: the same standard output' % what)
    rc, err, out = run_file(cmd, w)
    ck.eq((rc, err), (0, ''), '%s, standard error a file: nothing on it' % what)
    if stdout_want is not None:
        ck.check(out == stdout_want, '%s, standard error a file: the same standard output' %
                 what)
    rc, tty, out = run_tty(cmd, w, delay='3600000')
    ck.eq((rc, tty), (0, ''), '%s, an hour\'s delay: nothing on the terminal' % what)


def record_timeline(ck, cyg, example):
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [example], opts=['--timeline'])
    if cp.returncode != 0:
        raise Failure('record --timeline failed: %s' % cp.err.strip())
    return cap, cygtest.info_json(ck, cyg, cap)


def test_export(ck, cyg, example, args):
    w = cyg.workdir
    cap, info = record_timeline(ck, cyg, example)
    events, calls = info['events'], info['calls']
    ck.check(events > 0 and calls > 0, 'the capture has events and calls')
    formats = {'chrome': ('events', events), 'perfetto': ('events', events),
               'folded': ('calls', calls), 'callgrind': ('calls', calls),
               'pprof': ('calls', calls), 'gmon': ('calls', calls)}
    for fmt, (unit, total) in sorted(formats.items()):
        out = os.path.join(w, 'out.' + fmt)
        cmd = [cyg.exe, 'export', '--format', fmt, '-o', out, cap]
        rc, tty, stdout = run_tty(cmd, w)
        ck.eq(rc, 0, 'export --format %s on a terminal exits 0' % fmt)
        check_progress(ck, 'export --format ' + fmt, tty, 'export', total, unit)
        with open(out, 'rb') as f:
            first = f.read()
        check_quiet(ck, cyg, 'export --format ' + fmt, cmd, 'export',
                    stdout_want=stdout if fmt != 'gmon' else None)
        with open(out, 'rb') as f:
            again = f.read()
        if fmt in ('folded', 'callgrind'):  # the text formats without times of the run
            ck.check(first == again, 'export --format %s: the same file with or without '
                     'the progress' % fmt)
    # to standard output on the terminal: no progress over the output
    rc, tty, _ = run_tty([cyg.exe, 'export', '--format', 'folded', cap], w, stdout_tty=True)
    ck.eq(rc, 0, 'export --format folded to the terminal exits 0')
    ck.check('done.' not in tty and '%' not in tty.replace('%%', ''),
             'export to standard output on the terminal: no progress line: %r' % tty[-200:])
    # to standard output, a file: the progress shows
    rc, tty, out = run_tty([cyg.exe, 'export', '--format', 'folded', cap], w)
    check_progress(ck, 'export --format folded to a file', tty, 'export', calls, 'calls')


def test_replay(ck, cyg, example, args):
    w = cyg.workdir
    cap, info = record_timeline(ck, cyg, example)
    cmd = [cyg.exe, 'replay', cap]
    rc, tty, out = run_tty(cmd, w)
    ck.eq(rc, 0, 'replay on a terminal exits 0')
    check_progress(ck, 'replay', tty, 'replay', info['events'], 'events')
    plain = cygtest.run(cmd)
    ck.check(out.decode() == plain.out, 'replay: the same trace with the progress or without')
    check_quiet(ck, cyg, 'replay', cmd, 'replay', stdout_want=out)
    # -F b reads every stored event; a time range only its window's
    for opts, total in ((['-F', 'b'], info['events']), (['--time-range', '0,'], info['events']),
                        (['--time-range', '1000s,'], 0)):
        what = 'replay ' + ' '.join(opts)
        rc, tty, out = run_tty([cyg.exe, 'replay'] + opts + [cap], w)
        ck.eq(rc, 0, '%s on a terminal exits 0' % what)
        if total:
            check_progress(ck, what, tty, 'replay', total, 'events')
        else:  # nothing to read: no progress to show, then done
            m = DONE.match(tty.replace('\x1b[K', '').strip('\r\n'))
            ck.check(m is not None and m.group(1, 2, 3) == ('replay', '0', 'events'),
                     '%s: only the done line, of no events: %r' % (what, tty))
    # the trace itself on the terminal: no progress over it
    rc, tty, _ = run_tty(cmd, w, stdout_tty=True)
    ck.eq(rc, 0, 'replay to the terminal exits 0')
    ck.check('done.' not in tty and '\rreplay:' not in tty,
             'replay with standard output on the terminal: no progress line')
    ck.check('a()' in tty, 'replay with standard output on the terminal: the trace')
    # through a pager (here one that reads it all): no progress over the pager
    kept = os.path.join(w, 'paged.txt')
    rc, tty, _ = run_tty(cmd, w, stdout_tty=True, pager='cat > %s' % kept)
    ck.eq(rc, 0, 'replay through a pager exits 0')
    ck.check('done.' not in tty and '\rreplay:' not in tty,
             'replay through a pager: no progress line')
    ck.check(os.path.exists(kept) and 'a()' in open(kept).read(),
             'replay through a pager: the trace went to the pager')


def test_html(ck, cyg, example, args):
    w = cyg.workdir
    cap, info = record_timeline(ck, cyg, example)
    out = os.path.join(w, 'report.html')
    cmd = [cyg.exe, 'html', '-o', out, cap]
    rc, tty, _ = run_tty(cmd, w)
    ck.eq(rc, 0, 'html on a terminal exits 0')
    # a timeline: its events are what html reads longest
    check_progress(ck, 'html', tty, 'html', info['events'], 'events')
    ck.check(os.path.getsize(out) > 0, 'html: the report written')
    check_quiet(ck, cyg, 'html', cmd, 'html')


def test_memory(ck, cyg, example, args):
    if args.sanitize not in (None, '', 'none'):
        raise Skip('--memory under b_sanitize=%s' % args.sanitize)
    if not args.mem_prog:
        raise Failure('--mem-prog is needed')
    w = cyg.workdir
    cap = os.path.join(w, 'mem.data')
    cp = cyg.record(cap, [os.path.abspath(args.mem_prog)], opts=['--memory', '--timeline'])
    if cp.returncode != 0:
        raise Failure('record --memory failed: %s' % cp.err.strip())
    info = cygtest.info_json(ck, cyg, cap)
    mem, events = info['memory_events'], info['events']
    ck.check(mem > 0, 'the capture has memory events (%d)' % mem)
    cases = [
        (['export', '--format', 'folded', '--memory', 'allocated'], 'export', mem),
        (['export', '--format', 'pprof', '--memory', 'leaked'], 'export', mem),
        (['export', '--format', 'chrome', '--allocations'], 'export', events + mem),
        (['html'], 'html', events + mem),
    ]
    for i, (opts, label, total) in enumerate(cases):
        cmd = [cyg.exe] + opts + ['-o', os.path.join(w, 'out%d' % i), cap]
        rc, tty, _ = run_tty(cmd, w)
        what = ' '.join(opts)
        ck.eq(rc, 0, '%s on a terminal exits 0' % what)
        check_progress(ck, what, tty, label, total, 'events')
        check_quiet(ck, cyg, what, cmd, label)


def test_errors(ck, cyg, example, args):
    w = cyg.workdir
    cap = os.path.join(w, 'plain.data')
    cp = cyg.record(cap, [example])
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    for val in ('abc', '-1', '1.5', '3600001', ' 5'):
        rc, err, _ = run_file([cyg.exe, 'export', '--format', 'folded', cap], w, delay=val)
        ck.eq((rc, err), (2, 'cygprof: CYGPROF_PROGRESS_DELAY_MS=%s: not an integer from 0 '
                          'to 3600000\n' % val),
              'CYGPROF_PROGRESS_DELAY_MS=%r: one line, exit 2' % val)
    # a capture without a timeline: the error at the start of its own line,
    # never "done."
    for cmd in ([cyg.exe, 'export', '--format', 'perfetto', '-o', os.path.join(w, 'x.pf'), cap],
                [cyg.exe, 'replay', cap]):
        rc, tty, _ = run_tty(cmd, w)
        what = ' '.join(cmd[1:3])
        ck.eq(rc, 1, '%s of a capture without a timeline exits 1' % what)
        lines = [x for x in tty.split('\r\n') if x]
        last = lines[-1].split('\r')[-1].replace('\x1b[K', '') if lines else ''
        ck.check(last.startswith('cygprof: ') and 'timeline' in last,
                 '%s: its error on a line of its own: %r' % (what, tty))
        ck.check('done.' not in tty, '%s: no done line' % what)
    # a warning while the line is shown: the line taken off first, the
    # warning on a line of its own, then the progress goes on to "done."
    tl, info = record_timeline(ck, cyg, example)
    rc, tty, _ = run_tty([cyg.exe, 'export', '--format', 'chrome', '--allocations', '-o',
                          os.path.join(w, 'x.json'), tl], w)
    ck.eq(rc, 0, 'export --allocations of a capture without memory exits 0')
    lines = [x.split('\r')[-1] for x in tty.replace('\x1b[K', '').split('\r\n') if x]
    warn = [x for x in lines if x.startswith('cygprof: warning: ')]
    ck.check(len(warn) == 1 and 'has no allocations' in warn[0],
             'export --allocations: its warning on a line of its own: %r' % tty)
    ck.check('\rexport:   0% (0 of ' in tty.split('cygprof: warning')[0],
             'export --allocations: the line was shown before the warning')
    ck.check(lines and DONE.match(lines[-1]) and lines[-1].startswith('export: 100%% (%s events)'
                                                                       % count(info['events'])),
             'export --allocations: then the done line: %r' % lines[-1:])


TESTS = {
    'progress-export': test_export,
    'progress-replay': test_replay,
    'progress-html': test_html,
    'progress-memory': test_memory,
    'progress-errors': test_errors,
}


def main():
    def extra(ap):
        ap.add_argument('--mem-prog')
        ap.add_argument('--sanitize')

    def call(fn, ck, cyg, example, args):
        try:
            fn(ck, cyg, example, args)
        except Skip as e:
            print('SKIP %s: %s' % (args.test, e))
            sys.exit(cygtest.SKIP)

    return cygtest.driver_main(TESTS, 'progress', __doc__, extra=extra, call=call)


if __name__ == '__main__':
    sys.exit(main())
