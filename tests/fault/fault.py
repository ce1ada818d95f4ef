#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write errors injected into cygprof's commands (as SQLite's I/O-error
tests do), with the preloaded libcygprof-fault.so (fault.c): the Nth
write-side call (write, pwrite, writev, fsync, fdatasync, msync, mmap,
ftruncate, fallocate) on a file under the output's directory fails with
ENOSPC, then with EIO, for N = 1, 2, 4, 8, ... until a run meets no fault
(CYGPROF_FAULT_EVERY=1: every N), and at each of the last 8 points of a
whole run (the seal and the compaction of a capture).  Every run that met
its fault must exit non-zero with one line naming the output (not the
input) and the error, leave no temporary file (.cygprof-*, .NAME.*), and
any capture it left must read (cygprof info exits 0).  A fault in the
compaction of a sealed capture (cygprof_capture_compact()) is the one
exception: the command exits 0, says in one warning line that the output
was not compacted and why, and the capture reads whole (the calls of a run
without a fault).  The fault points of a whole successful run are counted
and printed ("fault points: ...").

Usage:
  fault.py --cygprof CYGPROF --example EXAMPLE --mem-prog PROG --shim LIB
           --test NAME [--sanitize MODE] [-v]

Tests:
  fault-shim             the library: a bad CYGPROF_FAULT or directory is one
                         line and exit 2; the traced program does not inherit
                         it; a run counts its points, the same every time
  fault-record-timeline  record --timeline -o DIR/cap.data: also the program
                         runs on to its end every time
  fault-record-memory    record --memory -o DIR/cap.data
  fault-receive          receive -o DIR/recv.data from record --send
  fault-export-FORMAT    export --format=FORMAT -o DIR/OUT (chrome, folded,
                         callgrind, pprof)
  fault-html             html -o DIR/report.html
  fault-gprof            gprof --gmon-out DIR/gmon.out
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run  # noqa: E402

ERRORS = (('ENOSPC', os.strerror(28)), ('EIO', os.strerror(5)))


class Skip(Exception):
    pass


def shim_env(args, outdir, log, spec=None):
    env = dict(os.environ)
    env['LD_PRELOAD'] = args.shim
    env['CYGPROF_FAULT_DIR'] = outdir
    env['CYGPROF_FAULT_LOG'] = log
    env.pop('CYGPROF_FAULT', None)
    if spec:
        env['CYGPROF_FAULT'] = spec
    return env


def run_env(cmd, env, cwd=None):
    print('$ %s%s' % ('CYGPROF_FAULT=%s ' % env['CYGPROF_FAULT'] if 'CYGPROF_FAULT' in env
                      else '', ' '.join(cmd)))
    try:
        cp = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                            timeout=cygtest.TIMEOUT)
    except subprocess.TimeoutExpired as e:
        raise Failure('timed out: %s' % ' '.join(cmd)) from e
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    return cp


def read_log(log):
    """The lines the shim appended: [(pid, points, hit)], then empty the log."""
    if not os.path.exists(log):
        return []
    with open(log) as f:
        rows = [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    os.unlink(log)
    return rows


def leftovers(outdir, keep):
    """Files in outdir other than those in keep (temporaries above all)."""
    return sorted(f for f in os.listdir(outdir) if f not in keep)


class Target:
    """One command under test: how to run it, where its output goes."""

    def __init__(self, name, cmd, output, keep, capture=False, check=None, before=None):
        self.name = name
        self.cmd = cmd            # argv, with the shim preloaded
        self.output = output      # the path the error must name
        self.keep = keep          # the files a run may leave in outdir
        self.capture = capture    # the output is a capture: info must read it
        self.check = check        # more checks on a run: check(ck, cp, what)
        self.before = before      # called before each run (fresh state)


def one_run(ck, cyg, args, t, outdir, log, spec):
    if t.before:
        t.before()
    env = shim_env(args, outdir, log, spec)
    cp = t.run(env) if hasattr(t, 'run') else run_env(t.cmd, env)
    rows = read_log(log)
    if len(rows) != 1:
        raise Failure('%s: the shim logged %d processes, not 1: %r (stderr %r)' %
                      (t.name, len(rows), rows, cp.err))
    _, points, hit = rows[0]
    return cp, points, hit


def check_failed(ck, cyg, t, cp, what, errtext, input_path):
    ck.check(cp.returncode > 0 and cp.returncode < 126,
             '%s: exits non-zero, not by a signal (%s)' % (what, cygtest.describe_status(
                 cp.returncode)))
    lines = cp.err_lines
    ck.check(len(lines) == 1 and lines[0].startswith('cygprof: '),
             '%s: exactly one line on stderr (got %r)' % (what, lines))
    line = lines[0] if lines else ''
    ck.check(t.output in line, '%s: the line names the output %s (%r)' % (what, t.output, line))
    if input_path:
        ck.check(input_path not in line, '%s: the line does not name the input (%r)' %
                 (what, line))
    ck.check(errtext.lower() in line.lower(), '%s: the line says %r (%r)' % (what, errtext,
                                                                          line))


def report_calls(cyg, cap):
    """{function: calls} of a capture's report, None when it does not read."""
    r = run([cyg.exe, 'report', '--format=json', cap])
    if r.returncode != 0:
        return None
    import json
    return {f['name']: f['calls'] for f in json.loads(r.out)['functions']}


def err_lines(cp):
    """stderr without receive's lines that say what it does (listening, the
    bytes received): the lines a fault may add."""
    return [line for line in cp.err.splitlines()
            if not line.startswith('receive: listening') and
            not re.match(r'receive: .*: \d+ bytes received from ', line)]


def check_not_compacted(ck, cyg, t, cp, what, errtext, want_calls):
    """A fault in the compaction of the sealed capture: exit 0, one
    warning line naming the output and the error, the capture whole."""
    lines = cp.err_lines
    ck.check(len(lines) == 1 and lines[0].startswith('cygprof: warning: ') and
             t.output in lines[0] and 'not compacted' in lines[0] and
             errtext.lower() in lines[0].lower(),
             '%s: exit 0 and one warning line: not compacted, naming the output and %r '
             '(got %r)' % (what, errtext, lines))
    got = report_calls(cyg, t.output)
    ck.check(got is not None and got == want_calls,
             '%s: the capture kept whole reads with the calls of a run without a fault'
             % what)


def exercise(ck, cyg, args, t, outdir, input_path=None):
    """The baseline (count the fault points), then N = 1, 2, 4, ... with
    each error, then each of the last 8 points of the baseline."""
    log = os.path.join(cyg.workdir, 'fault.log')
    cp, points, hit = one_run(ck, cyg, args, t, outdir, log, None)
    cp.err_lines = err_lines(cp)
    if cp.returncode != 0:
        raise Failure('%s without a fault failed: %s' % (t.name, cp.err.strip()))
    if t.check:
        t.check(ck, cp, '%s without a fault' % t.name)
    ck.check(points > 0, '%s: it met fault points (%d)' % (t.name, points))
    print('fault points: %s: %d' % (t.name, points))
    want_calls = report_calls(cyg, t.output) if t.capture else None
    for f in os.listdir(outdir):
        os.unlink(os.path.join(outdir, f))
    every = os.environ.get('CYGPROF_FAULT_EVERY') == '1'
    runs = {'tried': 0, 'compaction': 0}

    def one(n, name, errtext):
        """A run with the nth fault point failing: whether it was met."""
        for f in os.listdir(outdir):
            os.unlink(os.path.join(outdir, f))
        spec = 'any:%d:%s' % (n, name)
        what = '%s, fault %s' % (t.name, spec)
        cp, pts, hit = one_run(ck, cyg, args, t, outdir, log, spec)
        cp.err_lines = err_lines(cp)
        runs['tried'] += 1
        if not hit:
            ck.eq(cp.returncode, 0, '%s: no fault met: the run succeeds (%r)' %
                  (what, cp.err.strip()))
            # the number of commits follows the run's timing (one per 200 ms
            # and per checkpoint), so a run may meet a few fault points more
            # or fewer than the baseline did
            ck.check(pts < n, '%s: not met, so fewer than %d points (%d)' % (what, n, pts))
            return False
        if t.capture and cp.returncode == 0:
            runs['compaction'] += 1
            check_not_compacted(ck, cyg, t, cp, what, errtext, want_calls)
        else:
            check_failed(ck, cyg, t, cp, what, errtext, input_path)
            if t.check:
                t.check(ck, cp, what)
            if t.capture and os.path.exists(t.output):
                info = run([cyg.exe, 'info', t.output])
                ck.eq(info.returncode, 0, '%s: the capture left reads (info: %r)' %
                      (what, info.err.strip()))
        left = leftovers(outdir, t.keep)
        ck.eq(left, [], '%s: no temporary file left' % what)
        for f in os.listdir(outdir):
            os.unlink(os.path.join(outdir, f))
        return True

    for name, errtext in ERRORS:
        n, done = 1, set()
        while True:
            done.add(n)
            if not one(n, name, errtext):
                break
            n = n + 1 if every else n * 2
        # each of the last points of a whole run: the seal, the compaction
        for n in range(max(1, points - 7), points + 1):
            if n not in done:
                one(n, name, errtext)
    tried, compaction = runs['tried'], runs['compaction']
    if t.capture:
        ck.check(compaction > 0, '%s: faults met in the compaction (%d runs)' %
                 (t.name, compaction))
    print('fault runs: %s: %d, %d with a fault in the compaction (fault points in a whole '
          'run: %d)' % (t.name, tried, compaction, points))


def record_capture(cyg, path, prog, opts=()):
    cp = run([cyg.exe, 'record', '-q', '-o', path] + list(opts) + ['--'] + prog)
    if cp.returncode != 0:
        raise Failure('record %s failed: %s' % (' '.join(opts), cp.err.strip()))
    return path


def dirs(cyg):
    outdir = os.path.join(cyg.workdir, 'out')
    os.mkdir(outdir)
    return outdir


# --------------------------------------------------------------------------


def test_shim(ck, cyg, example, args):
    outdir = dirs(cyg)
    log = os.path.join(cyg.workdir, 'fault.log')
    for bad in ('pwrite', 'pwrite:0:EIO', 'pwrite:1:EPERM', 'nosuch:1:EIO', 'any:1x:EIO',
                'any:-1:EIO', 'write:1:EIO:'):
        env = shim_env(args, outdir, log, bad)
        cp = run_env([cyg.exe, '--help'], env)
        ck.eq(cp.returncode, 2, 'CYGPROF_FAULT=%s: exit 2' % bad)
        ck.check(len(cp.err.splitlines()) == 1 and 'CYGPROF_FAULT' in cp.err,
                 'CYGPROF_FAULT=%s: one line naming it (%r)' % (bad, cp.err))
    env = shim_env(args, os.path.join(cyg.workdir, 'nosuch'), log)
    cp = run_env([cyg.exe, '--help'], env)
    ck.check(cp.returncode == 2 and 'CYGPROF_FAULT_DIR' in cp.err,
             'a missing CYGPROF_FAULT_DIR: exit 2 naming it (%r)' % cp.err)
    read_log(log)
    # the traced program does not inherit the library: it would count (and
    # fail) the program's own writes into the directory
    script = 'echo "$LD_PRELOAD" > %s/pl; echo x > %s/f' % (outdir, outdir)
    env = shim_env(args, outdir, log, 'write:1+:EIO')
    cap = os.path.join(cyg.workdir, 'c.data')
    cp = run_env([cyg.exe, 'record', '-q', '-o', cap, '--', '/bin/sh', '-c', script], env)
    ck.eq(cp.returncode, 0, 'record of a shell writing into the directory, every write '
          'failing in cygprof: the shell is not affected (%r)' % cp.err)
    pl = open(os.path.join(outdir, 'pl')).read() if os.path.exists(os.path.join(outdir, 'pl')) \
        else ''
    ck.check(os.path.basename(args.shim) not in pl and 'libcygprof-cyg' in pl,
             'the program\'s LD_PRELOAD has the runtime, not the fault library (%r)' % pl)
    rows = read_log(log)
    ck.check(len(rows) == 1 and rows[0][1] == 0,
             'record writing outside the directory met no fault point (%r)' % rows)
    # the same run, the same points
    target = os.path.join(outdir, 'c.data')
    counts = []
    for _ in range(2):
        env = shim_env(args, outdir, log)
        cp = run_env([cyg.exe, 'export', '--format=folded', '-o',
                      os.path.join(outdir, 'x.folded'), cap], env)
        ck.eq(cp.returncode, 0, 'export with the library, no fault: exit 0')
        counts += [r[1] for r in read_log(log)]
    ck.check(len(counts) == 2 and counts[0] == counts[1] and counts[0] > 0,
             'an export counts the same fault points every time (%r)' % counts)
    # a fault of a given call only
    env = shim_env(args, outdir, log, 'fsync:1:EIO')
    cp = run_env([cyg.exe, 'export', '--format=folded', '-f', '-o',
                  os.path.join(outdir, 'x.folded'), cap], env)
    ck.check(cp.returncode == 1 and cp.err.strip().endswith(os.strerror(5)),
             'fsync:1:EIO: the export fails on its fsync (%r)' % cp.err)
    ck.eq([r[2] for r in read_log(log)], [1], 'fsync:1:EIO: the fault was injected')
    del target


def test_record(opts):
    def t(ck, cyg, example, args):
        outdir = dirs(cyg)
        out = os.path.join(outdir, 'cap.data')
        prog = args.mem_prog if '--memory' in opts else example
        stdout = None

        def check(ck, cp, what):
            # a fault while the capture is created: the program is not
            # started (as on a full disk); after: it runs on to its end
            started = cp.returncode == 0 or ' ran on to its end, ' in cp.err
            if not started:
                ck.eq(cp.out, '', '%s: failed at the start: the program was not run' % what)
                ck.check(not os.path.exists(out), '%s: failed at the start: no capture' % what)
                return
            ck.check(cp.out == stdout, '%s: the program ran on to its end (stdout %r)' %
                     (what, cp.out))
            if cp.returncode:
                ck.check(re.search(r' at \d+\.\d{3} s; the capture holds (no calls|the calls '
                                   r'up to \d+\.\d{3} s)( and the events up to \d+\.\d{3} s)?; '
                                   r'%s ran on to its end, exit status 0$'
                                   % re.escape(prog), cp.err.strip()),
                         '%s: the line says when, what is kept, how the program ended (%r)'
                         % (what, cp.err))

        first = run([prog])
        stdout = first.out
        tg = Target('record ' + ' '.join(opts),
                    [cyg.exe, 'record', '-q', '-o', out] + list(opts) + ['--', prog],
                    out, ['cap.data'], capture=True, check=check)
        exercise(ck, cyg, args, tg, outdir)
    return t


def test_receive(ck, cyg, example, args):
    outdir = dirs(cyg)
    out = os.path.join(outdir, 'recv.data')
    tok = os.path.join(cyg.workdir, 'token')
    with open(tok, 'wb') as f:
        f.write(b'0123456789abcdef-secret\n')
    os.chmod(tok, 0o600)
    tg = Target('receive', None, out, ['recv.data'], capture=True)

    def go(env):
        print('$ CYGPROF_FAULT=%s cygprof receive -o %s | record --send' %
              (env.get('CYGPROF_FAULT', ''), out))
        p = subprocess.Popen([cyg.exe, 'receive', '--listen', '127.0.0.1:0', '--token-file',
                              tok, '-o', out, '-f'], env=env, stderr=subprocess.PIPE,
                             stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        line = p.stderr.readline().decode()
        m = re.match(r'receive: listening on port (\d+)$', line.strip())
        if not m:
            p.kill()
            p.wait()
            raise Failure('receive did not start: %r' % line)
        rec = run([cyg.exe, 'record', '-q', '--timeline', '--send', '127.0.0.1:' + m.group(1),
                   '--token-file', tok, '--', example], cwd=cyg.workdir)
        rest = p.stderr.read().decode()
        p.wait(timeout=cygtest.TIMEOUT)
        p.stderr.close()
        cp = subprocess.CompletedProcess(p.args, p.returncode)
        cp.out = ''
        cp.err = line + rest
        cp.sender = rec
        return cp

    tg.run = go
    exercise(ck, cyg, args, tg, outdir)


def test_output(kind):
    def t(ck, cyg, example, args):
        ind = os.path.join(cyg.workdir, 'in')
        os.mkdir(ind)
        outdir = dirs(cyg)
        opts = ['--timeline']
        cap = record_capture(cyg, os.path.join(ind, 'in.data'), [example], opts)
        if kind == 'html':
            out = os.path.join(outdir, 'report.html')
            cmd = [cyg.exe, 'html', '-o', out, cap]
        elif kind == 'gprof':
            out = os.path.join(outdir, 'gmon.out')
            cmd = [cyg.exe, 'gprof', '--gmon-out', out, cap]
        else:
            out = os.path.join(outdir, 'out.' + kind)
            cmd = [cyg.exe, 'export', '--format=' + kind, '-o', out, cap]
        tg = Target(' '.join(cmd[1:2] + cmd[2:3]), cmd, out, [os.path.basename(out)])
        exercise(ck, cyg, args, tg, outdir, input_path=cap)
    return t


TESTS = {
    'fault-shim': test_shim,
    'fault-record-timeline': test_record(['--timeline']),
    'fault-record-memory': test_record(['--memory']),
    'fault-receive': test_receive,
    'fault-export-chrome': test_output('chrome'),
    'fault-export-folded': test_output('folded'),
    'fault-export-callgrind': test_output('callgrind'),
    'fault-export-pprof': test_output('pprof'),
    'fault-html': test_output('html'),
    'fault-gprof': test_output('gprof'),
}


def extra(ap):
    ap.add_argument('--mem-prog', required=True)
    ap.add_argument('--shim', required=True)
    ap.add_argument('--sanitize', default='none')


def call(fn, ck, cyg, example, args):
    args.mem_prog = os.path.abspath(args.mem_prog)
    args.shim = os.path.abspath(args.shim)
    if args.sanitize not in ('', 'none'):
        print('SKIP %s: cygprof is built with -fsanitize=%s: the fault library cannot be '
              'preloaded before the sanitizer runtime' % (args.test, args.sanitize))
        sys.exit(cygtest.SKIP)
    try:
        fn(ck, cyg, example, args)
    except Skip as e:
        print('SKIP %s: %s' % (args.test, e))
        sys.exit(cygtest.SKIP)


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'fault', __doc__, extra=extra, call=call))
