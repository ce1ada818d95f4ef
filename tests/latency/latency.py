#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""latency.py: the latency histograms per call path (suite 'latency').

latency-prog.c calls work() 1000 times: 900 calls of about 1 us and 100 of
about 100 us.  The histograms must count exactly 1000 calls, put p50 at a
short call and p99 at a long one within the buckets' error, keep min <= p50
<= p99 <= max, and agree within 10% with the exact durations of a timeline
of the same calls; captures without histograms (schema 1 and 5, and
--time=sampled) say "no latency data".
"""

import json
import os
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run  # noqa: E402

US = 1000.0


def record(ck, cyg, example, name, opts=(), args=()):
    cap = os.path.join(cyg.workdir, name)
    cp = cyg.record(cap, [example] + list(args), opts)
    if cp.returncode != 0:
        raise Failure('record %s failed (%s): %s' %
                      (' '.join(opts), cygtest.describe_status(cp.returncode), cp.err.strip()))
    return cap


def lat_fn(ck, data, name):
    lat = data.get('latency')
    if not isinstance(lat, dict):
        raise Failure('the JSON report has no latency object: %r' % (lat,))
    for f in lat.get('functions', []):
        if f['name'] == name:
            return f
    raise Failure('no latency of %s in the JSON report' % name)


def check_order(ck, f, what):
    keys = ('min_ns', 'p50_ns', 'p90_ns', 'p99_ns', 'p999_ns', 'max_ns')
    vals = [f[k] for k in keys]
    ck.check(vals == sorted(vals), '%s: min <= p50 <= p90 <= p99 <= p99.9 <= max (%s)' %
             (what, ', '.join('%s %d' % (k, f[k]) for k in keys)))
    ck.check(f['min_ns'] <= f['mean_ns'] <= f['max_ns'], '%s: min <= mean <= max' % what)


def test_report(ck, cyg, example, args):
    cap = record(ck, cyg, example, 'lat.data')
    data, _ = cyg.report_json(cap, ck)
    f = lat_fn(ck, data, 'work')
    # the histogram's total is the calls
    ck.eq(f['calls'], 1000, 'work: calls in its histogram')
    calls = {x['name']: x['calls'] for x in data['functions']}
    ck.eq(calls.get('work'), 1000, 'work: calls in the profile')
    per = [x.get('latency') for x in data['functions'] if x['name'] == 'work']
    ck.eq(per[0] if per else None, {k: v for k, v in f.items() if k != 'name'},
          'work: the functions entry\'s latency as the latency object\'s')
    check_order(ck, f, 'work')
    # 900 calls of 1 us: the median is one (a bucket is at most 1/8 of
    # its lower bound wide; the hooks' cost is out, a little of the call
    # may be too: 0.8 us)
    ck.check(0.8 * US <= f['p50_ns'] <= 1.25 * US, 'work: p50 %d ns is about 1 us' % f['p50_ns'])
    # 100 calls of 100 us: the 990th of 1000 is one, or (a busy machine
    # that preempted more than ten of them) longer; latency-timeline
    # compares it with the exact durations
    ck.check(90 * US <= f['p99_ns'], 'work: p99 %d ns is at least about 100 us' % f['p99_ns'])
    ck.check(f['min_ns'] >= 0.8 * US, 'work: min %d ns is no less than a short call' % f['min_ns'])
    ck.check(f['max_ns'] >= 100 * US, 'work: max %d ns is no less than a long call' % f['max_ns'])
    lp = data['latency']['paths']
    byid = {p['id']: p for p in lp}
    paths = [p for p in lp if p['name'] == 'work' and p['depth'] == 2 and
             byid.get(p['parent'], {}).get('name') == 'main']
    ck.eq(len(paths), 1, 'the call path main > work (by its parent\'s id)')
    if paths:
        ck.eq(paths[0]['calls'], 1000, 'main > work: calls')
        ck.eq(paths[0]['p99_ns'], f['p99_ns'], 'main > work: p99 as the function (one path)')
    m = lat_fn(ck, data, 'main')
    ck.eq(m['calls'], 1, 'main: calls in its histogram')
    ck.eq(m['min_ns'], m['max_ns'], 'main: one call, min = max')
    # the text report: ranked by p99, work's row has its calls
    cp = run([cyg.exe, 'report', '--latency', cap])
    ck.eq(cp.returncode, 0, 'report --latency: exit status')
    rows = [l.split() for l in cp.out.splitlines() if l.rstrip().endswith(' work')]
    ck.check(rows and rows[0][0] == '1000', 'report --latency: work with 1000 calls (%r)' % rows[:1])
    cp = run([cyg.exe, 'report', '--latency', '--raw-times', '--function', 'work', cap])
    ck.eq(cp.returncode, 0, 'report --latency --raw-times --function work: exit status')
    ck.check('as measured' in cp.out and ' main\n' not in cp.out,
             'report --latency --raw-times --function work: raw, work only')


def exact_pct(durs, q):
    """The q-quantile of sorted durations: the value at rank ceil(q n)."""
    k = max(1, -(-int(q * len(durs) * 1000) // 1000))
    return durs[min(k, len(durs)) - 1]


def test_timeline(ck, cyg, example, args):
    cap = record(ck, cyg, example, 'lat-t.data', ['--timeline'])
    data, _ = cyg.report_json(cap, ck, raw=True)
    f = lat_fn(ck, data, 'work')
    ck.eq(f['calls'], 1000, 'work: calls in its histogram (timeline)')
    cp = run([cyg.exe, 'replay', cap])
    if cp.returncode != 0:
        raise Failure('replay failed: %s' % cp.err.strip())
    durs = sorted(d for d, rest in cygtest.replay_entries(cp.out)
                  if d is not None and rest.startswith('work()'))
    ck.eq(len(durs), 1000, 'work: calls in the replay')
    if len(durs) != 1000:
        return
    for q, key in ((0.5, 'p50_ns'), (0.99, 'p99_ns')):
        exact = exact_pct(durs, q)
        ck.check(abs(f[key] - exact) <= 0.1 * exact,
                 'work: %s %d ns from the histogram within 10%% of %d ns from the timeline' %
                 (key, f[key], exact))
    # min and max are exact (the replay prints 4 digits: to the ns in us,
    # to the us in ms)
    def near(a, b):
        return abs(a - b) <= max(3, 0.0005 * b)
    ck.check(near(f['min_ns'], durs[0]) and near(f['max_ns'], durs[-1]),
             'work: min %d and max %d as the timeline\'s %d and %d' %
             (f['min_ns'], f['max_ns'], durs[0], durs[-1]))
    cp = run([cyg.exe, 'report', '--slowest', '3', '--function', 'work', cap])
    ck.eq(cp.returncode, 0, 'report --slowest 3: exit status')
    lines = cp.out.splitlines()
    try:
        at = lines.index('  work', next(i for i, l in enumerate(lines)
                                         if l.startswith('The slowest calls')))
    except (StopIteration, ValueError):
        raise Failure('report --slowest 3: no slowest calls of work:\n' + cp.out)
    slow = lines[at + 1:at + 4]
    ck.check(len(slow) == 3 and all(' at ' in l and '--time-range' in l for l in slow),
             'report --slowest 3: three calls with their start and a --time-range (%r)' % slow)
    ck.check(slow and ('%.3f' % (durs[-1] / 1e3)) in slow[0].replace(' ', '') or
             ('%.3f' % (durs[-1] / 1e6)) in slow[0], 'the slowest call first: %r (%d ns)' %
             (slow[:1], durs[-1]))


def test_none(ck, cyg, example, args):
    for name in ('schema1.data', 'schema5.data'):
        cap = os.path.join(args.data, name)
        cp = run([cyg.exe, 'report', '--latency', cap])
        ck.eq(cp.returncode, 0, 'report --latency %s: exit status' % name)
        ck.check('no latency data' in cp.out, 'report --latency %s says no latency data' % name)
        cp = run([cyg.exe, 'report', '--format=json', cap])
        d = json.loads(cp.out) if cp.returncode == 0 else {}
        ck.check(d.get('latency', 0) is None and
                 all(x.get('latency', 0) is None for x in d.get('functions', [])),
                 'report --format=json %s: latency null, and each function\'s' % name)
    cap = record(ck, cyg, example, 'lat-s.data', ['--time=sampled'])
    cp = run([cyg.exe, 'report', '--latency', cap])
    ck.check(cp.returncode == 0 and 'no latency data' in cp.out,
             'report --latency of a --time=sampled capture says no latency data')
    cp = run([cyg.exe, 'report', '--slowest', '0', cap])
    ck.check(cp.returncode == 2 and cp.err.count('\n') == 1,
             'report --slowest 0: one-line usage error, exit 2 (%d: %r)' % (cp.returncode, cp.err))


def test_diff(ck, cyg, example, args):
    # a slower build, as far as work's tail goes: its long calls take 400 us
    old = record(ck, cyg, example, 'old.data')
    new = record(ck, cyg, example, 'new.data', args=['1000', '400000'])
    cp = run([cyg.exe, 'diff', '--latency', '--format=json', old, new])
    ck.eq(cp.returncode, 0, 'diff --latency --format=json: exit status')
    try:
        data = json.loads(cp.out)
    except ValueError as e:
        raise Failure('diff --latency --format=json is not JSON (%s): %s' % (e, cp.out[:300]))
    rows = {r['name']: r for r in data.get('latency') or []}
    w = rows.get('work')
    if not w:
        raise Failure('diff --latency: no row for work: %r' % list(rows))
    ck.eq(w['old']['calls'], 1000, 'work: OLD calls')
    ck.eq(w['new']['calls'], 1000, 'work: NEW calls')
    # the p99 moved from a 100 us call to a 400 us one (at least: a busy
    # machine stretches either side's)
    ck.check(w['old']['p99_ns'] >= 90 * US and w['new']['p99_ns'] >= 360 * US,
             'work: p99 %d -> %d ns' % (w['old']['p99_ns'], w['new']['p99_ns']))
    ck.check(w['p99_change'] is not None and w['p99_change'] > 1.0,
             'work: the p99 change %r is more than +100%%' % w['p99_change'])
    ck.check(0.8 * US <= w['new']['p50_ns'] <= 1.25 * US, 'work: NEW p50 still about 1 us')
    cp = run([cyg.exe, 'diff', '--latency', old, new])
    ck.eq(cp.returncode, 0, 'diff --latency: exit status')
    lines = cp.out.splitlines()
    try:
        at = next(i for i, l in enumerate(lines) if l.startswith('# latency per function'))
    except StopIteration:
        raise Failure('diff --latency: no latency section:\n' + cp.out)
    # work's p99 and main's (one call: the whole run) both grow about 4x:
    # work is in the first two rows, whichever a busy machine puts first
    top = [ln for ln in lines[at + 2:at + 4] if ln.rstrip().endswith(' work')]
    ck.check(len(top) == 1 and '%' in top[0],
             'diff --latency: work in the first two rows, with its p99 change (%r)' %
             lines[at + 2:at + 4])
    cp = run([cyg.exe, 'diff', '--latency', os.path.join(args.data, 'schema5.data'), new])
    ck.check(cp.returncode == 0 and 'no latency data' in cp.out,
             'diff --latency against a capture without histograms says so')


def test_html(ck, cyg, example, args):
    cap = record(ck, cyg, example, 'lat.data')
    out = os.path.join(cyg.workdir, 'lat.html')
    cp = run([cyg.exe, 'html', '-o', out, cap])
    if cp.returncode != 0:
        raise Failure('html failed: %s' % cp.err.strip())
    with open(out, encoding='utf-8') as f:
        text = f.read()
    start = text.index('<script id="data" type="application/json">') + 42
    page = json.loads(text[start:text.index('</script>', start)])
    names = [f[0] for f in page['fns']]
    lat = (page.get('latency') or {}).get('fns', {})
    w = lat.get(str(names.index('work'))) if 'work' in names else None
    if not w:
        raise Failure('the page has no latency of work: %r' % list(lat))
    data, _ = cyg.report_json(cap, ck)
    f = lat_fn(ck, data, 'work')
    ck.eq(w[0], 1000, 'the page: work\'s calls')
    ck.eq([w[1], w[3], w[5], w[7]], [f['min_ns'], f['p50_ns'], f['p99_ns'], f['max_ns']],
          'the page: work\'s min, p50, p99, max as report\'s JSON')
    ck.eq(round(sum(w[9])), 1000, 'the page: the histogram\'s bins hold the 1000 calls')
    chrome = shutil.which('chromium') or shutil.which('chromium-browser')
    if not chrome:
        print('(no chromium: the drawn panel is not checked)')
        return
    cp = run([chrome, '--headless', '--no-sandbox', '--disable-gpu', '--dump-dom',
              'file://%s#sandwich=work' % out])
    at = cp.out.find('<div id="sw-lat"')
    panel = cp.out[at:at + 4000] if at >= 0 else ''
    ck.check('Latency of work' in panel and '<td>1,000</td>' in panel and 'class="latbar' in panel,
             'the sandwich of work shows its latency panel, 1,000 calls and bars (%r)' % panel[:300])


def test_waits(ck, cyg, example, args):
    """A ring of 16 words: the thread waits for the collector; each wait
    is an event in replay, the chrome and perfetto exports, as many as info
    counts, and its time is out of the hooks' figures."""
    cap = record(ck, cyg, example, 'w.data', ['--timeline', '--ring-size', '128'])
    cp = run([cyg.exe, 'info', '--format=json', cap])
    if cp.returncode != 0:
        raise Failure('info failed: %s' % cp.err.strip())
    waits = sum(t.get('waits', 0) for t in json.loads(cp.out)['threads'])
    ck.check(waits > 0, 'a 16-word ring makes the thread wait (info: %d waits)' % waits)
    name = '[cygprof: waiting for the collector]'
    cp = run([cyg.exe, 'replay', cap])
    ck.eq(cp.returncode, 0, 'replay: exit status')
    ents = cygtest.replay_entries(cp.out)
    ck.eq(sum(1 for _, rest in ents if rest == name), waits, 'replay: one line per wait')
    ck.eq(sum(1 for _, rest in ents if rest.startswith('work()')), 1000,
          'replay: every call of work still there')
    # the calls that held a wait: their timeline time less the waits is
    # what the hooks measured
    # a wait at a call's entry is inside it, one at its exit after it
    lines = cp.out.splitlines()
    in_calls, inside, after = 0.0, 0, 0
    for i, l in enumerate(lines):
        if not l.rstrip().endswith(name):
            continue
        ent = cygtest.replay_entries(l)
        if lines[i - 1].rstrip().endswith('work() {'):
            inside += 1
            in_calls += ent[0][0] if ent and ent[0][0] else 0
            ck.check(lines[i + 1].rstrip().endswith('} /* work */'),
                     'replay: a wait at work()\'s entry inside it (%r)' % lines[i - 1:i + 2])
        else:
            after += 1
            ck.check(l.split('|', 1)[1].startswith('   [cygprof'),
                     'replay: a wait at a call\'s exit inside main (%r)' % l)
    print('%d waits inside work(), %d after a call' % (inside, after))
    tl_total = sum(d for d, rest in ents if d is not None and
                   (rest.startswith('work()') or rest == '} /* work */'))
    data, _ = cyg.report_json(cap, ck, raw=True)
    hooks = [f['total_ns'] for f in data['functions'] if f['name'] == 'work'][0]
    ck.check(abs(hooks - (tl_total - in_calls)) <= 0.02 * hooks + 50 * US,
             'work: the hooks\' %d ns are the timeline\'s %d ns less the waits\' %d ns' %
             (hooks, tl_total, in_calls))
    f = lat_fn(ck, data, 'work')
    ck.eq(f['calls'], 1000, 'work: calls in its histogram with waits')
    # chrome: one slice per wait, on the thread, inside a call of work
    out = os.path.join(cyg.workdir, 'w.json')
    cp = run([cyg.exe, 'export', '--format=chrome', '-o', out, cap])
    ck.eq(cp.returncode, 0, 'export --format=chrome: exit status')
    with open(out) as fh:
        tr = json.load(fh)
    evs = tr['traceEvents'] if isinstance(tr, dict) else tr
    ws = [e for e in evs if e.get('name') == name]
    ck.eq(len(ws), waits, 'chrome: one slice per wait')
    calls = [e for e in evs if e.get('name') == 'main' and e.get('ph') == 'X']
    ck.check(all(any(c['ts'] <= w['ts'] and w['ts'] + w['dur'] <= c['ts'] + c['dur'] + 0.002
                     for c in calls) for w in ws), 'chrome: every wait inside the call of main')
    # the HTML timeline's waits
    hout = os.path.join(cyg.workdir, 'w.html')
    cp = run([cyg.exe, 'html', '-o', hout, cap])
    ck.eq(cp.returncode, 0, 'html: exit status')
    with open(hout, encoding='utf-8') as fh:
        text = fh.read()
    start = text.index('<script id="data" type="application/json">') + 42
    page = json.loads(text[start:text.index('</script>', start)])
    hw = (page.get('timeline') or {}).get('waits') or {}
    ck.eq(len(hw.get('start', [])), waits, 'html: the timeline\'s waits')
    ck.check(abs(sum(hw.get('dur', [])) / 1000.0 - sum(w['dur'] for w in ws)) <= 0.001 * len(ws) + 1,
             'html: the waits\' time as chrome\'s')
    # perfetto, read back by the export tests' decoder
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'export'))
    import perfetto as pf  # noqa: E402
    trace, _ = pf.perfetto(ck, cyg, cap)
    ss = pf.slices(ck, trace, waits=True)
    ck.eq(sum(1 for x in ss if x[1] == name), waits, 'perfetto: one slice per wait')
    ck.eq(sum(1 for x in ss if x[1] == 'work'), 1000, 'perfetto: every call of work')


TESTS = {
    'latency-report': test_report,
    'latency-timeline': test_timeline,
    'latency-none': test_none,
    'latency-diff': test_diff,
    'latency-html': test_html,
    'latency-waits': test_waits,
}


def extra(ap):
    ap.add_argument('--data', required=True)


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'latency', __doc__, extra))
