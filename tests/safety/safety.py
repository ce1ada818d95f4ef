#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of what cygprof must never do (issue 7): destroy a file
that is not its own, follow a planted link, crash on a full disk, print
invalid JSON, take a number it cannot use, or hide a limit it hit.

Usage:
  safety.py --cygprof CYGPROF --example EXAMPLE --test NAME
            [--limits-capture HELPER] [--skip REASON] [-v]

Tests:
  output-record   record -o replaces only an earlier capture: a source file,
                  the program itself (also through a hard link), a FIFO, a
                  device node, a directory and a symbolic link are refused
                  with one line and left as they were; -f replaces a regular
                  file or a link (the link itself), never the rest
  output-gmon     gprof --gmon-out: the same rule for gmon.out files; a link
                  planted at FILE or FILE.PID is never followed, a FIFO never
                  opened; no temporary file is left behind
  disk-full-empty record onto a file system that is already full: one line
                  "no space left on device", exit 1, no file, no lock file,
                  the program not run; gprof --gmon-out onto it: one line,
                  no file
  read-full-disk  a valid capture on a full file system and on a read-only
                  one: report, info, memory, gprof, annotate and replay print
                  what they print elsewhere
  json-utf8       a program whose file name, arguments, function name and
                  source path hold invalid UTF-8 and control bytes: every
                  --format=json output decodes strictly as UTF-8 and parses
  options         every number an option takes is range-checked: bad values
                  give one line naming the option and exit 2; the edges of
                  the ranges are accepted
  no-instrument   a program without instrumented functions gets a one-line
                  hint after recording; --memory of such a program that
                  allocates does not
  limits          a capture that hit every limit (written by the helper
                  limits-capture): every command warns once per limit with
                  its count, JSON outputs carry "limits", and the signal and
                  raw-clone thread flags are shown

Helpers come from tests/lib/cygtest.py.  Exit status: 0 passed, 1 failed, 77 skipped.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, describe_status, SKIP  # noqa: E402

TIMEOUT = 60


def shown(a):
    """A command-line argument (str or bytes) printable on any terminal:
    bytes outside printable ASCII as \\xNN."""
    b = a if isinstance(a, bytes) else os.fsencode(a)
    return ''.join(chr(c) if 32 <= c < 127 else '\\x%02x' % c for c in b)


def run(cmd, cwd=None, timeout=TIMEOUT):
    """cygtest.run for arguments that may hold any byte (str with surrogate
    escapes, or bytes)."""
    print('$ ' + ' '.join(shown(a) for a in cmd))
    try:
        cp = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise Failure('timed out after %ds: %s' % (timeout, ' '.join(shown(a) for a in cmd))) \
            from e
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    if cygtest.VERBOSE or cp.returncode != 0:
        print('  -> exit %d' % cp.returncode)
        for line in cp.err.splitlines()[:20]:
            print('  stderr: ' + shown(line))
    return cp


def one_error(ck, cp, what, status=1, pattern=None):
    """Exactly one stderr line 'cygprof: ...' (matching pattern), the exit
    status given, no death by signal."""
    ck.eq(describe_status(cp.returncode), describe_status(status), '%s: exit status' % what)
    lines = cp.err.splitlines()
    ok = len(lines) == 1 and lines[0].startswith('cygprof: ')
    if ok and pattern:
        ok = re.search(pattern, lines[0]) is not None
    ck.check(ok, '%s: one stderr line "cygprof: ...%s" (got %r)' %
             (what, (' /%s/' % pattern) if pattern else '', lines))


def snapshot(path):
    """What is at path, without following a link: type, inode, content."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    content = None
    if stat.S_ISREG(st.st_mode):
        with open(path, 'rb') as f:
            content = f.read()
    elif stat.S_ISLNK(st.st_mode):
        content = os.readlink(path)
    return (stat.S_IFMT(st.st_mode), st.st_ino, st.st_rdev, content)


def cc():
    return os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')


def build(ck, src_text, out, flags, src_path=None):
    src = src_path or out + '.c'
    with open(src, 'wb') as f:
        f.write(src_text if isinstance(src_text, bytes) else src_text.encode())
    cp = run([cc(), '-O1', '-g', '-o', out, src] + flags)
    if cp.returncode != 0:
        raise Failure('cannot build %s: %s' % (shown(out), cp.err.strip()[:300]))


# --------------------------------------------------------------------------
# record -o


def test_output_record(ck, cyg, example):
    d = cyg.workdir
    marker = os.path.join(d, 'marker')
    marker_prog = ['/bin/sh', '-c', 'echo ran > "$0"', marker]

    def refused(what, path, prog=None, opts=(), pattern=None):
        if os.path.exists(marker):
            os.unlink(marker)
        before = snapshot(path)
        cp = run([cyg.exe, 'record', '-q', '-o', path] + list(opts) + ['--'] +
                 (prog or marker_prog), timeout=15)
        one_error(ck, cp, what, 1, pattern)
        ck.check(snapshot(path) == before, '%s: left as it was' % what)
        if not prog:
            ck.check(not os.path.exists(marker), '%s: the program was not run' % what)
        ck.check(not os.path.lexists(path + '-lock') or path.startswith('/dev/'),
                 '%s: no lock file made next to it' % what)

    def replaced(what, path, opts=()):
        cp = run([cyg.exe, 'record', '-q', '-o', path] + list(opts) + ['--', example])
        ck.eq(describe_status(cp.returncode), 'exit 0', '%s: record exit status' % what)
        ck.eq(cp.err, '', '%s: nothing on stderr' % what)
        st = os.lstat(path)
        ck.check(stat.S_ISREG(st.st_mode), '%s: a regular file now' % what)
        cp = run([cyg.exe, 'report', '--format=json', path])
        ck.eq(cp.returncode, 0, '%s: the new capture reads' % what)
        if cp.returncode == 0:
            calls = {f['name']: f['calls'] for f in json.loads(cp.out)['functions']}
            ck.eq(calls.get('c'), 30, '%s: the new capture holds the recording' % what)

    # a source file
    src = os.path.join(d, 'keep.c')
    with open(src, 'w') as f:
        f.write('int keep(void) { return 42; }\n')
    refused('-o keep.c', src, pattern=r'keep\.c: exists and is not a cygprof capture.*-f')

    # the program being recorded, by its path, through a hard link, with -f
    prog = os.path.join(d, 'prog')
    shutil.copy(example, prog)
    refused('-o ./prog -- ./prog', prog, prog=[prog],
            pattern=r'is the program being recorded')
    refused('-o ./prog -f -- ./prog', prog, prog=[prog], opts=['-f'],
            pattern=r'is the program being recorded.*even with -f')
    if not os.path.exists(prog):
        raise Failure('record -o ./prog -- ./prog deleted the program')
    hard = os.path.join(d, 'hardlink')
    os.link(prog, hard)
    refused('-o HARDLINK -f -- ./prog (a hard link to the program)', hard, prog=[prog],
            opts=['-f'], pattern=r'is the program being recorded')
    ck.check(os.access(prog, os.X_OK), 'the program is still there and executable')

    # a FIFO (opening it would block), with and without -f
    fifo = os.path.join(d, 'fifo')
    os.mkfifo(fifo)
    refused('-o FIFO', fifo, pattern=r'is a FIFO')
    refused('-o FIFO -f', fifo, opts=['-f'], pattern=r'is a FIFO.*even with -f')

    # a device node: a private copy of /dev/null as root (never the
    # system's own: the code before this test replaced it), else /dev/null
    if os.geteuid() == 0:
        dev = os.path.join(d, 'null')
        os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    else:
        dev = '/dev/null'
    refused('-o a character device', dev, pattern=r'is a character device')
    refused('-o a character device -f', dev, opts=['-f'], pattern=r'is a character device')

    # a directory, with -f
    adir = os.path.join(d, 'adir')
    os.mkdir(adir)
    refused('-o DIR -f', adir, opts=['-f'], pattern=r'is a directory')

    # a symbolic link to a precious file, and to an earlier capture: never
    # followed; -f replaces the link itself
    victim = os.path.join(d, 'victim.txt')
    with open(victim, 'w') as f:
        f.write('precious\n')
    link = os.path.join(d, 'link.data')
    os.symlink(victim, link)
    refused('-o LINK', link, pattern=r'is a symbolic link')
    replaced('-o LINK -f', link, ['-f'])
    with open(victim, 'rb') as f:
        ck.check(f.read() == b'precious\n', '-o LINK -f: the link\'s target is untouched')

    # an earlier capture is replaced without -f, even a damaged one
    cap = os.path.join(d, 'earlier.data')
    replaced('-o NEW', cap)
    replaced('-o EARLIER-CAPTURE', cap)
    size = os.path.getsize(cap)
    with open(cap, 'r+b') as f:
        f.truncate(size // 2)
    replaced('-o TRUNCATED-CAPTURE', cap)

    # a file that only looks like LMDB is not a capture
    fake = os.path.join(d, 'fake.mdb')
    with open(fake, 'wb') as f:
        f.write(b'\0' * 16 + (0xBEEFC0DE).to_bytes(4, 'little') + b'\0' * 8172)
    refused('-o a non-cygprof file with the LMDB magic', fake,
            pattern=r'exists and is not a cygprof capture')

    # -f replaces a regular file
    replaced('-o keep.c -f', src, ['-f'])


# --------------------------------------------------------------------------
# gprof --gmon-out


def no_temporaries(ck, d, what):
    left = [n for n in os.listdir(d) if n.startswith('.cygprof-')]
    ck.eq(left, [], '%s: no temporary file left in the directory' % what)


def test_output_gmon(ck, cyg, example):
    d = cyg.workdir
    cap = os.path.join(d, 'c.data')
    cp = cyg.record(cap, [example])
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    gmon = os.path.join(d, 'gmon.out')

    def refused(what, path, opts=(), pattern=None, target=None):
        before = snapshot(path)
        tb = snapshot(target) if target else None
        cp = run([cyg.exe, 'gprof', '--gmon-out', path] + list(opts) + [cap], timeout=15)
        one_error(ck, cp, what, 1, pattern)
        ck.check(snapshot(path) == before, '%s: left as it was' % what)
        if target:
            ck.check(snapshot(target) == tb, '%s: the link\'s target untouched' % what)
        no_temporaries(ck, os.path.dirname(path), what)

    def written(what, path, opts=()):
        cp = run([cyg.exe, 'gprof', '--gmon-out', path] + list(opts) + [cap], timeout=15)
        ck.eq(describe_status(cp.returncode), 'exit 0', '%s: exit status' % what)
        st = os.lstat(path)
        ck.check(stat.S_ISREG(st.st_mode), '%s: a regular file' % what)
        mask = os.umask(0)
        os.umask(mask)
        ck.eq(oct(st.st_mode & 0o777), oct(0o666 & ~mask),
              '%s: the mode of a new file (0666 & ~umask)' % what)
        with open(path, 'rb') as f:
            ck.eq(f.read(4), b'gmon', '%s: a gmon.out file' % what)
        no_temporaries(ck, os.path.dirname(path), what)

    victim = os.path.join(d, 'victim')
    with open(victim, 'w') as f:
        f.write('precious\n')
    os.symlink(victim, gmon)
    refused('planted link at FILE', gmon, pattern=r'is a symbolic link', target=victim)
    written('planted link at FILE, -f', gmon, ['-f'])
    with open(victim, 'rb') as f:
        ck.check(f.read() == b'precious\n', 'planted link, -f: the target is untouched')
    written('an earlier gmon.out', gmon)

    os.unlink(gmon)
    os.mkfifo(gmon)
    refused('FIFO at FILE', gmon, pattern=r'is a FIFO')
    refused('FIFO at FILE, -f', gmon, ['-f'], pattern=r'is a FIFO')
    os.unlink(gmon)
    os.mkdir(gmon)
    refused('directory at FILE, -f', gmon, ['-f'], pattern=r'is a directory')
    os.rmdir(gmon)

    src = os.path.join(d, 'main.c')
    with open(src, 'w') as f:
        f.write('int main(void) { return 0; }\n')
    refused('a source file at FILE', src, pattern=r'exists and is not a gmon\.out file')
    written('a source file at FILE, -f', src, ['-f'])

    # FILE.PID: two executables in one capture; a link planted at the
    # second name refuses the whole command before any file is written
    prog2 = os.path.join(d, 'second-prog')
    shutil.copy(example, prog2)
    cap2 = os.path.join(d, 'two.data')
    cp = cyg.record(cap2, ['/bin/sh', '-c', '"$0"; "$1"', example, prog2])
    if cp.returncode != 0:
        raise Failure('record of two programs failed: %s' % cp.err.strip())
    out = os.path.join(d, 'two', 'gmon.out')
    os.mkdir(os.path.dirname(out))
    cp = run([cyg.exe, 'gprof', '--gmon-out', out, cap2])
    ck.eq(cp.returncode, 0, 'two executables: exit status')
    names = sorted(os.listdir(os.path.dirname(out)))
    ck.eq(len(names), 2, 'two executables: two files (%s)' % names)
    second = [n for n in names if n != 'gmon.out']
    if len(names) == 2 and second:
        pid_file = os.path.join(os.path.dirname(out), second[0])
        os.unlink(pid_file)
        os.symlink(victim, pid_file)
        os.unlink(out)
        before = snapshot(victim)
        cp = run([cyg.exe, 'gprof', '--gmon-out', out, cap2])
        # /bin/sh, not instrumented, gets a line saying it has no file
        cp.err = '\n'.join(ln for ln in cp.err.splitlines()
                           if not re.match(r'cygprof: no function of .* recorded', ln))
        one_error(ck, cp, 'link planted at FILE.PID', 1, r'is a symbolic link')
        ck.eq(snapshot(victim), before, 'link planted at FILE.PID: the target untouched')
        ck.check(not os.path.lexists(out), 'link planted at FILE.PID: FILE not written either')
        no_temporaries(ck, os.path.dirname(out), 'link planted at FILE.PID')


# --------------------------------------------------------------------------
# full and read-only file systems


def mount_tmpfs(ck, mnt, size, ro=False):
    os.makedirs(mnt, exist_ok=True)
    if os.geteuid() != 0 or not shutil.which('mount'):
        print('SKIP: needs root to mount a small tmpfs')
        sys.exit(SKIP)
    cp = run(['mount', '-t', 'tmpfs', '-o', 'size=%s%s' % (size, ',ro' if ro else ''),
              'tmpfs', mnt])
    if cp.returncode != 0:
        print('SKIP: mount is not permitted here: %s' % cp.err.strip())
        sys.exit(SKIP)


def fill(path):
    """Fill the file system of path until nothing more fits."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for chunk in (65536, 4096, 1):
        try:
            while True:
                os.write(fd, b'\0' * chunk)
        except OSError:
            pass
    os.close(fd)


def test_disk_full_empty(ck, cyg, example):
    d = cyg.workdir
    mnt = os.path.join(d, 'full')
    mount_tmpfs(ck, mnt, '256k')
    try:
        fill(os.path.join(mnt, 'filler'))
        marker = os.path.join(d, 'marker')
        target = os.path.join(mnt, 'x.data')
        for opts in ([], ['--timeline'], ['--memory']):
            what = 'record %s onto a full file system' % ' '.join(opts)
            cp = run([cyg.exe, 'record', '-o', target] + opts +
                     ['--', '/bin/sh', '-c', 'echo ran > "$0"', marker])
            one_error(ck, cp, what, 1, r'^cygprof: record: %s: no space left on device$' %
                      re.escape(target))
            ck.eq(sorted(os.listdir(mnt)), ['filler'], '%s: no file left (no capture, no lock)'
                  % what)
            ck.check(not os.path.exists(marker), '%s: the program was not run' % what)
        # gprof --gmon-out onto it: one line, no partial or temporary file
        cap = os.path.join(d, 'c.data')
        cp = cyg.record(cap, [example])
        if cp.returncode != 0:
            raise Failure('record failed: %s' % cp.err.strip())
        out = os.path.join(mnt, 'gmon.out')
        cp = run([cyg.exe, 'gprof', '--gmon-out', out, cap])
        one_error(ck, cp, 'gprof --gmon-out onto a full file system', 1,
                  r'^cygprof: gprof: %s: No space left on device$' % re.escape(out))
        ck.eq(sorted(os.listdir(mnt)), ['filler'], 'gprof --gmon-out onto a full file system: '
              'no file left')
    finally:
        run(['umount', mnt])


def outputs(cyg, capture, cwd):
    """What the reading commands print for a capture (exit status, stdout)."""
    res = {}
    for cmd in (['report'], ['report', '--format=json'], ['info', '--format=json'],
                ['memory', '--format=json'], ['gprof', '-b'], ['annotate', '--format=json'],
                ['replay']):
        cp = run([cyg.exe] + cmd + [os.path.basename(capture)], cwd=cwd)
        out = cp.out
        if cmd[0] == 'info':
            # the file's name is part of info; the rest must be the same
            out = re.sub(r'"file": "[^"]*"', '"file": ""', out)
        res[' '.join(cmd)] = (cp.returncode, out, cp.err)
    return res


def test_read_full_disk(ck, cyg, example):
    d = cyg.workdir
    cap = os.path.join(d, 'c.data')
    cp = cyg.record(cap, [example], ['--timeline', '--memory'])
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    # the reference: read where a lock file could be made
    ref_dir = os.path.join(d, 'ref')
    os.mkdir(ref_dir)
    shutil.copy(cap, ref_dir)
    want = outputs(cyg, os.path.join(ref_dir, 'c.data'), ref_dir)
    for k, (rc, out, err) in want.items():
        ck.eq(rc, 0, 'reference %s: exit status' % k)

    mnt = os.path.join(d, 'full')
    mount_tmpfs(ck, mnt, '512k')
    try:
        shutil.copy(cap, mnt)
        fill(os.path.join(mnt, 'filler'))
        got = outputs(cyg, os.path.join(mnt, 'c.data'), mnt)
        for k in want:
            ck.eq(got[k][0], 0, 'full file system: %s exit status (stderr %r)' %
                  (k, got[k][2][:200]))
            ck.check(got[k][1] == want[k][1], 'full file system: %s prints the same' % k)
        ck.eq(sorted(os.listdir(mnt)), ['c.data', 'filler'],
              'full file system: the readers made no file')
    finally:
        run(['umount', mnt])

    ro = os.path.join(d, 'ro')
    mount_tmpfs(ck, ro, '512k')
    try:
        shutil.copy(cap, ro)
        cp = run(['mount', '-o', 'remount,ro', ro])
        if cp.returncode != 0:
            raise Failure('cannot remount read-only: %s' % cp.err.strip())
        got = outputs(cyg, os.path.join(ro, 'c.data'), ro)
        for k in want:
            ck.eq(got[k][0], 0, 'read-only file system: %s exit status (stderr %r)' %
                  (k, got[k][2][:200]))
            ck.check(got[k][1] == want[k][1], 'read-only file system: %s prints the same' % k)
    finally:
        run(['umount', ro])


# --------------------------------------------------------------------------
# JSON


UTF8_SRC = rb'''
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
__attribute__((noinline)) int weirdQQfn(int x) { return x + 1; }
__attribute__((noinline)) void *worker(void *a) {
	prctl(PR_SET_NAME, "t\xff\x01\x1b\xe2\x82");
	int s = 0;
	for (int i = 0; i < 3; i++)
		s += weirdQQfn(i);
	void *volatile p = malloc(17);
	(void)p;
	return (void *)(long)s;
}
int main(int argc, char **argv) {
	pthread_t t;
	void *r;
	pthread_create(&t, 0, worker, 0);
	pthread_join(t, &r);
	return (long)r == 6 ? 0 : 1;
}
'''
# bytes that are not UTF-8 (a lone 0xff, a truncated sequence, a surrogate,
# an overlong '/') and control bytes (SOH, ESC, DEL)
BAD = b'\xff\x01\x1b\x7f\xe2\x82'


def strict_json(ck, cp, what):
    ck.eq(cp.returncode, 0, '%s: exit status' % what)
    try:
        text = cp.stdout.decode('utf-8', 'strict')
    except UnicodeDecodeError as e:
        ck.fail('%s: output is not valid UTF-8: %s' % (what, e))
        return None
    try:
        return json.loads(text)
    except ValueError as e:
        ck.fail('%s: output is not JSON: %s' % (what, e))
        return None


def test_json_utf8(ck, cyg, example):
    if not cc():
        print('SKIP: needs a C compiler')
        sys.exit(SKIP)
    d = os.fsencode(cyg.workdir)
    srcdir = d + b'/src' + BAD + b'\xed\xa0\x80\xc0\xafdir'
    os.mkdir(srcdir)
    exe = d + b'/prog' + BAD
    with open(srcdir + b'/w.c', 'wb') as f:
        f.write(UTF8_SRC)
    cp = run([os.fsencode(cc()), b'-O1', b'-g', b'-finstrument-functions', b'-pthread', b'-o',
              exe, srcdir + b'/w.c'])
    if cp.returncode != 0:
        raise Failure('cannot build the program: %s' % cp.err.strip()[:300])
    # the function's name: weird, 0xff 0x01, fn (in the symbol table and DWARF)
    with open(exe, 'rb') as f:
        img = f.read()
    ck.check(img.count(b'weirdQQfn') >= 1, 'the placeholder name is in the program')
    with open(exe, 'wb') as f:
        f.write(img.replace(b'weirdQQfn', b'weird\xff\x01fn'))
    cap = d + b'/u.data'
    cp = run([os.fsencode(cyg.exe), b'record', b'-o', cap, b'--memory', b'--timeline', b'--',
              exe, b'arg' + BAD, b'\n\t"\\'])
    ck.eq(cp.returncode, 0, 'record of the program')
    outs = {}
    for cmd in (['report'], ['report', '--threads'], ['info'], ['memory'],
                ['memory', '--leaks', '--peak', '--temporary'],
                ['memory', '--function', os.fsdecode(b'weird\xff*')], ['annotate', '--all']):
        cpj = run([cyg.exe] + cmd + ['--format=json', os.fsdecode(cap)])
        outs[' '.join(shown(c) for c in cmd)] = strict_json(ck, cpj, ' '.join(
            shown(c) for c in cmd) + ' --format=json')
    rep = outs.get('report')
    if rep:
        names = [f['name'] for f in rep['functions']]
        ck.check('weird\ufffd\x01fn' in names,
                 'report: the name with 0xff replaced by U+FFFD, 0x01 kept (%r)' % names)
        calls = {f['name']: f['calls'] for f in rep['functions']}
        ck.eq(calls.get('weird\ufffd\x01fn'), 3, 'report: its calls')
        want_cmd = (os.fsdecode(exe) + ' arg' + os.fsdecode(BAD) + ' \n\t"\\')
        want_cmd = want_cmd.encode('utf-8', 'surrogateescape').decode('utf-8', 'replace')
        ck.eq(rep['processes'][0]['command'], want_cmd,
              'report: the command line, each bad byte one U+FFFD, controls escaped')
    ann = outs.get('annotate --all')
    if ann:
        paths = [f['path'] for f in ann['files']]
        ck.check(any('/src\ufffd\x01\x1b\x7f' in p and p.endswith('dir/w.c') for p in paths),
                 'annotate: the source path (%r)' % paths)
    # the text outputs do not fail either
    for cmd in (['report'], ['info'], ['memory'], ['annotate', '--all'], ['replay'],
                ['gprof', '-b']):
        cpt = run([cyg.exe] + cmd + [os.fsdecode(cap)])
        ck.eq(cpt.returncode, 0, '%s (text): exit status' % ' '.join(cmd))


# --------------------------------------------------------------------------
# numbers


def test_options(ck, cyg, example):
    d = cyg.workdir
    cap = os.path.join(d, 'c.data')
    tl = os.path.join(d, 'tl.data')
    mem = os.path.join(d, 'm.data')
    for path, opts in ((cap, []), (tl, ['--timeline']), (mem, ['--memory'])):
        cp = cyg.record(path, [example], opts)
        if cp.returncode != 0:
            raise Failure('record %s failed: %s' % (opts, cp.err.strip()))
    out = os.path.join(d, 'x.data')
    rec = lambda *o: ['record', '-q', '-o', out] + list(o) + ['--', example]
    bad = [
        # (arguments, the option the error names)
        (rec('--ring-size', '-1', '--timeline'), '--ring-size'),
        (rec('--ring-size', '127', '--timeline'), '--ring-size'),
        (rec('--ring-size', '2G', '--timeline'), '--ring-size'),
        (rec('--ring-size', '99999999999G', '--timeline'), '--ring-size'),
        (rec('--ring-size', '18446744073709551616'), '--ring-size'),
        (rec('--ring-size', '0x100'), '--ring-size'),
        (rec('--ring-size', ' 4096'), '--ring-size'),
        (rec('--ring-size', '4T'), '--ring-size'),
        (rec('--ring-size', '32M', '--shm-size', '64M'), '--ring-size'),
        (rec('--shm-size', '-1'), '--shm-size'),
        (rec('--shm-size', '63M'), '--shm-size'),
        (rec('--shm-size', '17G'), '--shm-size'),
        (rec('--shm-size', ''), '--shm-size'),
        (rec('-t', 'nan', '--timeline'), '--time-filter'),
        (rec('-t', 'inf', '--timeline'), '--time-filter'),
        (rec('-t', '-1us', '--timeline'), '--time-filter'),
        (rec('-t', '1e400', '--timeline'), '--time-filter'),
        (rec('-t', '2e9s', '--timeline'), '--time-filter'),
        (rec('-t', '0x10', '--timeline'), '--time-filter'),
        (rec('-t', '10 us', '--timeline'), '--time-filter'),
        (rec('-t', '10h', '--timeline'), '--time-filter'),
        (rec('-D', '0'), '--depth'),
        (rec('-D', '16777217'), '--depth'),
        (rec('-D', '-1'), '--depth'),
        (rec('-D', '+5'), '--depth'),
        (rec('-D', ' 5'), '--depth'),
        (rec('-D', '5x'), '--depth'),
        (['replay', '--tid', '-1', tl], '--tid'),
        (['replay', '--tid', '0', tl], '--tid'),
        (['replay', '--tid', '4294967296', tl], '--tid'),
        (['replay', '--tid', ' 5', tl], '--tid'),
        (['memory', '--top', '-1', mem], '--top'),
        (['memory', '--top', '1e3', mem], '--top'),
        (['memory', '--points', '100001', mem], '--points'),
        (['memory', '--points', 'nan', mem], '--points'),
        (['memory', '--diff', 'nan', '1', mem], '--diff T1'),
        (['memory', '--diff', '0', 'inf', mem], '--diff T2'),
        (['memory', '--diff', '-1', '1', mem], '--diff T1'),
        (['memory', '--diff', '0x10', '20', mem], '--diff T1'),
        (['memory', '--diff', '1', '1e30', mem], '--diff T2'),
        (['annotate', '--threshold', 'nan', cap], '--threshold'),
        (['annotate', '--threshold', 'inf', cap], '--threshold'),
        (['annotate', '--threshold', '-0.5', cap], '--threshold'),
        (['annotate', '--threshold', '100.5', cap], '--threshold'),
        (['annotate', '--hot', '-1', cap], '--hot'),
        (['annotate', '--hot', '18446744073709551615', cap], '--hot'),
        (['annotate', '--hot', '1000001', cap], '--hot'),
    ]
    for args, opt in bad:
        what = ' '.join(args[:-1] if args[0] != 'record' else ['record'] + args[4:-2])
        cp = run([cyg.exe] + args)
        one_error(ck, cp, what, 2, r"^cygprof: \w+: bad %s value '.*' \(|%s" %
                  (re.escape(opt), re.escape(opt)))
        ck.check(not os.path.exists(out), '%s: no capture written' % what)
    # the edges of the ranges are accepted
    good = [
        rec('--ring-size', '128', '--timeline'),
        rec('--ring-size', '16M', '--shm-size', '64M', '--timeline'),
        rec('--shm-size', '16G'),
        rec('-t', '0', '--timeline'),
        rec('-t', '1.5e3ns', '--timeline'),
        rec('-t', '.5ms', '--timeline'),
        rec('-D', '16777216'),
        rec('-D', '1'),
        ['memory', '--top', '0', '--points', '0', mem],
        ['memory', '--points', '100000', '--diff', '0', '1.5', mem],
        ['annotate', '--threshold', '0', '--hot', '0', cap],
        ['annotate', '--threshold', '100', '--hot', '1000000', cap],
    ]
    for args in good:
        cp = run([cyg.exe] + args)
        ck.eq(describe_status(cp.returncode), 'exit 0', '%s: accepted' % ' '.join(args))
    # -t is still exact: 1.5ms is 1500000 ns in the timeline filter
    info = cygtest.info_json(ck, cyg, out)
    ck.eq(info.get('meta', {}).get('filters'), '-D 1', 'the last recording\'s filters')
    tid = cygtest.info_json(ck, cyg, tl)['threads'][0]['tid']
    cp = run([cyg.exe, 'replay', '--tid', str(tid), tl])
    ck.eq(cp.returncode, 0, 'replay --tid of a real thread')


# --------------------------------------------------------------------------
# a program without instrumentation


HINT = r'^cygprof: warning: no instrumented function was called: build .* with ' \
       r'-finstrument-functions'


def test_no_instrument(ck, cyg, example):
    if not cc():
        print('SKIP: needs a C compiler')
        sys.exit(SKIP)
    d = cyg.workdir
    prog = os.path.join(d, 'plain')
    build(ck, '#include <stdlib.h>\nint main(void) { void *volatile p = malloc(40); '
          'free(p); return 0; }\n', prog, [])
    cap = os.path.join(d, 'p.data')
    cp = cyg.record(cap, [prog])
    ck.eq(cp.returncode, 0, 'record of an uninstrumented program')
    hints = [line for line in cp.err.splitlines() if re.match(HINT, line)]
    ck.eq(len(hints), 1, 'one hint line (stderr %r)' % cp.err)
    cp = run([cyg.exe, 'record', '-q', '-o', cap, '--', prog])
    ck.eq(len([ln for ln in cp.err.splitlines() if re.match(HINT, ln)]), 1,
          'the hint also with -q (stderr %r)' % cp.err)
    cp = cyg.record(cap, [prog], ['--memory'])
    ck.eq(cp.returncode, 0, 'record --memory of the uninstrumented program')
    ck.check(not re.search(HINT, cp.err, re.M),
             'record --memory of a program that allocates: no hint (stderr %r)' % cp.err)
    cp = run([cyg.exe, 'memory', '--format=json', cap])
    ck.eq(json.loads(cp.out)['totals']['allocations'] >= 1, True,
          'its allocations were recorded')
    cp = cyg.record(cap, [example])
    ck.check(not re.search(HINT, cp.err, re.M), 'an instrumented program: no hint')
    cp = cyg.record(cap, [example], ['-F', 'no_such_function'])
    ck.check(not re.search(HINT, cp.err, re.M),
             'an instrumented program whose calls a filter removed: no hint')


# --------------------------------------------------------------------------
# limits


def test_limits(ck, cyg, example, helper):
    d = cyg.workdir
    cap = os.path.join(d, 'limits.data')
    cp = run([helper, cap])
    if cp.returncode != 0:
        raise Failure('limits-capture failed: %s' % cp.err.strip())
    stored = cp.out.split()[1:]
    print('info: optional thread fields the capture library keeps: %s' % (stored or 'none'))
    want = {  # warning text -> count (None: no count)
        'the recording was cut off before its end': None,
        'the traced program wrote into cygprof\'s shared memory': None,
        'the shared mapping filled up while recording (9 allocations refused)': None,
        '7 timeline events were lost during recording': None,
        '2 function exits matched no recorded entry': None,
    }
    if 'overflow' in stored:
        want['5 calls were deeper than the depth limit'] = None
    if 'sig_lost' in stored:
        want['3 calls or allocations made by signal handlers could not be recorded'] = None
    if 'mem_lost' in stored:
        want['4 allocations or frees were not traced'] = None
    cmds = [['report'], ['report', '--format=json'], ['report', '--threads'],
            ['report', '--tree'], ['info'], ['info', '--format=json'], ['replay'],
            ['gprof', '-b'], ['annotate'], ['annotate', '--format=json'], ['memory'],
            ['memory', '--format=json']]
    for cmd in cmds:
        what = ' '.join(cmd)
        cp = run([cyg.exe] + cmd + [cap])
        ck.eq(cp.returncode, 0, '%s: exit status' % what)
        lines = cp.err.splitlines()
        for text in want:
            n = sum(1 for ln in lines if ln.startswith('cygprof: warning: %s: %s' % (cap, text)))
            ck.eq(n, 1, '%s: one warning "%s"' % (what, text))
        ck.eq(len(lines), len(want), '%s: nothing else on stderr (%r)' % (what, lines))
        if '--format=json' in cmd:
            data = json.loads(cp.out)
            lim = data.get('limits', {})
            exp = {'complete': False, 'lost': 7, 'unpaired': 2, 'shm_full': 9}
            for k in ('overflow', 'sig_lost', 'mem_lost'):
                if k in stored:
                    exp[k] = {'overflow': 5, 'sig_lost': 3, 'mem_lost': 4}[k]
            ck.eq({k: lim.get(k) for k in exp}, exp, '%s: "limits"' % what)
            ck.check(isinstance(lim.get('damaged'), str) and 'ring head' in lim['damaged'],
                     '%s: limits.damaged says what was rejected' % what)
        if cmd == ['report', '--threads']:
            ck.check(re.search(r'^==== pid 100 tid 101 \(sig\) \[signal handlers\] ====$',
                               cp.out, re.M) is not None, 'report --threads: the signal flag')
            ck.check(re.search(r'^==== pid 100 tid 102 \(cloned\) \[raw clone\] ====$',
                               cp.out, re.M) is not None, 'report --threads: the clone flag')
        if cmd == ['report', '--tree']:
            ck.check(re.search(r'^# calling-context tree: pid 100 tid 101 \(sig\) '
                               r'\[signal handlers\], 1 call paths$', cp.out, re.M) is not None,
                     'report --tree: the signal flag')
            ck.check(re.search(r'^# calling-context tree: pid 100 tid 102 \(cloned\) '
                               r'\[raw clone\], 1 call paths$', cp.out, re.M) is not None,
                     'report --tree: the clone flag')
        if cmd == ['info']:
            for tid, word in ((100, 'ended'), (101, 'signal'), (102, 'ended,clone')):
                ck.check(re.search(r'^\s+%d\s+100\s.*\s%s$' % (tid, re.escape(word)), cp.out,
                                   re.M) is not None, 'info: thread %d flags "%s"' % (tid, word))
            ck.check(re.search(r'^limits\s*: recording cut off', cp.out, re.M) is not None,
                     'info: a "limits" section')
        if cmd == ['info', '--format=json']:
            ck.eq([t.get('flags') for t in data['threads']], [1, 8, 17], 'info json: flags')


def test_output_busy(ck, cyg, example):
    """Two recorders to one path: the second refuses in one line before
    starting its program, the first one's capture is kept, and the path is
    free again once the first has finished."""
    import time
    d = cyg.workdir
    out = os.path.join(d, 'same.data')
    started, stop, second = (os.path.join(d, n) for n in ('started', 'stop', 'second'))
    first = subprocess.Popen(
        [cyg.exe, 'record', '-q', '-o', out, '--', '/bin/sh', '-c',
         'touch "$0"; while [ ! -e "$1" ]; do sleep 0.01; done', started, stop],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + cygtest.TIMEOUT
        while not os.path.exists(started) and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.001)
        ck.check(os.path.exists(started), 'the first recording runs its program')
        cp = run([cyg.exe, 'record', '-q', '-o', out, '--', '/bin/sh', '-c', 'touch "$0"', second])
        one_error(ck, cp, 'a second record to the same path', 1, 'another cygprof is writing it')
        ck.check(not os.path.exists(second), 'the second program was not started')
        cp = run([cyg.exe, 'record', '-q', '-o', os.path.join(d, '.', 'same.data'), '--', 'true'])
        one_error(ck, cp, 'the same path spelt otherwise', 1, 'another cygprof is writing it')
    finally:
        open(stop, 'w').close()
        _, err = first.communicate(timeout=cygtest.TIMEOUT)
    ck.eq(first.returncode, 0, 'the first recording ends well (%s)' % err.decode().strip())
    cp = run([cyg.exe, 'info', out])
    ck.eq(cp.returncode, 0, 'its capture reads')
    cp = run([cyg.exe, 'record', '-q', '-o', out, '--', 'true'])
    ck.eq(cp.returncode, 0, 'the path is free once the first has finished: %s' % cp.err.strip())


TESTS = {
    'output-record': test_output_record,
    'output-gmon': test_output_gmon,
    'output-busy': test_output_busy,
    'disk-full-empty': test_disk_full_empty,
    'read-full-disk': test_read_full_disk,
    'json-utf8': test_json_utf8,
    'options': test_options,
    'no-instrument': test_no_instrument,
    'limits': test_limits,
}


def main():
    def call(fn, ck, cyg, example, args):
        if args.test != 'limits':
            fn(ck, cyg, example)
        elif not args.limits_capture:
            raise Failure('--limits-capture is needed')
        else:
            fn(ck, cyg, example, os.path.abspath(args.limits_capture))

    return cygtest.driver_main(TESTS, 'safety', __doc__, extra=lambda ap: ap.add_argument(
        '--limits-capture', help='the limits-capture helper'), call=call)


if __name__ == '__main__':
    sys.exit(main())
