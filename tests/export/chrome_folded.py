#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof export --format=chrome` and `--format=folded`.

Usage:
  chrome_folded.py --cygprof CYGPROF --example CALLS --test NAME [--threads PROG]
                  [--longrun PROG] [--counters-prog PROG] [--mem-prog PROG]
                  [--sampling-prog PROG] [--sanitize B_SANITIZE] [--skip REASON] [-v] [--keep]

CALLS is examples/calls.c at -O2 (main 1, a 3, b 6, c 30).

Tests:
  export-chrome-timeline  record --timeline of calls and of threads: the
                  output starts with {"traceEvents":[ and is JSON; one "X"
                  event per call (as many per function as the report's
                  calls, the sum its calls), ts/dur in microseconds, the X
                  events of a thread nest; a process_name for every process
                  and a thread_name for every thread; displayTimeUnit ns and
                  the capture's metadata in otherData.  Without --timeline:
                  one warning line, metadata only, still JSON
  export-chrome-counters  record --counters of counters-prog: "C" events of
                  every counter, as many as `cygprof counters --format=json`
                  has samples, the system's under pid 0
  export-chrome-memory    record --memory of mem-basic: the heap/live_bytes
                  track peaks at `cygprof memory`'s peak_bytes; --allocations
                  gives one "i" event per allocation and free (allocations +
                  frees + untracked frees), the allocations' sizes adding up
                  to allocated_bytes
  export-chrome-stream    longrun with 10x the calls exports with the same
                  memory (peak RSS, VmHWM, of the export within 1.5x, and far below
                  what holding the events would take); its X events equal
                  its calls
  export-folded   the folded lines of calls and threads: every line is
                  "frames VALUE"; self weights add up to the report's
                  total_self_ns, calls weights to its calls (main;a;b;c 30);
                  a capture recorded with --time=sampled weighs by calls by
                  default
  export-folded-samples  record --sample of sampling-prog-cyg: the samples
                  weights add up to the capture's samples (skipped when perf
                  sampling is not available)
  export-folded-memory   record --memory of mem-basic: allocated, leaked and
                  peak weights add up to `cygprof memory`'s allocated, leaked
                  and peak bytes
  export-folded-flamegraph  flamegraph.pl or inferno-flamegraph reads the
                  folded stacks of calls, samples and memory (skipped
                  without either; samples and memory where they can be
                  recorded here)
  export-chrome-folded-errors
                  an unknown --weight key exits 2, samples or --memory
                  weights of a capture without them exit 1 with one line
                  naming the record option; a file at -o that is not a
                  chrome trace is kept without -f, replaced with it, and an
                  earlier chrome output is replaced without -f; -o - is
                  standard output for every format of one file (no file
                  named "-"), refused for gmon in one line; html -o - too
  export-chrome-size-guard  big-prog (bigfilter.c) recorded with --timeline:
                  its chrome trace (12004002 events) is refused in one line
                  that suggests -F, and so is -F main (all of it); -F
                  getCommand is estimated after the filter and written: 1000
                  getCommand and 1000 lookup X events, nothing else
"""

import collections
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status, expect_error  # noqa: E402

MAGIC = '{"traceEvents":['


class Skip(Exception):
    """The test cannot run here (exit 77)."""


FOLDED_LINE = re.compile(r'^([^;\n]+)(;[^;\n]+)* (\d+)$')


def record(cyg, name, prog_args, opts):
    cap = os.path.join(cyg.workdir, name)
    cp = cyg.record(cap, prog_args, opts)
    if cp.returncode != 0:
        raise Failure('record %s failed (%s): %s' % (' '.join(opts), describe_status(cp.returncode),
                                                     cp.err.strip()))
    return cap, cp


def export(cyg, cap, fmt, opts=(), ok=True):
    cp = run([cyg.exe, 'export', '--format=' + fmt] + list(opts) + [cap])
    if ok and cp.returncode != 0:
        raise Failure('export --format=%s %s failed (%s): %s' %
                      (fmt, ' '.join(opts), describe_status(cp.returncode), cp.err.strip()))
    return cp


def json_of(cyg, cmd, cap):
    cp = run([cyg.exe] + cmd + ['--format=json', cap])
    if cp.returncode != 0:
        raise Failure('%s failed: %s' % (' '.join(cmd), cp.err.strip()))
    return json.loads(cp.out)


def chrome(ck, cyg, cap, opts=()):
    cp = export(cyg, cap, 'chrome', opts)
    ck.check(cp.out.startswith(MAGIC), 'the output starts with %s: %r' % (MAGIC, cp.out[:40]))
    try:
        data = json.loads(cp.out)
    except ValueError as e:
        raise Failure('the chrome output is not JSON (%s): %r' % (e, cp.out[:300])) from e
    ck.eq(data.get('displayTimeUnit'), 'ns', 'displayTimeUnit')
    return data, cp


def check_nesting(ck, xs, what):
    """The X events of one thread nest: sorted by start (longer first), each
    ends before the innermost call still open around it ends."""
    spans = sorted(((round(e['ts'] * 1000), round((e['ts'] + e['dur']) * 1000)) for e in xs),
                   key=lambda s: (s[0], -s[1]))
    stack, bad = [], 0
    for start, end in spans:
        while stack and stack[-1] <= start:
            stack.pop()
        if stack and end > stack[-1]:
            bad += 1
        stack.append(end)
    ck.eq(bad, 0, '%s: X events that do not nest' % what)


def check_timeline(ck, cyg, cap):
    # the timeline is as measured: the report's raw times are its times
    report = json_of(cyg, ['report', '--raw-times'], cap)
    data, _ = chrome(ck, cyg, cap)
    ev = data['traceEvents']
    # the calls (not the waits for the collector, category cygprof)
    xs = [e for e in ev if e['ph'] == 'X' and e.get('cat') != 'cygprof']
    calls = sum(f['calls'] for f in report['functions'])
    ck.eq(len(xs), calls, 'X events == the report\'s calls')
    per_fn = collections.Counter(e['name'] for e in xs)
    ck.eq(dict(per_fn), {f['name']: f['calls'] for f in report['functions']},
          'X events per function == calls per function')
    ck.check(all(e.get('cat') == 'function' and isinstance(e['ts'], (int, float)) and
                 e['dur'] >= 0 for e in xs), 'every X event has cat, ts and dur')
    # ts in microseconds: the calls lie within the capture's duration
    dur_us = int(report['meta']['duration_ns']) / 1000.0
    ck.check(all(0 <= e['ts'] and e['ts'] + e['dur'] <= dur_us + 1 for e in xs),
             'X events lie within the capture (%.3f us)' % dur_us)
    total_us = sum(e['dur'] for e in xs if e['name'] == 'main')
    main_ns = {f['name']: f['total_ns'] for f in report['functions']}.get('main')
    if main_ns is not None:
        ck.check(abs(total_us * 1000 - main_ns) <= 1.5,  # 1 ns of rounding, in floating point
                 'main\'s X duration %.3f us == its total_ns %d' % (total_us, main_ns))
    names = {(e['pid'], e.get('tid')): e['args']['name'] for e in ev
             if e['ph'] == 'M' and e['name'] == 'thread_name'}
    for t in report['threads']:
        ck.check((t['pid'], t['tid']) in names, 'thread %d (pid %d) has a thread_name' %
                 (t['tid'], t['pid']))
    pnames = {e['pid'] for e in ev if e['ph'] == 'M' and e['name'] == 'process_name'}
    for p in report['processes']:
        ck.check(p['pid'] in pnames, 'process %d has a process_name' % p['pid'])
    by_thread = collections.defaultdict(list)
    for e in xs:
        by_thread[(e['pid'], e['tid'])].append(e)
    for k, v in by_thread.items():
        check_nesting(ck, v, 'thread %s' % (k,))
    ck.eq(data['otherData'].get('command'), report['meta']['command'], 'otherData.command')
    ck.eq(data['otherData'].get('mode'), report['meta']['mode'], 'otherData.mode')
    return report, data


def test_chrome_timeline(ck, cyg, example, args):
    cap, _ = record(cyg, 't.cyg', [example], ['--timeline'])
    check_timeline(ck, cyg, cap)
    cap, _ = record(cyg, 'th.cyg', [args.threads, '1000'], ['--timeline'])
    report, data = check_timeline(ck, cyg, cap)
    ck.eq(len(report['threads']), 6, 'the threads example has 6 threads')
    # fractional microseconds: ns are kept
    cp = export(cyg, cap, 'chrome')
    ck.check(re.search(r'"ts":\d+\.\d{3},', cp.out) is not None, 'ts has three decimals')
    # no timeline: one warning, the rest written
    cap, _ = record(cyg, 'p.cyg', [example], [])
    data, cp = chrome(ck, cyg, cap)
    lines = cp.err.splitlines()
    ck.check(len(lines) == 1 and lines[0].startswith('cygprof: warning: ') and
             'no timeline' in lines[0] and '--timeline' in lines[0],
             'without a timeline: one warning line naming --timeline (%r)' % lines)
    ck.eq(len([e for e in data['traceEvents'] if e['ph'] == 'X']), 0, 'X events without a timeline')
    ck.check(any(e['ph'] == 'M' and e['name'] == 'thread_name' for e in data['traceEvents']),
             'the threads are named without a timeline')


def test_chrome_counters(ck, cyg, example, args):
    cap, _ = record(cyg, 'c.cyg', [args.counters_prog], ['--counters'])
    counters = json_of(cyg, ['counters'], cap)
    data, _ = chrome(ck, cyg, cap)
    cs = [e for e in data['traceEvents'] if e['ph'] == 'C']
    got = collections.Counter((e['name'], e['pid']) for e in cs)
    want = {(c['name'], c['pid'] or 0): len(c['samples']) for c in counters['counters']}
    ck.check(len(want) > 0, 'the capture has counters')
    ck.eq(dict(got), want, 'C events per counter and pid == the counters\' samples')
    ck.check(any(n == 'meminfo/MemTotal' and p == 0 for n, p in got), 'meminfo under pid 0')
    ck.check(any(n == 'statm/resident' and p != 0 for n, p in got),
             'statm/resident under the program\'s pid')
    ck.check(all(len(e['args']) == 1 for e in cs), 'one value per C event')


def test_chrome_memory(ck, cyg, example, args):
    if args.sanitize not in (None, '', 'none'):
        raise Skip('--memory under b_sanitize=%s' % args.sanitize)
    cap, _ = record(cyg, 'm.cyg', [args.mem_prog], ['--memory'])
    mem = json_of(cyg, ['memory'], cap)['totals']
    data, _ = chrome(ck, cyg, cap)
    heap = [e for e in data['traceEvents'] if e['ph'] == 'C' and e['name'] == 'heap/live_bytes']
    ck.check(len(heap) > 0, 'a heap/live_bytes counter track')
    if heap:
        ck.eq(max(e['args']['bytes'] for e in heap), mem['peak_bytes'],
              'the heap track peaks at peak_bytes')
    ck.eq(len([e for e in data['traceEvents'] if e['ph'] == 'i']), 0,
          'no instant events without --allocations')
    data, _ = chrome(ck, cyg, cap, ['--allocations'])
    inst = [e for e in data['traceEvents'] if e['ph'] == 'i']
    allocs = [e for e in inst if 'size' in e['args']]
    ck.eq(len(inst), mem['allocations'] + mem['frees'] + mem['untracked_frees'],
          'one i event per allocation and free')
    ck.eq(len(allocs), mem['allocations'], 'i events with a size == allocations')
    ck.eq(sum(e['args']['size'] for e in allocs), mem['allocated_bytes'],
          'their sizes add up to allocated_bytes')
    ck.check(all(re.match(r'^0x[0-9a-f]+$', e['args']['address']) for e in inst),
             'every i event has its address')


def vm_hwm(pid):
    """The peak RSS (KiB) of the process's current image, None once gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmHWM:'):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def export_rss(cyg, cap):
    """Export cap to a pipe; return (the X lines, the export's peak RSS in
    KiB).  Not ru_maxrss: a child forked from this Python keeps the RSS of
    the copy it was before exec as its maximum; VmHWM is the image's own,
    read while the output streams (the export cannot end before it is
    read, and its peak is reached early)."""
    cmd = [cyg.exe, 'export', '--format=chrome', cap]
    print('$ ' + ' '.join(cmd))
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         stdin=subprocess.DEVNULL)
    n = lines = 0
    hwm = None
    for line in p.stdout:
        lines += 1
        # calls: not the waits for the collector (a slice of their own
        # when a loaded machine fills the ring)
        if b'"ph":"X"' in line and b'"cat":"cygprof"' not in line:
            n += 1
        if lines % 20000 == 1:
            hwm = vm_hwm(p.pid) or hwm
    p.stdout.close()
    if p.wait() != 0:
        raise Failure('export of %s failed: %s' % (cap, describe_status(p.returncode)))
    if hwm is None:
        raise Failure('could not read the VmHWM of the export')
    return n, hwm


def test_chrome_stream(ck, cyg, example, args):
    pidfile = os.path.join(cyg.workdir, 'pid')
    rss = []
    for k in (100000, 1000000):
        cap, _ = record(cyg, 'l%d.cyg' % k, [args.longrun, pidfile, '2', str(k)], ['--timeline'])
        report = json_of(cyg, ['report'], cap)
        calls = sum(f['calls'] for f in report['functions'])
        events = sum(t['events'] for t in report['threads'])
        n, kib = export_rss(cyg, cap)
        ck.eq(n, calls, 'k=%d: X events == calls' % k)
        print('k=%d: %d events, export peak RSS %d KiB' % (k, events, kib))
        rss.append((events, kib))
    (e1, r1), (e2, r2) = rss
    ck.check(e2 >= 9 * e1, '10x the events (%d, %d)' % (e1, e2))
    ck.check(r2 <= 1.5 * r1, 'peak RSS with 10x the events within 1.5x: %d KiB vs %d KiB' % (r2, r1))
    ck.check(r2 * 1024 < e2 * 16 / 2,
             'peak RSS %d KiB is far below the %d MiB the events would take' %
             (r2, e2 * 16 >> 20))


def folded(ck, cyg, cap, opts=()):
    cp = export(cyg, cap, 'folded', opts)
    lines = cp.out.splitlines()
    bad = [x for x in lines if not FOLDED_LINE.match(x)]
    ck.eq(bad[:5], [], 'folded lines of the form "a;b;c VALUE" (%s)' % ' '.join(opts))
    ck.check(all(int(x.rsplit(' ', 1)[1]) > 0 for x in lines if FOLDED_LINE.match(x)),
             'no zero weights (%s)' % ' '.join(opts))
    ck.eq(cp.err, '', 'nothing on stderr (%s)' % ' '.join(opts))
    return {x.rsplit(' ', 1)[0]: int(x.rsplit(' ', 1)[1]) for x in lines if FOLDED_LINE.match(x)}, cp


FLAMEGRAPH_TOOLS = ('flamegraph.pl', 'inferno-flamegraph')


def flamegraph(ck, cyg, text, what):
    for tool in FLAMEGRAPH_TOOLS:
        exe = shutil.which(tool)
        if not exe:
            continue
        path = os.path.join(cyg.workdir, 'f.folded')
        with open(path, 'w') as f:
            f.write(text)
        cp = run([exe, path])
        ck.check(cp.returncode == 0 and '<svg' in cp.out,
                 '%s reads the folded stacks (%s)' % (tool, what))


def test_folded_flamegraph(ck, cyg, example, args):
    """flamegraph.pl or inferno-flamegraph (each one installed) reads the
    folded stacks of calls, and of the samples and the memory where those
    can be recorded here (as export-folded-samples and -memory)."""
    if not any(shutil.which(t) for t in FLAMEGRAPH_TOOLS):
        raise Skip('neither %s is installed' % ' nor '.join(FLAMEGRAPH_TOOLS))
    cap, _ = record(cyg, 'calls.cyg', [example], [])
    _, cp = folded(ck, cyg, cap)
    flamegraph(ck, cyg, cp.out, 'self weights of calls')
    cap, cp = record(cyg, 's.cyg', [args.sampling_prog], ['--sample'])
    if 'sampling off' in cp.err:
        print('note: perf sampling is not available here: no samples to draw')
    else:
        _, out = folded(ck, cyg, cap, ['--weight', 'samples'])
        flamegraph(ck, cyg, out.out, 'samples weights')
    if args.sanitize not in (None, '', 'none'):
        print('note: --memory under b_sanitize=%s: no allocations to draw' % args.sanitize)
    else:
        cap, _ = record(cyg, 'm.cyg', [args.mem_prog], ['--memory'])
        _, cp = folded(ck, cyg, cap, ['--memory', 'peak'])
        flamegraph(ck, cyg, cp.out, '--memory peak')


def test_folded(ck, cyg, example, args):
    for name, prog in (('calls', [example]), ('threads', [args.threads, '1000'])):
        cap, _ = record(cyg, name + '.cyg', prog, [])
        report = json_of(cyg, ['report'], cap)
        self_w, cp = folded(ck, cyg, cap)
        ck.eq(sum(self_w.values()), report['total_self_ns'], '%s: self weights == total_self_ns' % name)
        w2, _ = folded(ck, cyg, cap, ['--weight', 'self'])
        ck.eq(w2, self_w, '%s: --weight self is the default' % name)
        calls_w, _ = folded(ck, cyg, cap, ['--weight', 'calls'])
        ck.eq(sum(calls_w.values()), sum(f['calls'] for f in report['functions']),
              '%s: calls weights == the report\'s calls' % name)
        per_fn = collections.Counter()
        for path, w in calls_w.items():
            per_fn[path.split(';')[-1]] += w
        ck.eq(dict(per_fn), {f['name']: f['calls'] for f in report['functions']},
              '%s: calls per innermost frame == calls per function' % name)
        if name == 'calls':
            ck.eq(calls_w, {'main': 1, 'main;a': 3, 'main;a;b': 6, 'main;a;b;c': 30},
                  'calls: the call paths and their calls')
        else:
            ck.eq(per_fn['work'], 4001, 'threads: work merged over the threads')
    cap, _ = record(cyg, 'ts.cyg', [example], ['--time=sampled'])
    w, _ = folded(ck, cyg, cap)
    ck.eq(w, {'main': 1, 'main;a': 3, 'main;a;b': 6, 'main;a;b;c': 30},
          '--time=sampled without samples: calls by default')
    cp = export(cyg, cap, 'folded', ['--weight', 'self'], ok=False)
    expect_error(ck, cp, 'self weights of a --time=sampled capture', 1)
    ck.check('--time=sampled' in cp.err, 'it says the capture has no times: %r' % cp.err)


def test_folded_samples(ck, cyg, example, args):
    cap, cp = record(cyg, 's.cyg', [args.sampling_prog], ['--sample'])
    if 'sampling off' in cp.err:
        raise Skip('perf sampling is not available here: %s' % cp.err.strip().splitlines()[0])
    samples = json_of(cyg, ['samples'], cap)['samples']
    ck.check(len(samples) > 10, 'the capture has samples (%d)' % len(samples))
    w, out = folded(ck, cyg, cap, ['--weight', 'samples'])
    ck.eq(sum(w.values()), len(samples), 'samples weights == the capture\'s samples')
    spin = sum(v for k, v in w.items() if k.split(';')[-1] == 'spin')
    ck.check(spin * 2 > len(samples), 'most samples end in spin (%d of %d)' % (spin, len(samples)))
    ck.check(any(k.startswith('__libc_start_call_main;main;') or ';main;' in k for k in w),
             'stacks run from outermost to innermost: main before spin')
    cap, cp = record(cyg, 'st.cyg', [args.sampling_prog], ['--sample', '--time=sampled'])
    w2, _ = folded(ck, cyg, cap)
    ck.eq(sum(w2.values()), len(json_of(cyg, ['samples'], cap)['samples']),
          '--time=sampled with samples: samples by default')


def test_folded_memory(ck, cyg, example, args):
    if args.sanitize not in (None, '', 'none'):
        raise Skip('--memory under b_sanitize=%s' % args.sanitize)
    cap, _ = record(cyg, 'm.cyg', [args.mem_prog], ['--memory'])
    mem = json_of(cyg, ['memory'], cap)['totals']
    for key, want in (('allocated', 'allocated_bytes'), ('leaked', 'leaked_bytes'),
                      ('peak', 'peak_bytes')):
        w, cp = folded(ck, cyg, cap, ['--memory', key])
        ck.eq(sum(w.values()), mem[want], '--memory %s: the sum == %s' % (key, want))
        if key == 'leaked':
            ck.eq(sorted(w.values()), [385], 'the leaks: leaker()\'s 5 x 77 bytes on one stack')
            ck.check(all(k.split(';')[-1] == 'leaker' for k in w),
                     'leaked stacks end in leaker, allocator frames left out: %s' % list(w))


def test_errors(ck, cyg, example, args):
    cap, _ = record(cyg, 'p.cyg', [example], [])
    # "-" is standard output: the same bytes as without -o, and no file "-"
    dash = os.path.join(cyg.workdir, '-')
    for fmt in ('folded', 'chrome', 'callgrind', 'pprof'):
        plain = run([cyg.exe, 'export', '--format=' + fmt, cap], cwd=cyg.workdir)
        cp = run([cyg.exe, 'export', '--format=' + fmt, '-o', '-', cap], cwd=cyg.workdir)
        ck.eq(describe_status(cp.returncode), 'exit 0', 'export --format=%s -o -: exit' % fmt)
        if fmt == 'chrome':
            ck.eq(json.loads(cp.out)['traceEvents'] and True, True,
                  'export --format=chrome -o -: a trace on standard output')
        else:
            ck.check(len(cp.stdout) > 0 and cp.stdout == plain.stdout,
                     'export --format=%s -o -: standard output, as without -o' % fmt)
        ck.check(not os.path.exists(dash), 'export --format=%s -o -: no file named "-"' % fmt)
    cp = run([cyg.exe, 'export', '--format=gmon', '-o', '-', cap], cwd=cyg.workdir)
    expect_error(ck, cp, 'export --format=gmon -o -', 2)
    ck.check(not os.path.exists(dash), 'gmon -o -: no file named "-"')
    cp = run([cyg.exe, 'html', '-o', '-', cap], cwd=cyg.workdir)
    ck.eq(describe_status(cp.returncode), 'exit 0', 'html -o -: exit')
    ck.check(cp.out.startswith('<!DOCTYPE html>') and cp.out.rstrip().endswith('</html>'),
             'html -o -: the whole page on standard output')
    ck.check(not os.path.exists(dash) and not os.path.exists(
        os.path.join(cyg.workdir, 'report.html')), 'html -o -: no file written')
    cp = export(cyg, cap, 'folded', ['--weight', 'bogus'], ok=False)
    expect_error(ck, cp, 'unknown --weight key', 2)
    cp = export(cyg, cap, 'folded', ['--memory', 'self'], ok=False)
    expect_error(ck, cp, 'unknown --memory key', 2)
    cp = export(cyg, cap, 'folded', ['--weight', 'samples'], ok=False)
    expect_error(ck, cp, 'samples of a capture without', 1)
    ck.check('has no samples' in cp.err and '--sample' in cp.err,
             'it names --sample: %r' % cp.err)
    cp = export(cyg, cap, 'folded', ['--memory', 'leaked'], ok=False)
    expect_error(ck, cp, '--memory of a capture without', 1)
    ck.check('--memory' in cp.err, 'it names --memory: %r' % cp.err)
    out = os.path.join(cyg.workdir, 'out.json')
    with open(out, 'w') as f:
        f.write('precious\n')
    cp = export(cyg, cap, 'chrome', ['-o', out], ok=False)
    expect_error(ck, cp, 'a file at -o that is not a chrome trace', 1)
    with open(out) as f:
        ck.eq(f.read(), 'precious\n', 'the file is kept')
    cp = export(cyg, cap, 'chrome', ['-o', out, '-f'], ok=False)
    ck.eq(cp.returncode, 0, '-f replaces it')
    with open(out) as f:
        ck.check(f.read().startswith(MAGIC), 'a chrome trace is there now')
    cp = export(cyg, cap, 'chrome', ['-o', out], ok=False)
    ck.eq(cp.returncode, 0, 'an earlier chrome output is replaced without -f')
    with open(out) as f:
        json.load(f)
    # folded stacks have no mark: an earlier output is known by its lines
    fold = os.path.join(cyg.workdir, 'out.folded')
    cp = export(cyg, cap, 'folded', ['-o', fold])
    with open(fold) as f:
        first = f.read()
    ck.check(first.endswith('\n'), 'the folded file ends with a newline')
    cp = export(cyg, cap, 'folded', ['-o', fold], ok=False)
    ck.eq(cp.returncode, 0, 'an earlier folded output is replaced without -f: %s' % cp.err.strip())
    with open(fold) as f:
        ck.eq(f.read(), first, 'the same folded stacks again')
    for text in ('precious\n', 'a;b 12\nnot folded\n', 'a;b 12'):
        with open(fold, 'w') as f:
            f.write(text)
        cp = export(cyg, cap, 'folded', ['-o', fold], ok=False)
        expect_error(ck, cp, 'folded over %r without -f' % text, 1)
        ck.check('not folded stacks' in cp.err, 'it says what the file is not: %r' % cp.err)
        with open(fold) as f:
            ck.eq(f.read(), text, 'the file is kept')
    cp = export(cyg, cap, 'folded', ['-o', fold, '-f'])
    ck.eq(cp.returncode, 0, 'folded -f replaces it')


def test_signal(ck, cyg, example, args):
    """An export ended by SIGINT, SIGTERM or SIGHUP while it writes leaves
    no temporary file and no output, and dies of the signal."""
    pidfile = os.path.join(cyg.workdir, 'pid')
    cap, _ = record(cyg, 'big.cyg', [args.longrun, pidfile, '2', '1000000'], ['--timeline'])
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        d = os.path.join(cyg.workdir, 'out-%d' % sig)
        os.mkdir(d)
        out = os.path.join(d, 'trace.json')

        def dfl():
            for s_ in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                signal.signal(s_, signal.SIG_DFL)
        p = subprocess.Popen([cyg.exe, 'export', '--format=chrome', '-o', out, cap],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, preexec_fn=dfl)
        # wait for the temporary file (the export is writing), then signal
        deadline = time.monotonic() + cygtest.TIMEOUT
        seen = []
        while p.poll() is None and time.monotonic() < deadline and not seen:
            seen = [n for n in os.listdir(d) if n.startswith('.cygprof-')]
            if not seen:
                time.sleep(0.001)
        if not seen:
            p.kill()
            p.wait()
            raise Failure('%s: the export ended before its temporary file was seen (exit %s)'
                          % (sig.name, p.returncode))
        p.send_signal(sig)
        _, err = p.communicate(timeout=cygtest.TIMEOUT)
        ck.eq(p.returncode, -sig, '%s: the export died of it (%s)' % (sig.name, err.decode().strip()))
        ck.eq(sorted(os.listdir(d)), [], '%s: no temporary file and no output left' % sig.name)


def test_full_disk(ck, cyg, example, args):
    """An export onto a full disk fails in one line that names the output
    and ENOSPC, not the capture, and leaves no temporary file."""
    pidfile = os.path.join(cyg.workdir, 'pid')
    cap, _ = record(cyg, 'full.cyg', [args.longrun, pidfile, '1', '100000'], ['--timeline'])
    for fmt in ('chrome', 'folded', 'callgrind', 'pprof'):
        with open('/dev/full', 'wb') as full:
            p = subprocess.run([cyg.exe, 'export', '--format=' + fmt, cap], stdout=full,
                               stderr=subprocess.PIPE, timeout=cygtest.TIMEOUT)
        err = p.stderr.decode().strip()
        ck.eq(p.returncode, 1, '%s onto /dev/full: exit 1 (%s)' % (fmt, err))
        ck.check(len(err.splitlines()) == 1 and 'standard output' in err and cap not in err,
                 '%s: one line naming standard output, not the capture: %r' % (fmt, err))
    # -o on a full file system: a small tmpfs where this may mount one
    mnt = os.path.join(cyg.workdir, 'tmpfs')
    os.mkdir(mnt)
    m = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if m.returncode != 0:
        print('not checked: -o on a full tmpfs (mount: %s)' % m.stderr.decode().strip())
        return
    try:
        out = os.path.join(mnt, 'trace.json')
        p = run([cyg.exe, 'export', '--format=chrome', '-o', out, cap])
        ck.eq(p.returncode, 1, '-o on a full tmpfs: exit 1')
        ck.eq(p.err.strip(), 'cygprof: export: %s: %s' % (out, os.strerror(28)),
              'the error names the output and ENOSPC')
        ck.eq(os.listdir(mnt), [], 'no temporary file and no output left')
    finally:
        subprocess.run(['umount', mnt])


def test_size_guard(ck, cyg, example, args):
    cap, _ = record(cyg, 'big.data', [args.big_prog], ['--timeline'])
    for opts in ([], ['-F', 'main']):
        what = 'export --format=chrome %s' % ' '.join(opts)
        cp = export(cyg, cap, 'chrome', opts, ok=False)
        expect_error(ck, cp, what, 1)
        ck.check('(12004002 events)' in cp.err and 'past the' in cp.err and '-F' in cp.err,
                 '%s: refused with the whole estimate, suggesting -F: %r' % (what, cp.err))
    data, _ = chrome(ck, cyg, cap, ['-F', 'getCommand'])
    # (the waits for the collector in them are slices of their own)
    xs = collections.Counter(e['name'] for e in data['traceEvents'] if e.get('ph') == 'X'
                             and not e['name'].startswith('[cygprof:'))
    ck.eq(dict(xs), {'getCommand': 1000, 'lookup': 1000},
          'export -F getCommand: the X events per function')


TESTS = {
    'export-chrome-size-guard': test_size_guard,
    'export-chrome-timeline': test_chrome_timeline,
    'export-chrome-counters': test_chrome_counters,
    'export-chrome-memory': test_chrome_memory,
    'export-chrome-stream': test_chrome_stream,
    'export-folded': test_folded,
    'export-folded-samples': test_folded_samples,
    'export-folded-memory': test_folded_memory,
    'export-folded-flamegraph': test_folded_flamegraph,
    'export-chrome-folded-errors': test_errors,
    'export-chrome-signal': test_signal,
    'export-full-disk': test_full_disk,
}


def extra(ap):
    ap.add_argument('--threads')
    ap.add_argument('--longrun')
    ap.add_argument('--counters-prog')
    ap.add_argument('--mem-prog')
    ap.add_argument('--sampling-prog')
    ap.add_argument('--sanitize')
    ap.add_argument('--big-prog')


def call(fn, ck, cyg, example, args):
    for k in ('threads', 'longrun', 'counters_prog', 'mem_prog', 'sampling_prog', 'big_prog'):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    try:
        fn(ck, cyg, example, args)
    except Skip as e:
        print('SKIP %s: %s' % (args.test, e))
        sys.exit(cygtest.SKIP)


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'export', __doc__, extra=extra, call=call))
