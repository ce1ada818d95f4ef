#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end test of overhead compensation: the hooks' cost, measured by
the runtime at start and stored in the capture, taken out of the times.

Usage:
  overhead.py --cygprof CYGPROF --example EXE --test compensate [-v] [--keep]

  compensate  records tinycalls (many() makes 1000000 calls of tiny(),
              work() none), then: `info --format=json` has the calibration
              (in_ns, out_ns > 0, 5 rounds); `report --format=json` says
              times_compensated and `--raw-times` not; counts are exact and
              equal in both; work()'s share of the total rises and many()'s
              inclusive share falls when compensated (so the test fails if
              compensation is off); many()'s compensated total is its raw
              one less what the rule takes out (within rounding); no time is
              negative; `gprof`, `export --format=folded`, `annotate` and
              `diff` accept --raw-times.

Exit status: 0 passed, 1 failed.  Helpers come from tests/lib/cygtest.py.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run, describe_status  # noqa: E402

CALLS = {'main': 1, 'many': 1, 'tiny': 1000000, 'work': 1}


def report(cyg, cap, raw):
    cmd = [cyg.exe, 'report', '--format=json', cap] + (['--raw-times'] if raw else [])
    cp = run(cmd)
    if cp.returncode != 0:
        raise Failure('%s failed (%s): %s' % (' '.join(cmd), describe_status(cp.returncode),
                                              cp.err.strip()))
    return json.loads(cp.out)


def fns(data):
    return {f['name']: f for f in data['functions']}


def test_compensate(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [example], opts=['-q'])
    if cp.returncode != 0:
        raise Failure('record failed (%s): %s' % (describe_status(cp.returncode), cp.err))
    info = cygtest.info_json(ck, cyg, cap)
    o = info.get('overhead')
    if not ck.check(isinstance(o, dict), 'info --format=json has "overhead": %r' % (o,)):
        raise Failure('no calibration')
    ck.check(o['in_ns'] > 0 and o['out_ns'] > 0, 'o_in and o_out positive: %r' % (o,))
    ck.eq(o['rounds'], 11, 'calibration rounds')
    comp = report(cyg, cap, False)
    raw = report(cyg, cap, True)
    ck.eq(comp.get('times_compensated'), True, 'report says times_compensated')
    ck.eq(raw.get('times_compensated'), False, '--raw-times: times_compensated false')
    fc, fr = fns(comp), fns(raw)
    for name, n in CALLS.items():
        ck.eq(fc.get(name, {}).get('calls'), n, 'calls of %s (compensated)' % name)
        ck.eq(fr.get(name, {}).get('calls'), n, 'calls of %s (raw)' % name)
    for data, what in ((comp, 'compensated'), (raw, 'raw')):
        for f in data['functions']:
            ck.check(f['self_ns'] >= 0 and f['total_ns'] >= 0,
                     '%s %s: no negative time' % (what, f['name']))
        ck.check(data['total_self_ns'] > 0, '%s total self time > 0' % what)
    tc, tr = comp['total_self_ns'], raw['total_self_ns']
    ck.check(tc < tr, 'compensated total %d < raw total %d' % (tc, tr))
    work_c, work_r = fc['work']['total_ns'] / tc, fr['work']['total_ns'] / tr
    many_c, many_r = fc['many']['total_ns'] / tc, fr['many']['total_ns'] / tr
    ck.check(work_c > work_r, "work's share rises: %.3f -> %.3f" % (work_r, work_c))
    ck.check(many_c < many_r, "many's inclusive share falls: %.3f -> %.3f" % (many_r, many_c))
    # the rule on many(): 1 call of its own, 1000000 below it
    o_full = o['in_ns'] + o['out_ns']
    want = max(0.0, fr['many']['total_ns'] - o['in_ns'] - 1000000 * o_full)
    ck.check(abs(fc['many']['total_ns'] - want) <= 1000000 * 0.001 + 2,
             "many's compensated total %d is raw %d less the rule's %.0f" %
             (fc['many']['total_ns'], fr['many']['total_ns'], fr['many']['total_ns'] - want))
    # work() makes no call: it loses one o_in only
    ck.check(abs(fr['work']['total_ns'] - fc['work']['total_ns'] - o['in_ns']) <= 1.5,
             "work loses o_in only: raw %d, compensated %d" %
             (fr['work']['total_ns'], fc['work']['total_ns']))
    # the other readers take the option
    for cmd in (['gprof', '-b'], ['export', '--format=folded', '-o', os.path.join(cyg.workdir, 'f.folded')], ['annotate'],
                ['html', '-o', os.path.join(cyg.workdir, 'r.html')]):
        cp = run([cyg.exe] + cmd + ['--raw-times', cap])
        ck.check(cp.returncode == 0, '%s --raw-times: status %s %s' %
                 (cmd[0], describe_status(cp.returncode), cp.err.strip()[:200]))
    cp = run([cyg.exe, 'diff', '--raw-times', cap, cap])
    ck.check(cp.returncode == 0, 'diff --raw-times: %s %s' % (describe_status(cp.returncode),
                                                             cp.err.strip()[:200]))


TESTS = {'compensate': test_compensate}

if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'overhead', __doc__))
