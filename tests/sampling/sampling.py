#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof record --sample` (the collector's side).

Usage:
  sampling.py --cygprof CYGPROF --example PROG --test NAME [--skip REASON] [-v] [--keep]

PROG is tests/sampling/sampling-prog.c, built without -finstrument-functions
(sampling-prog-plain) for sampling-plain and sampling-off, with it
(sampling-prog-cyg) for the others.  The capture's samples are read through
`cygprof report`; the collector also writes them as JSON lines to
CYGPROF_SAMPLES_DUMP, which the collector-side checks read: an "info"
line ({"event", "cpus", "samples", "offcpu", "lost", "preempted_ns"}), then
"sample" lines ({"t_ns", "weight_ns", "thread_idx", "pid", "tid", "flags",
"stack", "frames": [[kind, addr], ...] innermost first}) and "offcpu" lines
({"start_ns", "end_ns", "thread_idx", "tid", "stack"}).

Tests:
  sampling-plain    --sample=1000 of a program that is not instrumented,
                    spinning ~300 ms in spin() then sleeping 200 ms in nap():
                    at least 10 samples and no more than the run can hold;
                    most samples' innermost frame (kind IP) lies in spin()
                    (nm -S, moved by the run-time address the program
                    prints), their other frames are return addresses (kind
                    RA), one of them in main; every IP a user address
                    (samples in the kernel, where perf allows them, keep
                    their user part); every weight is the 1 ms
                    period or near it; times never go back and lie within
                    the capture's duration; the off-CPU intervals of the
                    main thread add up to about 200 ms (150..400); the
                    capture is written and the program's exit status kept
  sampling-threads  an instrumented program: two threads spin, then a forked
                    child spins: samples of both threads and of the child's
                    pid; a sample of a thread the runtime registered carries
                    that thread's capture index (cygprof info), others none
  sampling-report   an instrumented program spinning ~300 ms in spin(), then
                    sleeping 200 ms in nap(): report --format=json charges
                    most samples to spin (its sampled CPU time at most its
                    exact self time, which is wall time), and about 200 ms
                    off CPU (150..400) with at most 3 samples on CPU to nap;
                    --tree puts them on the call paths main/spin and
                    main/nap; the uninstrumented function where nap slept
                    is listed under nap; meta sample_event, sample_hz and
                    the instrument 'sampling' in info
  sampling-libc     fill() spends 250 ms in libc's memset: most samples are
                    charged to fill, and most of fill's are listed as
                    memset under the caller fill
  sampling-timesampled  record --time=sampled --sample --no-cpu: the times
                    are the perf samples' (CPU and off-CPU), counts main,
                    spin and nap exactly once, and spin gets most samples
  sampling-import-perf-real
                    the README's commands with the real perf: perf record -k
                    CLOCK_MONOTONIC -g around cygprof record, perf script |
                    cygprof import-perf: the imported samples (perf prints
                    addresses relative to their object: moved by its bias)
                    put most of the program's samples in spin (skipped
                    where perf is missing or not allowed)
  sampling-off      CYGPROF_SAMPLE_FORCE_EPERM=1: exactly one warning line
                    "sampling off: ... perf_event_paranoid ...", exit 0, the
                    capture is written, no dump; --sample-event=cycles: where
                    the machine has no PMU the same kind of line naming the
                    missing event (else samples); bad --sample values and
                    events are usage errors (exit 2)
"""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status, info_json, nm_functions as symbols  # noqa: E402

SKIP = 77


class Skip(Exception):
    pass


def record(ck, cyg, prog, opts, args=(), env_extra=None, name='s.data'):
    cap = os.path.join(cyg.workdir, name)
    dump = os.path.join(cyg.workdir, name + '.json')
    env = dict(os.environ, CYGPROF_SAMPLES_DUMP=dump)
    env.update(env_extra or {})
    cmd = [cyg.exe, 'record', '-q', '-o', cap] + opts + ['--', prog] + list(args)
    print('$ ' + ' '.join(cmd))
    cp = subprocess.run(cmd, cwd=cyg.workdir, env=env, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=cygtest.TIMEOUT)
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    for line in cp.err.splitlines()[:20]:
        print('  stderr: ' + line)
    lines = []
    if os.path.exists(dump):
        with open(dump) as f:
            lines = [json.loads(x) for x in f]
    return cp, cap, lines


def split(lines):
    info = [x for x in lines if x['type'] == 'info']
    return (info[0] if info else None, [x for x in lines if x['type'] == 'sample'],
            [x for x in lines if x['type'] == 'offcpu'])


def printed(cp, key):
    vals = []
    for line in cp.out.splitlines():
        for w in line.split():
            if w.startswith(key + '='):
                vals.append(w.split('=', 1)[1])
    return vals


def sampled(ck, cyg, prog, opts, args=()):
    cp, cap, lines = record(ck, cyg, prog, opts, args)
    if 'sampling off' in cp.err:
        raise Skip('perf sampling is not available here: %s' % cp.err.strip().splitlines()[0])
    if cp.returncode != 0:
        raise Failure('record %s failed (%s): %s' % (' '.join(opts), describe_status(cp.returncode),
                                                     cp.err.strip()))
    info, samples, offcpu = split(lines)
    if not info:
        raise Failure('no CYGPROF_SAMPLES_DUMP written')
    return cp, cap, info, samples, offcpu


def check_times(ck, cyg, cap, samples, offcpu):
    duration = int(info_json(ck, cyg, cap)['meta']['duration_ns'])
    t = [s['t_ns'] for s in samples]
    ck.check(all(a <= b for a, b in zip(t, t[1:])), 'sample times never go back')
    ck.check(all(0 <= x <= duration for x in t),
             'sample times within the capture (0..%d): %s' % (duration, t[:3] + t[-3:]))
    ck.check(all(0 <= o['start_ns'] <= o['end_ns'] <= duration for o in offcpu),
             'off-CPU intervals within the capture and start <= end')
    return duration


def test_plain(ck, cyg, prog, args):
    cp, cap, info, samples, offcpu = sampled(ck, cyg, prog, ['--sample=1000'])
    ck.eq(cp.returncode, 0, 'record exit (the program exits 0)')
    ck.eq(info['event'], 'cpu-clock', 'event')
    syms = symbols(prog)
    at = printed(cp, 'spin')
    if not ck.eq(len(at), 1, 'the program printed where spin is'):
        return
    shift = int(at[0], 16) - syms['spin'][0]

    def inside(name, addr):
        start, size = syms[name]
        return start + shift <= addr < start + shift + size

    n = len(samples)
    # ~300 ms of spinning at 1000 Hz: a loaded machine gives the program less
    ck.check(10 <= n <= 600, '%d samples in 10..600' % n)
    ck.eq(info['samples'], n, 'info counts the samples dumped')
    # a sample in the kernel before the program reached user code (the exec)
    # has no user frame
    bare = [s for s in samples if not s['frames']]
    ck.check(len(bare) <= 2 + n // 20, '%d samples without a frame' % len(bare))
    ck.check(all(s['flags'] & 2 for s in bare), 'only kernel samples lack a frame')
    samples = [s for s in samples if s['frames']]
    ck.check(all(s['frames'][0][0] == 2 for s in samples), 'the innermost frame is of kind IP')
    ck.check(all(k == 1 for s in samples for k, _ in s['frames'][1:]),
             'the other frames are return addresses (kind RA)')
    # (only the innermost: perf's frame-pointer walk through code built
    # without frame pointers, such as libc, may read any word as a caller)
    ck.check(all(s['frames'][0][1] < 1 << 47 for s in samples),
             'the sampled IPs are user addresses (kernel samples keep their user part)')
    in_spin = [s for s in samples if inside('spin', s['frames'][0][1])]
    ck.check(len(in_spin) * 2 > n, '%d of %d samples in spin()' % (len(in_spin), n))
    with_main = [s for s in in_spin if any(inside('main', a) for _, a in s['frames'][1:])]
    ck.check(len(with_main) * 2 > len(in_spin),
             '%d of %d samples in spin() called from main()' % (len(with_main), len(in_spin)))
    ck.check(all(500000 <= s['weight_ns'] <= 20000000 for s in samples[n // 4:]),
             'weights near the 1 ms period: %s' % sorted(set(s['weight_ns'] for s in samples))[:8])
    pids = set(s['pid'] for s in samples)
    ck.eq(len(pids), 1, 'one process sampled')
    main = pids.pop() if pids else None
    check_times(ck, cyg, cap, samples, offcpu)
    off = sum(o['end_ns'] - o['start_ns'] for o in offcpu if o['tid'] == main)
    ck.check(150 * 10**6 <= off <= 400 * 10**6,
             'off-CPU time of the main thread %.1f ms in 150..400' % (off / 1e6))
    longest = max((o for o in offcpu if o['tid'] == main),
                  key=lambda o: o['end_ns'] - o['start_ns'], default=None)
    if ck.check(longest is not None, 'an off-CPU interval of the main thread'):
        ck.check(longest['end_ns'] - longest['start_ns'] >= 150 * 10**6,
                 'the nap is one interval: %d ns' % (longest['end_ns'] - longest['start_ns']))
    ck.check(os.path.getsize(cap) > 0, 'the capture is written')
    # the capture holds what the collector dumped; with no instrumented
    # function every sample is an uninstrumented one, spin the hottest
    rep = report_json(ck, cyg, cap)
    ck.eq(rep['samples']['samples'], info['samples'], 'the capture holds every sample')
    ck.eq(rep['samples']['offcpu_intervals'], info['offcpu'], 'and every off-CPU interval')
    leaves = rep['samples']['uninstrumented']
    spin = sum(x['samples'] for x in leaves if x['name'] == 'spin')
    ck.check(spin * 2 > info['samples'], 'report: %d of %d samples in spin' % (spin, info['samples']))


def test_threads(ck, cyg, prog, args):
    cp, cap, info, samples, offcpu = sampled(ck, cyg, prog, ['--sample=1000'], ['threads'])
    ck.eq(cp.returncode, 0, 'record exit')
    tids = [int(x) for x in printed(cp, 'tid')]
    child = [int(x) for x in printed(cp, 'child')]
    ck.eq(len(tids), 2, 'the program printed its two threads')
    ck.eq(len(child), 1, 'the program printed its child')
    seen_tids = set(s['tid'] for s in samples)
    for t in tids:
        ck.check(t in seen_tids, 'thread %d sampled' % t)
    if child:
        ck.check(any(s['pid'] == child[0] for s in samples), 'the forked child %d sampled' % child[0])
    data = info_json(ck, cyg, cap)
    idx = dict(((t['pid'], t['tid']), t['idx']) for t in data['threads'])
    for t in tids:
        ck.check((samples[0]['pid'] if samples else 0, t) in idx,
                 'thread %d registered by the runtime' % t)
    bad = [s for s in samples if s['thread_idx'] != idx.get((s['pid'], s['tid']))]
    ck.check(not bad, 'each sample carries the capture index of its thread (or none): %s' %
             bad[:3])
    ck.check(any(s['thread_idx'] is not None for s in samples),
             'samples of registered threads have their index')
    check_times(ck, cyg, cap, samples, offcpu)


def test_off(ck, cyg, prog, args):
    cp, cap, lines = record(ck, cyg, prog, ['--sample'],
                            env_extra={'CYGPROF_SAMPLE_FORCE_EPERM': '1'}, name='off.data')
    ck.eq(cp.returncode, 0, 'record exit with sampling forbidden')
    warn = [x for x in cp.err.splitlines() if 'sampling off' in x or 'perf' in x]
    ck.eq(len(warn), 1, 'one line about sampling: %s' % warn)
    if warn:
        ck.check(warn[0].startswith('cygprof: warning: sampling off: ') and
                 'perf_event_paranoid' in warn[0], 'it says why and what to change: %r' % warn[0])
    ck.eq(lines, [], 'no samples dumped')
    info = info_json(ck, cyg, cap)
    ck.eq(len(info['processes']), 1, 'the capture is written (its process)')

    cp, cap, lines = record(ck, cyg, prog, ['--sample-event=cycles'], name='cycles.data')
    ck.eq(cp.returncode, 0, 'record --sample-event=cycles exit')
    warn = [x for x in cp.err.splitlines() if 'sampling off' in x or 'perf' in x]
    if warn:
        ck.eq(len(warn), 1, 'one line about sampling: %s' % warn)
        ck.check("no 'cycles' event" in warn[0] or 'perf_event_paranoid' in warn[0],
                 'it says why: %r' % warn[0])
        ck.eq(lines, [], 'no samples dumped')
    else:
        info_line, samples, _ = split(lines)
        ck.check(info_line and info_line['event'] == 'cycles', 'cycles sampled (a PMU)')
    ck.eq(len(info_json(ck, cyg, cap)['processes']), 1, 'the capture is written')

    for bad in (['--sample=0'], ['--sample=100001'], ['--sample=x'], ['--sample-event=foo'],
                ['--sample-event']):
        p = run([cyg.exe, 'record', '-o', os.path.join(cyg.workdir, 'bad.data')] + bad +
                ['--', prog])
        ck.eq(p.returncode, 2, 'record %s exit' % ' '.join(bad))
        ck.eq(len(p.err.strip().splitlines()), 1, 'record %s: one error line' % ' '.join(bad))


def report_json(ck, cyg, cap, opts=()):
    p = run([cyg.exe, 'report', '--format=json'] + list(opts) + [cap])
    if p.returncode != 0:
        raise Failure('report --format=json failed: %s' % p.err.strip())
    return json.loads(p.out)


def fns(rep):
    return dict((f['name'], f) for f in rep['functions'])


def tree_rows(ck, cyg, cap):
    """--tree rows: (path, total, self, calls, sampled, offcpu) with times
    in ns, path as 'main/spin'; a row of an uninstrumented function samples
    found under a path ('main/nap/clock_nanosleep (libc.so.6, sampled)')
    has None for total, self and calls."""
    p = run([cyg.exe, 'report', '--tree', '--min-percent', '0', cap])
    if p.returncode != 0:
        raise Failure('report --tree failed: %s' % p.err.strip())
    unit = {'us': 1e3, 'ms': 1e6, 's': 1e9}
    rows, stack = [], []
    ck.check('SAMPLED     OFF-CPU' in p.out, '--tree has the SAMPLED and OFF-CPU columns')
    for line in p.out.splitlines():
        if line.startswith('#') or ' : ' not in line:
            continue
        left, right = line.split(' : ', 1)
        w = [x for x in left.split() if not x.endswith('%')]  # TOTAL%
        vals = []
        i = 0
        while i < len(w):
            if i + 1 < len(w) and w[i + 1] in unit:
                vals.append(int(float(w[i]) * unit[w[i + 1]]))
                i += 2
            else:
                vals.append(int(w[i]))
                i += 1
        depth = (len(right) - len(right.lstrip(' |+-'))) // 2
        name = right.lstrip(' |+-')
        if name.endswith('sampled)') or name.endswith('in the kernel)'):
            rows.append(('/'.join(stack[:depth] + [name]), None, None, None, vals[0], vals[1]))
            continue
        stack[depth:] = [name]
        rows.append(('/'.join(stack), vals[0], vals[1], vals[2], vals[3], vals[4]))
    return rows


def test_report(ck, cyg, prog, args):
    cp, cap, info, samples, offcpu = sampled(ck, cyg, prog, ['--sample=1000'])
    ck.eq(cp.returncode, 0, 'record exit')
    rep = report_json(ck, cyg, cap)
    total = rep['samples']['samples']
    f = fns(rep)
    ck.check(10 <= total <= 600, '%d samples in 10..600' % total)
    spin, nap = f.get('spin', {}), f.get('nap', {})
    ck.check(spin.get('samples', 0) * 2 > total,
             'spin: %d of %d samples' % (spin.get('samples', 0), total))
    # sampled time is CPU time, the exact self time wall time: on a loaded
    # machine the first is smaller, never much larger (one thread)
    if spin.get('self_ns'):
        ck.check(spin['sampled_ns'] <= 1.25 * spin['self_ns'] + 5e6,
                 'spin: sampled %.1f ms, at most its exact self %.1f ms' %
                 (spin['sampled_ns'] / 1e6, spin['self_ns'] / 1e6))
    ck.check(150e6 <= nap.get('offcpu_ns', 0) <= 400e6,
             'nap: %.1f ms off CPU in 150..400' % (nap.get('offcpu_ns', 0) / 1e6))
    ck.check(nap.get('samples', 99) <= 3, 'nap: %s samples on CPU, at most 3' % nap.get('samples'))
    ck.check(spin.get('offcpu_ns', 0) < 50e6, 'spin: %.1f ms off CPU, under 50' %
             (spin.get('offcpu_ns', 0) / 1e6))
    slept = [x for x in rep['samples']['uninstrumented'] if x['caller'] == 'nap']
    ck.check(slept and max(x['offcpu_ns'] for x in slept) >= 150e6,
             'the libc function nap slept in is listed under nap: %s' % slept)
    rows = dict((r[0], r) for r in tree_rows(ck, cyg, cap))
    ck.check('main/spin' in rows and rows['main/spin'][4] * 2 > total * 1e6 * 0.5,
             '--tree: main/spin sampled %s' % (rows.get('main/spin'),))
    ck.check('main/nap' in rows and rows['main/nap'][5] >= 150e6,
             '--tree: main/nap off CPU %s' % (rows.get('main/nap'),))
    under = [r for path, r in rows.items() if path.startswith('main/nap/') and r[1] is None]
    ck.check(under and max(r[5] for r in under) >= 150e6,
             '--tree: the libc function nap slept in is a row under main/nap: %s' % under)
    meta = info_json(ck, cyg, cap)['meta']
    ck.eq(meta.get('sample_event'), 'cpu-clock', 'meta sample_event')
    ck.eq(meta.get('sample_hz'), 1000, 'meta sample_hz (a number)')
    ck.check('sampling' in info_json(ck, cyg, cap)['instruments'], 'the instrument sampling')
    p = run([cyg.exe, 'report', '--flat', cap])
    ck.check('Samples (perf cpu-clock at 1000 Hz): %d samples' % total in p.out,
             'the flat report has the samples section')


def test_libc(ck, cyg, prog, args):
    cp, cap, info, samples, offcpu = sampled(ck, cyg, prog, ['--sample=1000'], ['libc'])
    ck.eq(cp.returncode, 0, 'record exit')
    rep = report_json(ck, cyg, cap)
    total = rep['samples']['samples']
    fill = fns(rep).get('fill', {})
    ck.check(fill.get('samples', 0) * 2 > total,
             'fill: %d of %d samples' % (fill.get('samples', 0), total))
    mem = sum(x['samples'] for x in rep['samples']['uninstrumented']
              if x['caller'] == 'fill' and 'memset' in x['name'])
    ck.check(mem * 2 > fill.get('samples', 0),
             '%d of fill\'s %d samples in memset under fill' % (mem, fill.get('samples', 0)))
    rows = tree_rows(ck, cyg, cap)
    under = sum(r[4] for r in rows if r[0].startswith('main/fill/') and r[1] is None and
                'memset' in r[0])
    ck.check(under * 2 > fill.get('sampled_ns', 0),
             '--tree: memset under main/fill, %.1f of fill\'s %.1f ms sampled' %
             (under / 1e6, fill.get('sampled_ns', 0) / 1e6))


def fmt_ms(ns):
    return '%.3f ms' % (ns / 1e6)


def test_timesampled(ck, cyg, prog, args):
    # --no-cpu: the perf samples' times (with the runtime's own CPU samples,
    # the default, those give the times: tests/cputime)
    cp, cap, info, samples, offcpu = sampled(ck, cyg, prog, ['--sample=1000', '--time=sampled',
                                                            '--no-cpu'])
    ck.eq(cp.returncode, 0, 'record exit')
    rep = report_json(ck, cyg, cap)
    f = fns(rep)
    ck.eq(rep.get('sampled_times'), True, 'the JSON says the times are sampled')
    ck.eq(rep['samples']['unplaced'], 0, 'every sample is on a call path')
    for name in ('main', 'spin', 'nap'):
        ck.eq(f.get(name, {}).get('calls'), 1, '%s calls' % name)
        # the times are the samples': self = CPU samples + off-CPU intervals
        ck.eq(f.get(name, {}).get('self_ns'),
              f.get(name, {}).get('sampled_ns', 0) + f.get(name, {}).get('offcpu_ns', 0),
              '%s self time is its sampled time and its off-CPU time' % name)
    ck.check(f['spin']['self_ns'] > 0, 'spin has a sampled self time: %s' % f['spin'])
    # nap sleeps 200 ms: its sampled time is that interval, as an exact capture's
    ck.check(150e6 <= f['nap']['total_ns'] <= 400e6, 'nap sampled total %s' % f['nap'])
    ck.eq(f['main']['total_ns'], f['main']['self_ns'] + f['spin']['total_ns'] + f['nap']['total_ns'],
          'main\'s sampled total is its self time and its callees\'')
    ck.eq(rep['total_self_ns'], sum(x['sampled_ns'] + x['offcpu_ns'] for x in rep['functions']),
          'total self = the functions\' sampled and off-CPU times')
    arcs = {(a['caller'], a['callee']): a for a in rep['arcs']}
    ck.eq(arcs[('main', 'spin')]['self_ns'], f['spin']['self_ns'], 'arc main -> spin: sampled time')
    ck.eq(arcs[('main', 'nap')]['self_ns'], f['nap']['self_ns'], 'arc main -> nap: sampled time')
    # the tree, gprof and callgrind show the same sampled figures
    p = run([cyg.exe, 'report', '--tree', cap])
    ck.check('# times: sampled' in p.out, 'the tree says its times are sampled')
    ck.check(re.search(r'^\s*[\d.]+%%\s+%s\s+%s\s+1\s.*: \+-spin$' % (re.escape(fmt_ms(f['spin']['total_ns'])),
                                                        re.escape(fmt_ms(f['spin']['self_ns']))),
                       p.out, re.M), 'the tree shows spin\'s sampled times:\n%s' % p.out)
    p = run([cyg.exe, 'gprof', '-b', cap])
    ck.check(re.search(r'^\s*[0-9.]+\s+[0-9.]+\s+%.2f\s+1\s.*\bspin$' % (f['spin']['self_ns'] / 1e9),
                       p.out, re.M), 'gprof: spin\'s sampled self seconds:\n%s' % p.out)
    cg = os.path.join(cyg.workdir, 'cg.out')
    p = run([cyg.exe, 'export', '--format=callgrind', '-o', cg, cap])
    ck.eq(p.returncode, 0, 'export callgrind')
    with open(cg) as fh:
        cgt = fh.read()
    sid = re.search(r'^c?fn=\((\d+)\) spin$', cgt, re.M)
    ck.check(sid and re.search(r'^fn=\(%s\)(?: spin)?\n\d+ %d$' % (sid.group(1), f['spin']['self_ns']),
                               cgt, re.M), 'callgrind: spin\'s self cost is its sampled time')
    ck.check(sid and re.search(r'^cfn=\(%s\)(?: spin)?\ncalls=1 \d+\n\d+ %d$'
                               % (sid.group(1), f['spin']['total_ns']), cgt, re.M),
             'callgrind: the call of spin costs its sampled total')
    ck.check('Time (ns, sampled)' in cgt, 'callgrind: the event says sampled')
    p = run([cyg.exe, 'annotate', '--format=json', cap, 'sampling-prog.c'])
    ck.eq(p.returncode, 0, 'annotate exit')
    lines = [ln for fl in json.loads(p.out)['files'] for ln in fl['lines']]
    ck.eq(sorted(ln['total_ns'] for ln in lines if ln.get('calls') == 1 and ln['total_ns'])[-2:],
          sorted([f['spin']['total_ns'], f['nap']['total_ns']]),
          'annotate: the lines that call spin and nap carry their sampled totals')
    # diff against an exact capture says the two sides' times differ in kind
    ex = os.path.join(cyg.workdir, 'exact.data')
    p = run([cyg.exe, 'record', '-q', '-o', ex, '--', prog])
    ck.eq(p.returncode, 0, 'exact record')
    p = run([cyg.exe, 'diff', ex, cap])
    ck.check('# times: OLD exact, NEW sampled' in p.out, 'diff says NEW is sampled:\n%s' % p.out[:600])
    # (the sampled side counts nap's time asleep: the exact side keeps it
    # with --times=wall, its default being CPU time)
    p = run([cyg.exe, 'diff', '--format=json', '--times=wall', cap, ex])
    d = json.loads(p.out)
    ck.eq((d['old']['times'], d['new']['times']), ('sampled', 'exact'), 'diff JSON: the sides\' times')
    nap = [r for r in d['functions'] if r['name'] == 'nap']
    ck.check(nap and abs(nap[0]['total_ns']['relative']) < 0.5,
             'nap\'s total compares like with like (not -100%%): %s' % nap)
    total = rep['samples']['samples']
    ck.check(f.get('spin', {}).get('samples', 0) * 2 > total, 'spin gets most of %d samples' % total)
    ck.check(f.get('nap', {}).get('offcpu_ns', 0) >= 150e6, 'nap off CPU: %s' % f.get('nap'))
    p = run([cyg.exe, 'report', '--flat', cap])
    ck.check('Times are sampled' in p.out and 'not measured' not in p.out,
             'the report says the times are sampled')
    ck.check('Ts/call' not in p.out, 'no Ts/call unit')


def test_import_real(ck, cyg, prog, args):
    import shutil
    perf = shutil.which('perf')
    if not perf:
        raise Skip('perf is not installed')
    cap = os.path.join(cyg.workdir, 'run.data')
    pdata = os.path.join(cyg.workdir, 'perf.data')
    p = run([perf, 'record', '-q', '-k', 'CLOCK_MONOTONIC', '-g', '-o', pdata, '--',
             cyg.exe, 'record', '-q', '-o', cap, '--', prog])
    if p.returncode != 0 or not os.path.exists(pdata):
        raise Skip('perf record does not work here: %s' % p.err.strip()[:200])
    ps = subprocess.run([perf, 'script', '-i', pdata], stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, timeout=cygtest.TIMEOUT)
    ck.eq(ps.returncode, 0, 'perf script exit')
    cp = subprocess.run([cyg.exe, 'import-perf', cap], input=ps.stdout, stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE, timeout=cygtest.TIMEOUT)
    out = cp.stdout.decode()
    print(out.strip(), cp.stderr.decode().strip())
    ck.eq(cp.returncode, 0, 'import-perf exit')
    rep_ = report_json(ck, cyg, cap)
    sm = rep_['samples']
    ck.eq(sm['imported_samples'], sm['samples'], 'every sample is imported')
    ck.check(sm['samples'] >= 10, '%d samples imported' % sm['samples'])
    spin = fns(rep_).get('spin', {}).get('samples', 0)
    ck.check(spin * 2 > sm['samples'], 'spin: %d of %d imported samples' % (spin, sm['samples']))


RUNTIME_NAMES = ('cyg_', 'enter_clock', 'exit_clock', 'cyg-hooks.c', '__rdtsc', 'libcygprof')


def test_overhead(ck, cyg, prog, args):
    # 8 rounds of fib(25), 1e6 loop iterations: about 8 million calls
    cp, cap, info, samples, offcpu = sampled(ck, cyg, prog, ['--sample=1000'], ['8', '1000000'])
    ck.eq(cp.returncode, 0, 'record exit')
    rep = report_json(ck, cyg, cap)
    sm = rep['samples']
    ov = sm['overhead']['samples']
    charged = sum(x.get('samples', 0) for x in rep['functions'])
    # an uninstrumented leaf under an instrumented caller is in that caller's samples
    charged += sum(x['samples'] for x in sm['uninstrumented'] if x['caller'] is None)
    ck.check(ov > 0, 'some samples are overhead (%d of %d)' % (ov, sm['samples']))
    ck.eq(ov + charged, sm['samples'], 'overhead + charged samples = all samples')
    top = max(rep['functions'], key=lambda x: x.get('samples', 0))
    ck.eq(top['name'], 'leaf', 'the function with most samples')
    outs = {}
    for name, cmd in [('report', ['report', cap]), ('report-tree', ['report', '--tree', cap]),
                      ('report-json', ['report', '--format=json', cap]),
                      ('samples', ['samples', '--depth', '50', cap]),
                      ('annotate', ['annotate', cap]),
                      ('folded', ['export', '--format=folded', '--weight=samples', cap]),
                      ('html', ['html', '-o', os.path.join(cyg.workdir, 'r.html'), cap])]:
        p = run([cyg.exe] + cmd)
        ck.eq(p.returncode, 0, '%s exit: %s' % (name, p.err.strip()[:200]))
        outs[name] = p.out
    with open(os.path.join(cyg.workdir, 'r.html')) as f:
        outs['html'] += f.read()
    for name, out in outs.items():
        bad = [w for w in RUNTIME_NAMES if w in out]
        ck.check(not bad, '%s names nothing of the runtime: %s' % (name, bad))
    ck.check('Profiler overhead: %d samples' % ov in outs['report'], 'the report\'s overhead line')
    ck.check('[profiler overhead] %d' % ov in outs['folded'].splitlines(), 'folded overhead line')
    fib = sum(1 for line in outs['samples'].splitlines() if '[profiler overhead] <- fib' in line)
    ck.check(fib * 4 >= ov, 'hook samples placed under fib: %d of %d overhead samples' % (fib, ov))


TESTS = {'sampling-import-perf-nopie': test_import_real, 'sampling-overhead': test_overhead, 'sampling-plain': test_plain, 'sampling-import-perf-real': test_import_real, 'sampling-report': test_report, 'sampling-libc': test_libc,
         'sampling-timesampled': test_timesampled, 'sampling-threads': test_threads,
         'sampling-off': test_off}


def call(fn, ck, cyg, example, args):
    try:
        fn(ck, cyg, example, args)
    except Skip as e:
        print('SKIP: %s' % e)
        sys.exit(SKIP)


def main():
    return cygtest.driver_main(TESTS, 'sampling', __doc__, call=call)


if __name__ == '__main__':
    sys.exit(main())
