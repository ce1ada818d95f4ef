#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end test of `cygprof export --format=gmon`.

Usage:
  gmon.py --cygprof CYGPROF --example EXAMPLE --test gmon [--skip REASON] [-v] [--keep]

Tests:
  gmon             export --format=gmon writes what gprof --gmon-out
                   writes; the export command's usage errors are one line
                   and exit 2
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
from cygtest import (  # noqa: E402
    driver_main, run)


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


TESTS = {
    'gmon': test_export_gmon,
}


def main():
    return driver_main(TESTS, 'export', __doc__,
                       call=lambda fn, ck, cyg, example, args: fn(ck, cyg, example))


if __name__ == '__main__':
    sys.exit(main())
