#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""record-env: every CYGPROF_* variable checked before a program starts.

Usage:
  env.py --cygprof CYGPROF --example CALLS --test record-env [-v] [--keep]

For each bad value (CYGPROF_RUNTIME: a missing file, a text file, an ELF
file that is no runtime, one built for another machine, a directory
without the runtime, a runtime without its memory variant for --memory;
the numbers out of range or not decimal; the flags not 0 or 1; the
directories missing or files), `cygprof record -- sh -c 'touch MARK'`
exits 2 with exactly one line on stderr, "cygprof: VAR=VALUE: PROBLEM",
writes no capture and starts no program (no MARK).  `cygprof report`
refuses the same way.  Then good values of each (the build's runtime
directory and file, 0 and 1, a decimal map size, existing directories)
record CALLS with its exact counts.
"""

import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure  # noqa: E402

VARS = ('CYGPROF_RUNTIME', 'CYGPROF_CHECKPOINT_MS', 'CYGPROF_CAPTURE_MAPSIZE', 'CYGPROF_FSYNC',
        'CYGPROF_SAMPLE_FORCE_EPERM', 'CYGPROF_RR_TICKS_SOFTWARE', 'CYGPROF_DEBUG_DIRS',
        'CYGPROF_TRACEFS', 'CYGPROF_SAMPLES_DUMP', 'CYGPROF_PROGRESS_DELAY_MS')


def run_env(cmd, env, cwd):
    full = dict((k, v) for k, v in os.environ.items() if k not in VARS)
    full.update(env)
    if cygtest.VERBOSE:
        print('$ %s %s' % (' '.join('%s=%s' % kv for kv in env.items()), ' '.join(cmd)))
    import subprocess
    cp = subprocess.run(cmd, env=full, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL, timeout=cygtest.TIMEOUT)
    return cp.returncode, cp.stdout.decode(), cp.stderr.decode()


def test_env(ck, cyg, example, args):
    w = cyg.workdir
    build = os.path.dirname(os.path.dirname(cyg.exe))
    rt_dir = os.path.join(build, 'cyg')
    rt = os.path.join(rt_dir, 'libcygprof-cyg.so')
    memdump = os.path.join(build, 'memdump', 'libcygprof-memdump.so')
    for f in (rt, memdump):
        if not os.path.isfile(f):
            raise Failure('%s: not built' % f)
    text = os.path.join(w, 'text.so')
    with open(text, 'w') as f:
        f.write('not ELF\n')
    # the runtime with another machine in its ELF header (e_machine, 2 bytes at 18)
    foreign = os.path.join(w, 'foreign.so')
    with open(rt, 'rb') as f:
        b = bytearray(f.read())
    b[18:20] = (183).to_bytes(2, 'little' if b[5] == 1 else 'big')  # EM_AARCH64
    if b[18:20] == open(rt, 'rb').read()[18:20]:
        b[18:20] = (62).to_bytes(2, 'little' if b[5] == 1 else 'big')  # EM_X86_64
    with open(foreign, 'wb') as f:
        f.write(bytes(b))
    alone = os.path.join(w, 'alone')
    os.mkdir(alone)
    shutil.copy(rt, alone)
    empty = os.path.join(w, 'empty')
    os.mkdir(empty)

    bad = [
        ('CYGPROF_RUNTIME', '/nonexistent.so', [], 'No such file or directory'),
        ('CYGPROF_RUNTIME', text, [], 'not an ELF file'),
        ('CYGPROF_RUNTIME', memdump, [],
         'exports no __cyg_profile_func_enter(): not a cygprof runtime'),
        ('CYGPROF_RUNTIME', foreign, [], 'built for another machine'),
        ('CYGPROF_RUNTIME', empty, [], 'no libcygprof-cyg.so in this directory'),
        ('CYGPROF_RUNTIME', alone, ['--memory'],
         'no libcygprof-mem.so in this directory (record --memory preloads it)'),
        ('CYGPROF_RUNTIME', os.path.join(alone, 'libcygprof-cyg.so'), ['--memory'],
         'no libcygprof-mem.so next to it (record --memory preloads it)'),
        ('CYGPROF_CHECKPOINT_MS', 'abc', [], 'not an integer from 0 to 86400000'),
        ('CYGPROF_CHECKPOINT_MS', '-1', [], 'not an integer from 0 to 86400000'),
        ('CYGPROF_CHECKPOINT_MS', '86400001', [], 'not an integer from 0 to 86400000'),
        ('CYGPROF_CHECKPOINT_MS', ' 5', [], 'not an integer from 0 to 86400000'),
        ('CYGPROF_CAPTURE_MAPSIZE', '1000', [], 'not an integer from 65536 to %d' % (2**64 - 1)),
        ('CYGPROF_CAPTURE_MAPSIZE', '0x10000', [],
         'not an integer from 65536 to %d' % (2**64 - 1)),
        ('CYGPROF_PROGRESS_DELAY_MS', '1s', [], 'not an integer from 0 to 3600000'),
        ('CYGPROF_PROGRESS_DELAY_MS', '3600001', [], 'not an integer from 0 to 3600000'),
        ('CYGPROF_FSYNC', 'yes', [], 'not 0 or 1'),
        ('CYGPROF_SAMPLE_FORCE_EPERM', '2', [], 'not 0 or 1'),
        ('CYGPROF_RR_TICKS_SOFTWARE', 'true', [], 'not 0 or 1'),
        ('CYGPROF_DEBUG_DIRS', empty + ':/nonexistent', [],
         '/nonexistent: No such file or directory'),
        ('CYGPROF_TRACEFS', text, [], text + ': not a directory'),
        ('CYGPROF_SAMPLES_DUMP', '/nonexistent/s.json', [],
         '/nonexistent: No such file or directory'),
    ]
    mark = os.path.join(w, 'MARK')
    cap = os.path.join(w, 'bad.data')
    for var, val, opts, why in bad:
        what = '%s=%s%s' % (var, val, ' ' + ' '.join(opts) if opts else '')
        want = 'cygprof: %s=%s: %s' % (var, val, why)
        rc, out, err = run_env([cyg.exe, 'record', '-o', cap] + opts +
                               ['--', 'sh', '-c', 'touch ' + mark], {var: val}, w)
        if why == 'built for another machine':
            ck.check(err.startswith(want + ' ('), '%s: %r starts with %r' % (what, err, want))
            err = want + '\n'
        ck.eq((rc, err), (2, want + '\n'), '%s: record exits 2 with one line' % what)
        ck.check(not os.path.exists(mark), '%s: the program did not start' % what)
        ck.check(not os.path.exists(cap), '%s: no capture written' % what)
    rc, out, err = run_env([cyg.exe, 'report', cap], {'CYGPROF_FSYNC': 'yes'}, w)
    ck.eq((rc, err), (2, 'cygprof: CYGPROF_FSYNC=yes: not 0 or 1\n'),
          'report refuses a bad variable too')

    good = [{'CYGPROF_RUNTIME': rt_dir}, {'CYGPROF_RUNTIME': rt},
            {'CYGPROF_CHECKPOINT_MS': '0', 'CYGPROF_FSYNC': '1'},
            {'CYGPROF_CHECKPOINT_MS': '86400000', 'CYGPROF_FSYNC': '0'},
            {'CYGPROF_CAPTURE_MAPSIZE': '65536', 'CYGPROF_DEBUG_DIRS': empty + ':' + alone},
            {'CYGPROF_RUNTIME': '', 'CYGPROF_TRACEFS': empty}]
    for i, env in enumerate(good):
        what = ' '.join('%s=%s' % kv for kv in sorted(env.items()))
        capi = os.path.join(w, 'good%d.data' % i)
        rc, out, err = run_env([cyg.exe, 'record', '-o', capi, '--', example], env, w)
        ck.eq(rc, 0, '%s: record exits 0 (stderr %r)' % (what, err))
        if rc == 0:
            data, _ = cyg.report_json(capi, ck)
            cygtest.check_functions(ck, data, cygtest.exp_calls()['functions'])


def main():
    return cygtest.driver_main({'record-env': test_env}, 'record', __doc__)


if __name__ == '__main__':
    sys.exit(main())
