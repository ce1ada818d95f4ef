#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of perf samples in `cygprof annotate` and in the gmon.out
histogram of `cygprof gprof --gmon-out`.

Usage:
  sample_views.py --cygprof CYGPROF --example PROG --test NAME
                  --annotate CYGPROF_ANNOTATE --plain PROG_PLAIN --dump PSAMPLES_DUMP
                  --source SRC [--skip REASON] [-v] [--keep]

PROG is tests/sampling/sampling-prog.c built with -finstrument-functions
(sampling-prog-cyg), PROG_PLAIN the same without (sampling-prog-plain), SRC
that source; with no argument it spins ~300 ms in spin(), then sleeps
200 ms in nap().  Each test records `--sample=1000` (skipped, exit 77,
where perf sampling is not available: "sampling off").

Tests:
  sampling-annotate `cygprof-annotate --all --format=json`: the samples of
                    all lines plus the unresolved ones are the capture's
                    (exactly, psamples-dump), likewise their sampled_ns;
                    at least 80% of those on SRC's lines on the lines of
                    spin() in SRC, and half of all,
                    the function list of SRC names spin with those
                    samples; nap()'s lines almost none; spin's sampled
                    time is the sum of the weights, no more than spin's
                    wall time allows.  The text output: the "%" column,
                    the line `x += i * 0.5;` with the JSON's count and
                    percentage.  A capture of the same program without
                    --sample: no "%" column, no sampled_ns keys.
  sampling-gmon     `cygprof gprof --gmon-out`: one histogram record whose
                    rate is the recorded rate (1000, the capture's
                    sample_hz) or, in a capture without that key, 1e9 /
                    the samples' mean weight (psamples-dump), and whose bins inside spin (nm -S, file addresses)
                    hold exactly the samples whose instruction is in spin
                    (their run-time addresses less the bias the program's
                    printed spin address gives), the sum of the bins the
                    samples in the executable; GNU gprof's flat profile
                    gives spin at least 80% of the self seconds, equal to
                    its samples / rate (to gprof's 0.01 s); the same for
                    the uninstrumented build (a histogram-only gmon.out).
                    Without --sample: no "histogram of" in the message
                    (the exact-time histogram, checked by the gprof suite).

Exit status: 0 passed, 1 failed, 77 skipped.
"""

import json
import os
import re
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status, nm_functions as symbols  # noqa: E402

SKIP = 77
SPIN_MS = 300
RATE = 1000
FRAME_IP = 2


class Skip(Exception):
    pass


def record(ck, cyg, prog, name, sample=True):
    cap = os.path.join(cyg.workdir, name)
    opts = ['-q'] + (['--sample=%d' % RATE] if sample else [])
    cp = run([cyg.exe, 'record', '-o', cap] + opts + ['--', prog])
    if sample and 'sampling off' in cp.err:
        raise Skip('perf sampling is not available here: %s' % cp.err.strip().splitlines()[0])
    if cp.returncode != 0:
        raise Failure('record %s: %s: %s' % (prog, describe_status(cp.returncode),
                                            cp.err.strip()))
    m = re.search(r'spin=(0x[0-9a-f]+)', cp.out)
    if not m:
        raise Failure('the program did not print its spin address: %r' % cp.out)
    return cap, int(m.group(1), 16)


def dump(ck, args, cap):
    cp = run([args.dump, cap])
    if cp.returncode != 0:
        raise Failure('psamples-dump: %s' % cp.err.strip())
    return json.loads(cp.out)


def spin_lines(src):
    """The first and last line of spin()'s definition in SRC."""
    first = last = None
    with open(src) as f:
        for i, text in enumerate(f, 1):
            if first is None and re.match(r'.*\bvoid spin\(double ms\)$', text.rstrip()):
                first = i
            elif first is not None and text.rstrip() == '}':
                last = i
                break
    if not first or not last:
        raise Failure('spin() not found in %s' % src)
    return first, last


def nap_lines(src):
    first = last = None
    with open(src) as f:
        for i, text in enumerate(f, 1):
            if first is None and re.match(r'.*\bvoid nap\(int ms\)$', text.rstrip()):
                first = i
            elif first is not None and text.rstrip() == '}':
                last = i
                break
    return first, last


def annotate(ck, args, opts):
    cp = run([args.annotate] + opts)
    if cp.returncode != 0:
        raise Failure('cygprof-annotate %s: %s: %s' % (' '.join(opts),
                                                       describe_status(cp.returncode),
                                                       cp.err.strip()))
    return cp.out


def test_annotate(ck, cyg, prog, args):
    cap, _ = record(ck, cyg, prog, 's.data')
    d = dump(ck, args, cap)
    ps = d['psamples']
    nsamples, weight = len(ps), sum(s['weight_ns'] for s in ps)
    if not ck.check(nsamples >= 20, 'at least 20 samples of %d ms spinning: %d' %
                    (SPIN_MS, nsamples)):
        return
    a = json.loads(annotate(ck, args, ['--all', '--format=json', cap]))
    tot = a['totals']
    ck.eq(tot.get('samples'), nsamples, 'totals.samples')
    ck.eq(tot.get('sampled_ns'), weight, 'totals.sampled_ns')
    on_lines = sum(l['samples'] for f in a['files'] for l in f['lines'])
    ns_lines = sum(l['sampled_ns'] for f in a['files'] for l in f['lines'])
    # samples in cygprof's runtime are overhead, on no line
    ck.eq(on_lines + tot.get('unresolved_samples', -1) + tot.get('overhead', {}).get('samples', -1),
          nsamples, 'samples on lines + unresolved_samples + overhead samples')
    ck.eq(ns_lines + tot.get('unresolved_sampled_ns', -1) +
          tot.get('overhead', {}).get('sampled_ns', -1), weight,
          'sampled_ns on lines + unresolved_sampled_ns + overhead sampled_ns')
    for f in a['files']:
        ck.eq(sum(l['samples'] for l in f['lines']), f['samples'], '%s: samples' % f['path'])
        ck.eq(sum(x['samples'] for x in f['functions']), f['samples'],
              '%s: samples of its functions' % f['path'])

    src = [f for f in a['files'] if f['path'].endswith('tests/sampling/sampling-prog.c')]
    if not ck.eq(len(src), 1, 'sampling-prog.c annotated'):
        return
    src = src[0]
    s0, s1 = spin_lines(args.source)
    n0, n1 = nap_lines(args.source)
    spin = [l for l in src['lines'] if s0 <= l['line'] <= s1]
    spin_n = sum(l['samples'] for l in spin)
    spin_ns = sum(l['sampled_ns'] for l in spin)
    # of the program's own lines: the start (loader, libc, the runtime) takes
    # a fixed number of samples, spin fewer on a loaded machine
    src_n = sum(l['samples'] for l in src['lines'])
    ck.check(spin_n * 100 >= 80 * src_n and spin_n * 2 >= nsamples,
             'at least 80%% of the samples on sampling-prog.c\'s lines on spin()\'s lines '
             '%d-%d (%d of %d), and half of all (%d)' % (s0, s1, spin_n, src_n, nsamples))
    nap_n = sum(l['samples'] for l in src['lines'] if n0 <= l['line'] <= n1)
    ck.check(nap_n * 10 <= nsamples, 'nap()\'s lines: at most 10%% of the samples: %d' % nap_n)
    fns = {x['name']: x for x in src['functions']}
    ck.check('spin' in fns and fns['spin']['samples'] * 100 >= 80 * nsamples,
             'the functions of sampling-prog.c: spin with most samples: %r' % src['functions'])
    # the weights are the 1 ms period (or near it); spin ran SPIN_MS of wall time
    ck.check(spin_n * 0.5e6 <= spin_ns <= spin_n * 2e6,
             'spin\'s sampled_ns (%d) about %d samples x 1 ms' % (spin_ns, spin_n))
    ck.check(spin_ns <= (SPIN_MS + 150) * 1e6, 'spin sampled for no more than its wall time'
             ' allows: %.1f ms' % (spin_ns / 1e6))

    # the text: a "%" column; the hot line with the JSON's count and share
    text = annotate(ck, args, ['--all', cap, 'sampling-prog.c'])
    ck.check(re.search(r'^\s+calls\s+entries\s+time\s+self\s+samples\s+%\s+line\s+source$', text,
                       re.M) is not None, 'text: the header has the "%" column')
    hot = max(src['lines'], key=lambda l: l['samples'])
    m = re.search(r'^.{32}\s*(\d+)\s+(\d+\.\d)%%\s+%d  ' % hot['line'], text, re.M)
    if ck.check(m is not None, 'text: line %d has its samples and %%' % hot['line']):
        ck.eq(int(m.group(1)), hot['samples'], 'text: samples of line %d' % hot['line'])
        ck.eq(m.group(2), '%.1f' % (hot['samples'] * 100.0 / nsamples),
              'text: %% of line %d' % hot['line'])
    ck.check(re.search(r'^Total: .*, %d samples \(' % nsamples, text, re.M) is not None,
             'text: the total names the samples')
    ck.check(re.search(r'^   \d+ samples? \(.* of all, .* sampled\): spin %d' % fns['spin']['samples']
                       if 'spin' in fns else '^$^', text, re.M) is not None,
             'text: the file names spin with its samples')

    # without samples: the columns and keys of before
    cap2, _ = record(ck, cyg, prog, 'n.data', sample=False)
    a2 = annotate(ck, args, ['--all', '--format=json', cap2])
    ck.check('sampled_ns' not in a2 and '"functions"' not in a2,
             'no sampled_ns or functions keys without samples')
    t2 = annotate(ck, args, ['--all', cap2])
    ck.check(re.search(r'^\s+calls\s+entries\s+time\s+self\s+samples\s+line\s+source$', t2, re.M)
             is not None and 'samples (' not in t2, 'text without samples: the old header')


def read_gmon(path):
    """The histogram records [(low, high, nbins, rate, bins)] of a gmon.out."""
    with open(path, 'rb') as f:
        b = f.read()
    if b[:4] != b'gmon':
        raise Failure('%s: not a gmon.out file' % path)
    off, hists = 20, []
    while off < len(b):
        tag = b[off]
        off += 1
        if tag == 0:
            low, high, n, rate = struct.unpack_from('<QQII', b, off)
            off += 40
            hists.append((low, high, n, rate, list(struct.unpack_from('<%dH' % n, b, off))))
            off += 2 * n
        elif tag == 1:
            off += 20
        else:
            raise Failure('%s: bad tag %d' % (path, tag))
    return hists


FLAT_RE = re.compile(r'^\s*(\d+\.\d+)\s+(\d+\.\d+)\s+(\d+\.\d+)(?:\s+\d+\s+\S+\s+\S+)?\s+(\S+)$')


def gprof_flat(ck, exe, gmon):
    cp = run(['gprof', '-b', '-p', exe, gmon])
    if cp.returncode != 0:
        raise Failure('gprof: %s: %s' % (describe_status(cp.returncode), cp.err.strip()))
    print(cp.out)
    m = re.search(r'Each sample counts as ([0-9.e-]+) seconds', cp.out)
    rows = {}
    for line in cp.out.splitlines():
        r = FLAT_RE.match(line)
        if r:
            rows[r.group(4)] = float(r.group(3))
    return (float(m.group(1)) if m else None), rows


def load_range(prog):
    """[lowest, highest) address of prog's PT_LOAD segments (readelf -lW)."""
    out = subprocess.run(['readelf', '-lW', prog], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    segs = [(int(f[2], 16), int(f[2], 16) + int(f[5], 16))
            for f in (line.split() for line in out.splitlines()) if f and f[0] == 'LOAD']
    if not segs:
        raise Failure('readelf finds no LOAD segment in %s' % prog)
    return min(a for a, _ in segs), max(e for _, e in segs)


def check_gmon(ck, cyg, prog, args, what):
    cap, spin_rt = record(ck, cyg, prog, what + '.data')
    d = dump(ck, args, cap)
    ps = d['psamples']
    weighted = [s['weight_ns'] for s in ps if s['weight_ns']]
    by_weight = int(1e9 * len(weighted) / sum(weighted) + 0.5) if weighted else 4000
    hz = re.search(r'^sample rate\s*:\s*(\d+) Hz', run([cyg.exe, 'info', cap]).out, re.M)
    rate = int(hz.group(1)) if hz else by_weight
    if hz:
        ck.eq(rate, RATE, '%s: the capture\'s sample rate' % what)
    syms = symbols(prog)
    if 'spin' not in syms:
        raise Failure('%s: nm finds no spin' % prog)
    bias = spin_rt - syms['spin'][0]
    # the samples whose own instruction is in spin, and in the executable: its
    # loaded segments, PLT and _init included (nm gives those no size)
    lo, hi = load_range(prog)
    in_spin = in_exe = 0
    for s in ps:
        if not s['frames'] or s['frames'][0][0] != FRAME_IP:
            continue
        pc = s['frames'][0][1] - bias
        if syms['spin'][0] <= pc < syms['spin'][0] + syms['spin'][1]:
            in_spin += 1
        if lo <= pc < hi:
            in_exe += 1
    if not ck.check(in_spin >= 20, '%s: at least 20 samples in spin: %d' % (what, in_spin)):
        return

    gmon = os.path.join(cyg.workdir, what + '.gmon')
    cp = run([cyg.exe, 'gprof', '--gmon-out', gmon, cap])
    if cp.returncode != 0:
        raise Failure('gprof --gmon-out: %s: %s' % (describe_status(cp.returncode),
                                                   cp.err.strip()))
    m = re.search(r'histogram of (\d+) samples? at (\d+) Hz', cp.out)
    if ck.check(m is not None, '%s: the message names the samples: %r' % (what, cp.out)):
        ck.eq(int(m.group(2)), rate, '%s: the rate in the message' % what)
    hists = read_gmon(gmon)
    if not ck.eq(len(hists), 1, '%s: one histogram record' % what):
        return
    low, high, n, hrate, bins = hists[0]
    ck.eq(hrate, rate, '%s: prof_rate = sample_hz, else 1e9 / the mean weight' % what)
    ck.eq(high - low, 2 * n, '%s: 2 bytes per bin' % what)
    a, size = syms['spin']
    got = sum(c for i, c in enumerate(bins) if a <= low + 2 * i and low + 2 * i + 2 <= a + size)
    ck.eq(got, in_spin, '%s: the bins in spin hold its samples' % what)
    if m:
        ck.eq(sum(bins), int(m.group(1)), '%s: the bins hold the message\'s samples' % what)
    ck.check(sum(bins) <= in_exe, '%s: no bin for a sample outside the executable' % what)

    each, rows = gprof_flat(ck, prog, gmon)
    ck.check(each is not None and abs(each - 1.0 / rate) <= 1e-6 + 1e-3 / rate,
             '%s: gprof: each sample counts as 1/%d s: %r' % (what, rate, each))
    total = sum(rows.values())
    ck.check('spin' in rows and rows['spin'] >= 0.8 * total - 0.01,
             '%s: gprof gives spin at least 80%% of %.2f self seconds: %r' % (what, total, rows))
    ck.check('spin' in rows and abs(rows['spin'] - in_spin / rate) <= 0.0051,
             '%s: gprof: spin\'s self seconds %.2f = %d samples / %d Hz' %
             (what, rows.get('spin', -1), in_spin, rate))
    ck.check(rows.get('spin', 0) <= (SPIN_MS + 150) / 1e3,
             '%s: spin no more than its wall time allows' % what)


def test_gmon(ck, cyg, prog, args):
    if not shutil.which('gprof') or not shutil.which('nm'):
        raise Skip('gprof or nm is not installed')
    check_gmon(ck, cyg, prog, args, 'cyg')
    check_gmon(ck, cyg, os.path.abspath(args.plain), args, 'plain')
    cap, _ = record(ck, cyg, prog, 'n.data', sample=False)
    cp = run([cyg.exe, 'gprof', '--gmon-out', os.path.join(cyg.workdir, 'n.gmon'), cap])
    ck.eq(cp.returncode, 0, 'gprof --gmon-out without samples')
    ck.check('histogram of' not in cp.out and 'wrote' in cp.out,
             'without samples: the exact-time histogram: %r' % cp.out)


TESTS = {'sampling-annotate': test_annotate, 'sampling-gmon': test_gmon}


def extra(ap):
    ap.add_argument('--annotate', required=True)
    ap.add_argument('--plain', required=True)
    ap.add_argument('--dump', required=True)
    ap.add_argument('--source', required=True)


def call(fn, ck, cyg, example, args):
    try:
        fn(ck, cyg, example, args)
    except Skip as e:
        print('SKIP: %s' % e)
        sys.exit(SKIP)


def main():
    return cygtest.driver_main(TESTS, 'samples', __doc__, extra=extra, call=call)


if __name__ == '__main__':
    sys.exit(main())
