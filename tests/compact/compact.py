#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Captures without free pages (issue 31, point 8): record, receive and top
-o compact the capture they sealed (cygprof_capture_compact()).

Usage:
  compact.py --cygprof CYGPROF --example LONGRUN --test NAME --tool TOOL
             --mem PROG

LONGRUN is build/tests/example-longrun-O2 (main 1, round_ ROUNDS, work
ROUNDS*K), PROG an instrumented examples/mem-basic.c, TOOL compact-tool
(compact-tool.c: the free pages of a file; a capture copied, reopened,
sealed and compacted).  The recordings take a checkpoint every 20 ms
(CYGPROF_CHECKPOINT_MS), so that their trees and open blocks are written
again many times over: the pages freed then are what compaction drops.

Tests:
  compact-record   two record --timeline of one run: no free page in
                   either, sizes within 10%, exact counts; with
                   CYGPROF_CAPTURE_COMPACT=0 the free pages stay and the
                   file is larger
  compact-same     a capture recorded with its free pages and the same
                   capture compacted: info (but for its size), report
                   and memory in JSON and replay are equal, the file shrank and
                   has no free page (a --timeline run, a --timeline
                   --memory run; replay's text)
  compact-receive  record --send to receive -o: the received capture has no
                   free page and reads exactly
  compact-top      top -o: the capture kept has no free page
"""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run  # noqa: E402

ROUNDS, K = 8, 2000
WANT = {'main': 1, 'round_': ROUNDS, 'work': ROUNDS * K}


def env_with(**kw):
    env = dict(os.environ)
    env['CYGPROF_CHECKPOINT_MS'] = '20'
    env.pop('CYGPROF_CAPTURE_COMPACT', None)
    env.update(kw)
    return env


def run_env(cmd, env, cwd=None):
    print('$ %s' % ' '.join(cmd))
    cp = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL, timeout=cygtest.TIMEOUT)
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    if cp.returncode:
        print('  -> exit %d: %s' % (cp.returncode, cp.err.strip()))
    return cp


def free_pages(args, path):
    cp = run([args.tool, 'free-pages', path])
    if cp.returncode:
        raise Failure('compact-tool free-pages %s: %s' % (path, cp.err.strip()))
    return int(cp.out)


def calls(cyg, path):
    data, _ = cyg.report_json(path, cygtest.Checker())
    return {f['name']: f['calls'] for f in data['functions'] if f['name'] in WANT}


def record(ck, cyg, args, out, opts=(), env=None):
    pidfile = os.path.join(cyg.workdir, 'longrun.pid')
    cp = run_env([cyg.exe, 'record', '-o', out] + list(opts) +
                 ['--', args.example, pidfile, str(ROUNDS), str(K)], env or env_with(),
                 cwd=cyg.workdir)
    if cp.returncode:
        raise Failure('record %s failed: %s' % (' '.join(opts), cp.err.strip()))
    ck.check('not compacted' not in cp.err, 'record: no warning (%r)' % cp.err)
    m = re.search(r', ([\d.]+ [KMG]?B): %s$' % re.escape(out), cp.err.strip())
    ck.check(m is not None, 'record says the size of the capture (%r)' % cp.err)
    return cp


def test_record(ck, cyg, example, args):
    a = os.path.join(cyg.workdir, 'a.data')
    b = os.path.join(cyg.workdir, 'b.data')
    c = os.path.join(cyg.workdir, 'c.data')
    record(ck, cyg, args, a, ['--timeline'])
    record(ck, cyg, args, b, ['--timeline'])
    record(ck, cyg, args, c, ['--timeline'], env_with(CYGPROF_CAPTURE_COMPACT='0'))
    sa, sb, sc = (os.path.getsize(p) for p in (a, b, c))
    print('sizes: %d %d, with free pages %d' % (sa, sb, sc))
    ck.eq(free_pages(args, a), 0, 'the first recording has no free page')
    ck.eq(free_pages(args, b), 0, 'the second recording has no free page')
    ck.check(abs(sa - sb) < 0.1 * max(sa, sb),
             'two recordings of one run differ by less than 10%% (%d, %d)' % (sa, sb))
    ck.check(free_pages(args, c) > 0, 'CYGPROF_CAPTURE_COMPACT=0: the free pages stay')
    ck.check(sc > max(sa, sb), 'CYGPROF_CAPTURE_COMPACT=0: the file is larger (%d)' % sc)
    for p in (a, b, c):
        ck.eq(calls(cyg, p), WANT, 'exact counts in %s' % os.path.basename(p))


def outputs(cyg, path, memory):
    """What the readers say of a capture, in JSON (info without its file
    name and size)."""
    got = {}
    info = cygtest.info_json(cygtest.Checker(), cyg, path)
    for k in ('file', 'size'):
        info.pop(k, None)
    got['info'] = info
    for cmd in (['report', '--format=json'], ['report', '--format=json', '--threads'],
                ['replay']) + ((['memory', '--format=json'],) if memory else ()):
        cp = run([cyg.exe] + cmd + [path])
        if cp.returncode:
            raise Failure('%s of %s failed: %s' % (' '.join(cmd), path, cp.err.strip()))
        got[' '.join(cmd)] = json.loads(cp.out) if '--format=json' in cmd else cp.out
    return got


def test_same(ck, cyg, example, args):
    for name, opts, prog, memory in (
            ('timeline', ['--timeline'], None, False),
            ('timeline-memory', ['--timeline', '--memory'], args.mem, True)):
        a = os.path.join(cyg.workdir, name + '.data')
        b = os.path.join(cyg.workdir, name + '-compacted.data')
        env = env_with(CYGPROF_CAPTURE_COMPACT='0')
        if prog:
            cp = run_env([cyg.exe, 'record', '-o', a] + opts + ['--', prog], env,
                         cwd=cyg.workdir)
            if cp.returncode:
                raise Failure('record %s failed: %s' % (' '.join(opts), cp.err.strip()))
        else:
            record(ck, cyg, args, a, opts, env)
        fa = free_pages(args, a)
        cp = run([args.tool, 'copy', a, b])
        if cp.returncode:
            raise Failure('compact-tool copy: %s' % cp.err.strip())
        saved = int(cp.out)
        sa, sb = os.path.getsize(a), os.path.getsize(b)
        print('%s: %d bytes, %d free pages -> %d bytes (%d saved)' % (name, sa, fa, sb, saved))
        ck.eq(free_pages(args, b), 0, '%s: no free page after compaction' % name)
        if not prog:
            ck.check(fa > 0, '%s: the capture recorded had free pages (%d)' % (name, fa))
            ck.check(saved > 0 and sb < sa, '%s: the file shrank (%d -> %d)' % (name, sa, sb))
        oa, ob = outputs(cyg, a, memory), outputs(cyg, b, memory)
        for k in oa:
            ck.check(oa[k] == ob[k], '%s: %s is the same before and after compaction'
                     % (name, k))
        if not prog:
            ck.eq(calls(cyg, b), WANT, '%s: exact counts after compaction' % name)


def test_receive(ck, cyg, example, args):
    out = os.path.join(cyg.workdir, 'recv.data')
    tok = os.path.join(cyg.workdir, 'token')
    with open(tok, 'wb') as f:
        f.write(b'0123456789abcdef-secret\n')
    os.chmod(tok, 0o600)
    env = env_with()
    print('$ cygprof receive -o %s' % out)
    p = subprocess.Popen([cyg.exe, 'receive', '--listen', '127.0.0.1:0', '--token-file', tok,
                          '-o', out], env=env, stderr=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        line = p.stderr.readline().decode()
        m = re.match(r'receive: listening on port (\d+)$', line.strip())
        if not m:
            raise Failure('receive did not start: %r' % line)
        pidfile = os.path.join(cyg.workdir, 'longrun.pid')
        rec = run_env([cyg.exe, 'record', '--timeline', '--send', '127.0.0.1:' + m.group(1),
                       '--token-file', tok, '--', args.example, pidfile, str(ROUNDS), str(K)],
                      env, cwd=cyg.workdir)
        rest = p.stderr.read().decode()
        p.wait(timeout=cygtest.TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stderr.close()
    ck.eq(rec.returncode, 0, 'record --send')
    ck.eq(p.returncode, 0, 'receive (%r)' % rest)
    ck.check('not compacted' not in rest, 'receive: no warning (%r)' % rest)
    ck.eq(free_pages(args, out), 0, 'the received capture has no free page')
    ck.eq(calls(cyg, out), WANT, 'the received capture: exact counts')


def test_top(ck, cyg, example, args):
    out = os.path.join(cyg.workdir, 'top.data')
    pidfile = os.path.join(cyg.workdir, 'longrun.pid')
    cp = run_env([cyg.exe, 'top', '--format=json', '-d', '0.1', '-o', out, '--', args.example,
                  pidfile, str(ROUNDS), str(K)], env_with(), cwd=cyg.workdir)
    ck.eq(cp.returncode, 0, 'top -o')
    ck.check('not compacted' not in cp.err, 'top: no warning (%r)' % cp.err)
    ck.eq(free_pages(args, out), 0, 'the capture top kept has no free page')
    ck.eq(calls(cyg, out), WANT, 'top -o: exact counts')


TESTS = {
    'compact-record': test_record,
    'compact-same': test_same,
    'compact-receive': test_receive,
    'compact-top': test_top,
}


def extra(ap):
    ap.add_argument('--tool', required=True)
    ap.add_argument('--mem', required=True)


def call(fn, ck, cyg, example, args):
    args.example = example
    args.tool = os.path.abspath(args.tool)
    args.mem = os.path.abspath(args.mem)
    fn(ck, cyg, example, args)


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'compact', __doc__, extra=extra, call=call))
