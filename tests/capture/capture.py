#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of the capture file (issue 7, points 2, 3, 5, 12, 13, 14).

Usage:
  capture.py --cygprof CYGPROF --example EXAMPLE --test NAME [--build DIR]
             [--data DIR] [--bitflip SCRIPT]

EXAMPLE is build/tests/example-calls-O2 (its exact counts: main 1, a 3,
b 6, c 30).  Exit status: 0 passed, 1 failed, 77 skipped.  Standard library
only.

Tests:
  fd-inherit     the traced program inherits no descriptor of the capture
  keep-output    a record that fails leaves what was at -o as it was
  lock-symlink   readers create no lock file and follow no planted symlink
  full-disk      reading on a full and on a read-only file system; recording
                 onto a full one: one line, no file left (root: tmpfs)
  ulimit-v       info and report under ulimit -v 1000000
  schema1        a schema 1 capture (tests/data/schema1.data) reads exactly
  schema2        a schema 2 capture (tests/data/schema2.data) reads exactly
  schema5        a schema 5 capture (tests/data/schema5.data: stack nodes one a
                 value, before schema 6's compressed blocks) reads exactly
  damaged        a damaged value gives one line naming it
  bitflip        300 random 1-4 bit flips: no silent change, crash or hang
"""

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
TIMEOUT = 100
WANT = {'main': 1, 'a': 3, 'b': 6, 'c': 30}


class Checker:
    def __init__(self):
        self.failures = 0
        self.count = 0

    def check(self, cond, msg):
        self.count += 1
        if not cond:
            self.failures += 1
            print('FAIL: ' + msg)
        return cond

    def eq(self, got, want, msg):
        return self.check(got == want, '%s: expected %r, got %r' % (msg, want, got))


class Result:
    def __init__(self, rc, out, err):
        self.returncode, self.out, self.err = rc, out, err


def run(cmd, preexec=None, timeout=TIMEOUT):
    print('$ ' + ' '.join(cmd))
    try:
        cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, timeout=timeout, preexec_fn=preexec)
    except subprocess.TimeoutExpired:
        return Result(-999, '', 'timeout')
    r = Result(cp.returncode, cp.stdout.decode('utf-8', 'replace'),
               cp.stderr.decode('utf-8', 'replace'))
    if r.returncode:
        print('  -> exit %d\n  stderr: %s' % (r.returncode, r.err.strip()))
    return r


def one_line_error(ck, r, what):
    lines = [l for l in r.err.splitlines() if l.strip()]
    ck.check(r.returncode > 0, '%s: non-zero exit (got %d)' % (what, r.returncode))
    ck.check(len(lines) == 1, '%s: one line on stderr (got %r)' % (what, r.err))


def functions(report_json):
    data = json.loads(report_json)
    return {f['name']: f['calls'] for f in data['functions'] if f['name'] in WANT}


def sanitized(cyg):
    """ASan reserves terabytes of address space: ulimit -v cannot apply."""
    try:
        out = subprocess.run(['ldd', cyg], stdout=subprocess.PIPE).stdout.decode()
    except OSError:
        return False
    return 'libasan' in out or 'libubsan' in out


def test_fd_inherit(ck, a, w):
    """The capture's descriptor (read-write: fd 4 before) reaches neither
    the traced program nor its children."""
    cap = os.path.join(w, 'fds.data')
    r = run([a.cygprof, 'record', '-o', cap, '--', '/bin/sh', '-c',
             'ls -l /proc/self/fd; ls -l /proc/$$/fd'])
    ck.eq(r.returncode, 0, 'record of ls -l /proc/self/fd')
    listing = r.out
    print(listing)
    ck.check('->' in listing, 'the listing shows descriptors')
    ck.check('fds.data' not in listing,
             'no descriptor of the capture (fds.data or its new file) in the traced program')
    r = run([a.cygprof, 'report', '--format=json', cap])
    ck.eq(r.returncode, 0, 'the capture reads')


def test_keep_output(ck, a, w):
    """A record that fails before the program runs leaves -o alone (before:
    unlinked), and no new file is left next to it."""
    keep = os.path.join(w, 'keep.c')
    with open(keep, 'w') as f:
        f.write('int main(void) { return 0; }\n')
    # exists and is executable, but exec fails (ENOENT: no interpreter)
    bad = os.path.join(w, 'bad')
    with open(bad, 'w') as f:
        f.write('#!/nonexistent/interpreter\n')
    os.chmod(bad, 0o755)
    r = run([a.cygprof, 'record', '-o', keep, '--', bad])
    one_line_error(ck, r, 'record of a program whose exec fails')
    ck.check(os.path.exists(keep) and open(keep).read() == 'int main(void) { return 0; }\n',
             'keep.c is left as it was')
    cap = os.path.join(w, 'old.data')
    ck.eq(run([a.cygprof, 'record', '-o', cap, '--', a.example]).returncode, 0, 'record')
    before = open(cap, 'rb').read()
    r = run([a.cygprof, 'record', '-o', cap, '--', bad])
    one_line_error(ck, r, 'record over a capture, exec fails')
    ck.check(open(cap, 'rb').read() == before, 'the earlier capture is left as it was')
    ck.eq(sorted(os.listdir(w)), ['bad', 'keep.c', 'old.data'], 'no other file in the directory')


def test_lock_symlink(ck, a, w):
    """A reader creates no FILE-lock (before: created or rewritten, through
    a symlink planted there)."""
    cap = os.path.join(w, 'cap.data')
    ck.eq(run([a.cygprof, 'record', '-o', cap, '--', a.example]).returncode, 0, 'record')
    ck.eq(sorted(os.listdir(w)), ['cap.data'], 'record leaves no lock file')
    victim = os.path.join(w, 'victim')
    with open(victim, 'w') as f:
        f.write('precious\n')
    os.symlink(victim, cap + '-lock')
    for cmd in (['report', '--format=json'], ['info', '--format=json'], ['report', '--tree']):
        r = run([a.cygprof] + cmd + [cap])
        ck.eq(r.returncode, 0, ' '.join(cmd))
    ck.eq(open(victim).read(), 'precious\n', 'the symlink target is untouched')
    ck.eq(os.readlink(cap + '-lock'), victim, 'the symlink is untouched')
    ck.eq(sorted(os.listdir(w)), ['cap.data', 'cap.data-lock', 'victim'], 'no new file')


def fill(mnt):
    """Fill the file system at mnt; returns the filler's path."""
    path = os.path.join(mnt, 'filler')
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b'\0' * 4096)
    except OSError:
        pass
    os.close(fd)
    return path


def test_full_disk(ck, a, w):
    """A valid capture on a full file system reads (before: 'capture is
    corrupt'), and on a read-only one; recording onto a full one fails in one
    line naming it and leaves nothing (before: SIGBUS and a stray lock file)."""
    if os.geteuid() != 0:
        print('SKIP: needs root to mount a small tmpfs')
        sys.exit(SKIP)
    mnt = os.path.join(w, 'mnt')
    os.mkdir(mnt)
    good = os.path.join(w, 'good.data')
    ck.eq(run([a.cygprof, 'record', '--timeline', '-o', good, '--', a.example]).returncode, 0,
          'record')
    want = run([a.cygprof, 'report', '--format=json', good]).out
    if run(['mount', '-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]).returncode:
        print('SKIP: cannot mount a tmpfs')
        sys.exit(SKIP)
    try:
        cap = os.path.join(mnt, 'cap.data')
        shutil.copy(good, cap)
        fill(mnt)
        st = os.statvfs(mnt)
        ck.check(st.f_bavail == 0, 'the file system is full (%d blocks free)' % st.f_bavail)
        r = run([a.cygprof, 'report', '--format=json', cap])
        ck.eq(r.returncode, 0, 'report on a full file system')
        ck.check(r.out.replace(cap, good) == want, 'the same report as elsewhere')
        ck.eq(functions(r.out) if r.returncode == 0 else {}, WANT, 'exact counts')
        for cmd in (['info'], ['replay']):
            ck.eq(run([a.cygprof] + cmd + [cap]).returncode, 0, '%s on a full file system' % cmd[0])
        files = sorted(os.listdir(mnt))
        r = run([a.cygprof, 'record', '-o', os.path.join(mnt, 'new.data'), '--', a.example])
        one_line_error(ck, r, 'record onto a full file system')
        ck.check('no space left on device' in r.err, 'the error says the disk is full (got %r)' % r.err.strip())
        ck.check(r.returncode > 0 and r.returncode < 128, 'no signal (got %d)' % r.returncode)
        ck.eq(sorted(os.listdir(mnt)), files, 'no file left on the full file system')
        # read-only
        ck.eq(run(['mount', '-o', 'remount,ro', mnt]).returncode, 0, 'remount read-only')
        r = run([a.cygprof, 'report', '--format=json', cap])
        ck.eq(r.returncode, 0, 'report on a read-only file system')
        ck.check(r.out.replace(cap, good) == want, 'the same report as elsewhere')
    finally:
        run(['umount', mnt])


def test_ulimit_v(ck, a, w):
    """info and report under ulimit -v 1000000 (before: every capture needed
    64 GiB of address space to read)."""
    if sanitized(a.cygprof):
        print('SKIP: a sanitized cygprof cannot run under ulimit -v')
        sys.exit(SKIP)
    cap = os.path.join(w, 'cap.data')
    ck.eq(run([a.cygprof, 'record', '--timeline', '-o', cap, '--', a.example]).returncode, 0,
          'record')

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (1000000 * 1024, 1000000 * 1024))

    r = run([a.cygprof, 'info', cap], preexec=limit)
    ck.eq(r.returncode, 0, 'info under ulimit -v 1000000')
    r = run([a.cygprof, 'report', '--format=json', cap], preexec=limit)
    ck.eq(r.returncode, 0, 'report under ulimit -v 1000000')
    if r.returncode == 0:
        ck.eq(functions(r.out), WANT, 'exact counts')


def check_old(ck, a, w, name, schema):
    """A capture written by an older cygprof (tests/data/NAME: `record
    --timeline --memory` of examples/mem-basic.c at -O0) reads exactly."""
    cap = os.path.join(w, name)
    shutil.copy(os.path.join(a.data, name), cap)
    r = run([a.cygprof, 'report', '--format=json', cap])
    ck.eq(r.returncode, 0, 'report of a schema %d capture' % schema)
    if r.returncode == 0:
        calls = {f['name']: f['calls'] for f in json.loads(r.out)['functions']}
        ck.eq(sum(calls.values()), 65, 'calls of mem-basic at -O0')
    r = run([a.cygprof, 'memory', '--format=json', cap])
    ck.eq(r.returncode, 0, 'memory of a schema %d capture' % schema)
    peak = None
    if r.returncode == 0:
        t = json.loads(r.out)['totals']
        peak = t['peak_bytes']
        ck.eq((t['allocations'], t['frees'], t['leaked_allocations'], t['leaked_bytes'],
               t['allocated_bytes']), (121, 116, 5, 385, 1063661), 'memory totals')
    r = run([a.cygprof, 'replay', cap])
    ck.eq(r.returncode, 0, 'replay of a schema %d capture' % schema)
    # no counters DBs: the heap derived from its memory events, nothing else
    r = run([a.cygprof, 'counters', '--format=json', cap])
    ck.eq(r.returncode, 0, 'counters of a schema %d capture' % schema)
    if r.returncode == 0:
        ctr = json.loads(r.out)['counters']
        ck.eq(sorted(c['name'] for c in ctr), ['heap/live_blocks', 'heap/live_bytes'],
              'only the derived heap counters')
        heap = [v for c in ctr if c['name'] == 'heap/live_bytes' for _, v in c['samples']]
        ck.eq(max(heap) if heap else None, peak, 'heap/live_bytes peaks at memory\'s peak')
    r = run([a.cygprof, 'info', '--format=json', cap])
    ck.eq(json.loads(r.out).get('schema') if r.returncode == 0 else None, schema,
          'info: schema %d' % schema)
    ck.eq(sorted(os.listdir(w)), [name], 'no lock file')


def test_schema1(ck, a, w):
    """A capture written by the cygprof before schema 2 reads exactly."""
    check_old(ck, a, w, 'schema1.data', 1)


def test_schema2(ck, a, w):
    """A capture written by the cygprof before schema 3 (no counters DBs)
    reads exactly."""
    check_old(ck, a, w, 'schema2.data', 2)


def test_schema5(ck, a, w):
    """A capture written by the cygprof before schema 6 (its stack nodes one
    a value, not in compressed blocks) reads exactly."""
    check_old(ck, a, w, 'schema5.data', 5)
    # its memory events name their stacks: the stash reads whole
    cap = os.path.join(w, 'schema5.data')
    r = run([a.cygprof, 'memory', '--format=json', cap])
    ck.eq(r.returncode, 0, 'memory of a schema 5 capture')
    if r.returncode == 0:
        fns = {f['name']: (f['self_allocations'], f['self_bytes'])
               for f in json.loads(r.out)['functions']}
        ck.eq((fns.get('peak_phase'), fns.get('grow')), ((16, 1048576), (8, 8160)),
              'allocations by their stack\'s function (mem-basic: peak_phase 16 of 64 KiB, '
              'grow 8 reallocs)')


def lmdb_file_with(path, edit):
    """Rewrite one byte region of the capture: edit(bytearray)."""
    with open(path, 'rb') as f:
        b = bytearray(f.read())
    edit(b)
    with open(path, 'wb') as f:
        f.write(b)


def test_damaged(ck, a, w):
    """A damaged capture: one line naming what is damaged, never a changed
    report with exit 0 (schema 1 had no checksum: a changed thread name or
    count was printed)."""
    cap = os.path.join(w, 'cap.data')
    ck.eq(run([a.cygprof, 'record', '-o', cap, '--', a.example]).returncode, 0, 'record')
    orig = open(cap, 'rb').read()
    # the thread record holds the thread's name (comm): the example's name
    name = os.path.basename(a.example)[:15].encode()
    at = orig.find(name + b'\0')
    ck.check(at > 0, 'the thread name is in the file')
    lmdb_file_with(cap, lambda b: b.__setitem__(at, b[at] ^ 1))
    r = run([a.cygprof, 'report', '--format=json', cap])
    one_line_error(ck, r, 'report of a damaged thread record')
    ck.check('thread 0 record: checksum mismatch' in r.err, 'the error names the record')
    r = run([a.cygprof, 'info', cap])
    one_line_error(ck, r, 'info of a damaged thread record')


def test_bitflip(ck, a, w):
    """300 trials of 1-4 random bit flips on plain, timeline, memory and C++
    captures (100 with a sanitized cygprof, which starts 4 times slower): no
    silent change, crash or hang (bench/bitflip.py)."""
    flips = '100' if sanitized(a.cygprof) else '300'
    r = run([sys.executable, a.bitflip, '--cygprof', a.cygprof, '--build', a.build,
             '--flips', flips, '--seed', '7', '--tmp', w, '--fail-on-silent'], timeout=600)
    print(r.out)
    ck.eq(r.returncode, 0, 'bitflip: no silent change, crash or hang')


TESTS = {
    'fd-inherit': test_fd_inherit,
    'keep-output': test_keep_output,
    'lock-symlink': test_lock_symlink,
    'full-disk': test_full_disk,
    'ulimit-v': test_ulimit_v,
    'schema1': test_schema1,
    'schema2': test_schema2,
    'schema5': test_schema5,
    'damaged': test_damaged,
    'bitflip': test_bitflip,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--example', required=True)
    ap.add_argument('--test', required=True, choices=sorted(TESTS))
    ap.add_argument('--build', default='')
    ap.add_argument('--data', default='')
    ap.add_argument('--bitflip', default='')
    a = ap.parse_args()
    a.cygprof = os.path.abspath(a.cygprof)
    a.example = os.path.abspath(a.example)
    ck = Checker()
    w = tempfile.mkdtemp(prefix='cygprof-capture-%s-' % a.test)
    try:
        TESTS[a.test](ck, a, w)
    finally:
        shutil.rmtree(w, ignore_errors=True)
    print('%d passed, %d failed' % (ck.count - ck.failures, ck.failures))
    return 1 if ck.failures else 0


if __name__ == '__main__':
    sys.exit(main())
