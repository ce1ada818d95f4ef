#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end test of overhead compensation: the hooks' cost, measured by
the runtime at start and stored in the capture, taken out of the times.

Usage:
  overhead.py --cygprof CYGPROF --example EXE --test NAME [--dump DUMP] [-v] [--keep]

  compensate  records tinycalls (many() makes 1000000 calls of tiny(),
              work() none), then: `info --format=json` has the calibration
              (in_ns, out_ns > 0, their spreads, 11 rounds, plain hooks,
              one image) and `info` shows it as "o_in X ± S ns";
              `report --format=json` says times_compensated and
              compensation_clamped, `--raw-times` not; counts are exact and
              equal in both; work()'s share of the total rises and many()'s
              inclusive share falls when compensated (so the test fails if
              compensation is off); many()'s compensated total is its raw
              one less what the rule takes out (within rounding), or
              tiny()'s where that is less (clamped); no time is
              negative; `gprof`, `export --format=folded`, `annotate` and
              `diff` accept --raw-times.
  modes       the calibration runs the hooks of the recording: --timeline
              stores overhead_mode timeline and the ring it wrote (4 MiB by
              default, 1 MiB with --ring-size 1M), --memory memory, both
              timeline+memory; a shell running the program twice has
              several images calibrated and their range; --time=sampled
              has none.
  clamp       a capture whose stored calibration is absurd (o_in 1 us, set
              with DUMP): tiny, many and main are clamped (exactly 3, the
              report says so in JSON and text), main's total is exactly
              work's (never below its children), no time negative.
  diff        two captures whose calibrations differ beyond their spreads:
              `diff` warns in one line on stderr (not for a capture against
              itself, nor with --raw-times), its JSON carries both.

Exit status: 0 passed, 1 failed.  Helpers come from tests/lib/cygtest.py.
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run, describe_status  # noqa: E402

CALLS = {'main': 1, 'many': 1, 'tiny': 1000000, 'work': 1}


def report(cyg, cap, raw):
    # the compensation rule alone (--times=hooks): the time model over it
    # is tests/cputime's
    cmd = [cyg.exe, 'report', '--format=json', cap] + (['--raw-times'] if raw else
                                                       ['--times=hooks'])
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
    ck.check(isinstance(o['in_spread_ns'], float) and isinstance(o['out_spread_ns'], float)
             and o['in_spread_ns'] >= 0 and o['out_spread_ns'] >= 0,
             'spreads stored: %r, %r' % (o['in_spread_ns'], o['out_spread_ns']))
    ck.check(1 <= o['rounds_kept'] <= 11 and 1 <= o['tries'] <= 3,
             'rounds kept %r of 11, tries %r' % (o['rounds_kept'], o['tries']))
    ck.eq(o['mode'], 'plain', 'the hooks calibrated')
    ck.eq(o['ring_bytes'], 0, 'no ring written')
    ck.eq(o['images'], 1, 'one process image calibrated')
    ck.eq(o['full_ns'], round(o['in_ns'] + o['out_ns'], 3), 'o_full = o_in + o_out')
    cp = run([cyg.exe, 'info', cap])
    want = 'o_in %.1f \u00b1 %.1f ns' % (o['in_ns'], o['in_spread_ns'])
    ck.check(want in cp.out, 'info shows %r' % want)
    ck.check('%d of 11 rounds of 2000 calls kept' % o['rounds_kept'] in cp.out,
             'info shows the rounds kept')
    comp = report(cyg, cap, False)
    raw = report(cyg, cap, True)
    ck.eq(comp.get('times_compensated'), True, 'report says times_compensated')
    ck.eq(raw.get('times_compensated'), False, '--raw-times: times_compensated false')
    ck.check(isinstance(comp.get('compensation_clamped'), int), 'report has compensation_clamped')
    ck.eq(raw.get('compensation_clamped'), 0, '--raw-times: nothing clamped')
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
    # the rule on many(): 1 call of its own, 1000000 below it, and never
    # less than its compensated child (a calibration whose o_out is high
    # against this run, as on a busy machine, leaves many() at tiny()'s)
    o_full = o['in_ns'] + o['out_ns']
    want = max(0.0, fr['many']['total_ns'] - o['in_ns'] - 1000000 * o_full,
               fc['tiny']['total_ns'])
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


def overhead_of(ck, cyg, cap):
    o = cygtest.info_json(ck, cyg, cap).get('overhead')
    if not ck.check(isinstance(o, dict), '%s: info has "overhead": %r' % (cap, o)):
        raise Failure('no calibration')
    return o


def test_modes(ck, cyg, example, args):
    for opts, mode, ring in ((['--timeline'], 'timeline', 4 << 20),
                             (['--timeline', '--ring-size', '1M'], 'timeline', 1 << 20),
                             (['--memory'], 'memory', 0),
                             (['--timeline', '--memory'], 'timeline+memory', 4 << 20)):
        cap = os.path.join(cyg.workdir, 'm.data')
        cp = cyg.record(cap, [example], opts=['-q'] + opts)
        if cp.returncode != 0:
            raise Failure('record %s failed (%s): %s' % (' '.join(opts), describe_status(cp.returncode), cp.err))
        o = overhead_of(ck, cyg, cap)
        what = 'record ' + ' '.join(opts)
        ck.eq(o['mode'], mode, what + ': overhead_mode')
        ck.eq(o['ring_bytes'], ring, what + ': the ring the calibration wrote')
        ck.check(o['in_ns'] > 0 and o['out_ns'] > 0, what + ': o_in, o_out > 0: %r' % (o,))
        if ring:
            cp = run([cyg.exe, 'info', cap])
            ck.check('%s hooks writing a %s ring' % (mode, '4.0 MiB' if ring == 4 << 20 else '1.0 MiB')
                     in cp.out, what + ': info names the hooks and the ring')
        fc = fns(report(cyg, cap, False))
        for name, n in CALLS.items():
            ck.eq(fc.get(name, {}).get('calls'), n, '%s: calls of %s' % (what, name))
    # every process image calibrates: the shell and its two children
    cap = os.path.join(cyg.workdir, 'sh.data')
    cp = cyg.record(cap, ['/bin/sh', '-c', '"$0"; "$0"', example], opts=['-q'])
    if cp.returncode != 0:
        raise Failure('record sh failed (%s): %s' % (describe_status(cp.returncode), cp.err))
    o = overhead_of(ck, cyg, cap)
    ck.check(o['images'] >= 2, 'several process images calibrated: %r' % o['images'])
    ck.check(o['in_range_ns'][0] <= o['in_ns'] <= o['in_range_ns'][1] and
             o['out_range_ns'][0] <= o['out_ns'] <= o['out_range_ns'][1],
             'the first image\'s figures lie in the range: %r' % (o,))
    cp = run([cyg.exe, 'info', cap])
    ck.check('%d process images calibrated: o_in ' % o['images'] in cp.out,
             'info shows the images\' range')
    cap = os.path.join(cyg.workdir, 's.data')
    cp = cyg.record(cap, [example], opts=['-q', '--time=sampled'])
    if cp.returncode != 0:
        raise Failure('record --time=sampled failed: %s' % cp.err)
    ck.eq(cygtest.info_json(ck, cyg, cap).get('overhead'), None, '--time=sampled: no calibration')


def set_meta(dump, cap, key, value):
    cp = run([dump, cap, 'set', key, value])
    if cp.returncode != 0:
        raise Failure('setting %s=%s failed: %s' % (key, value, cp.err.strip()))


def test_clamp(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [example], opts=['-q'])
    if cp.returncode != 0:
        raise Failure('record failed (%s): %s' % (describe_status(cp.returncode), cp.err))
    # 1 us per call inside the callee: far above tiny()'s calls, and
    # many()'s and main's, but not work()'s single call of milliseconds
    set_meta(args.dump, cap, 'overhead_in_ns', '1000.000')
    set_meta(args.dump, cap, 'overhead_out_ns', '0.000')
    comp, raw = report(cyg, cap, False), report(cyg, cap, True)
    fc, fr = fns(comp), fns(raw)
    ck.eq(comp.get('compensation_clamped'), 3, 'clamped call paths (tiny, many, main)')
    ck.eq(fc['tiny']['total_ns'], 0, 'tiny: its measured time is all the calibration\'s')
    ck.eq(fc['many']['total_ns'], 0, 'many: no less than its child tiny')
    ck.eq(fc['work']['total_ns'], fr['work']['total_ns'] - 1000, 'work loses one o_in')
    ck.eq(fc['main']['total_ns'], fc['work']['total_ns'],
          'main is clamped at its children: many + work')
    ck.eq(fc['main']['self_ns'], 0, 'main has no self time left')
    for f in comp['functions']:
        ck.check(f['self_ns'] >= 0 and f['total_ns'] >= 0, '%s: no negative time' % f['name'])
    ck.eq(comp['total_self_ns'], fc['work']['total_ns'], 'the total is what is left: work')
    cp = run([cyg.exe, 'report', cap])
    ck.check('Compensation clamped 3 call paths' in cp.out, 'report says how many were clamped')
    cp = run([cyg.exe, 'report', '--raw-times', cap])
    ck.check('Compensation clamped' not in cp.out, '--raw-times: nothing said')


def test_diff(ck, cyg, example, args):
    a, b = os.path.join(cyg.workdir, 'a.data'), os.path.join(cyg.workdir, 'b.data')
    cp = cyg.record(a, [example], opts=['-q'])
    if cp.returncode != 0:
        raise Failure('record failed (%s): %s' % (describe_status(cp.returncode), cp.err))
    shutil.copyfile(a, b)
    o = overhead_of(ck, cyg, a)
    # b: 5 ns more inside the callee, spreads of 0.1 ns: beyond both spreads
    new_in = o['in_ns'] + 5 + o['in_spread_ns'] + o['out_spread_ns']
    set_meta(args.dump, b, 'overhead_in_ns', '%.3f' % new_in)
    set_meta(args.dump, b, 'overhead_in_spread_ns', '0.100')
    set_meta(args.dump, b, 'overhead_out_spread_ns', '0.100')
    cp = run([cyg.exe, 'diff', a, b])
    lines = [l for l in cp.err.splitlines() if 'calibrated differently' in l]
    ck.eq(len(lines), 1, 'diff warns once: %r' % cp.err)
    ck.check(cp.returncode == 0, 'diff succeeds')
    if lines:
        ck.check(lines[0].startswith('cygprof: diff: OLD and NEW were calibrated differently (o_in '),
                 'the warning: %r' % lines[0])
        ck.check(lines[0].endswith(' ns per call'), 'says how much a call differs: %r' % lines[0])
    cp = run([cyg.exe, 'diff', a, a])
    ck.check('calibrated differently' not in cp.err, 'no warning for equal calibrations: %r' % cp.err)
    cp = run([cyg.exe, 'diff', '--raw-times', a, b])
    ck.check('calibrated differently' not in cp.err, 'no warning with --raw-times: %r' % cp.err)
    cp = run([cyg.exe, 'diff', '--format=json', a, b])
    d = json.loads(cp.out)
    ck.eq(d['old']['calibration']['in_ns'], o['in_ns'], 'JSON: OLD calibration')
    ck.eq(d['new']['calibration']['in_ns'], round(new_in, 3), 'JSON: NEW calibration')
    ck.eq(d['new']['calibration']['in_spread_ns'], 0.1, 'JSON: NEW spread')
    ck.eq(d['new']['compensated'], True, 'JSON: NEW compensated')


TESTS = {'compensate': test_compensate, 'modes': test_modes, 'clamp': test_clamp,
         'diff': test_diff}


def extra(ap):
    ap.add_argument('--dump', help='psamples-dump (sets meta keys)')

if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'overhead', __doc__, extra))
