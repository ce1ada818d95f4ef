#!/usr/bin/env python3
"""bitflip.py - how cygprof reacts to captures with random bit flips.

Not a test: a measurement (see bench/README.md).  It records (or takes) a
set of captures, then for each of N trials copies one of them, flips 1 to 4
random bits at random offsets, and runs the readers on the damaged copy:
`cygprof report --format=json`, `cygprof info --format=json` and, on memory
captures, `cygprof memory --format=json`.  Each trial is classified by the
worst outcome over its commands:

  CRASH          killed by a signal (or a sanitizer report on stderr)
  HANG           did not finish within the timeout
  SILENT CHANGE  exit 0, nothing on stderr, output different from the
                 undamaged capture's
  warning        exit 0, something on stderr (output may differ)
  error          non-zero exit with a one-line message (more lines: noted)
  identical      exit 0, same output, same stderr as the undamaged capture

Usage:
  python3 bench/bitflip.py --cygprof build/cli/cygprof --build build --flips 10000
  python3 bench/bitflip.py --cygprof B/cli/cygprof --captures a.data b.data --flips 300 --seed 1

Exit status: 0, or 1 with --fail-on-silent when any SILENT CHANGE, CRASH or
HANG was seen (the e2e test uses it).
"""
import argparse
import collections
import concurrent.futures
import os
import random
import shutil
import subprocess
import sys
import tempfile

ORDER = ['CRASH', 'HANG', 'SILENT CHANGE', 'warning', 'error', 'identical']


def run(cmd, timeout):
    """Run a reader; the capture's path (the last argument) reads as CAP in
    its output, so that trials in different directories compare."""
    try:
        cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None
    path = cmd[-1].encode()
    cp.stdout = cp.stdout.replace(path, b'CAP')
    cp.stderr = cp.stderr.replace(path, b'CAP')
    return cp


def commands(cyg, path, memory):
    cmds = [[cyg, 'report', '--format=json', path], [cyg, 'info', '--format=json', path]]
    if memory:
        cmds.append([cyg, 'memory', '--format=json', path])
    return cmds


def outcome(cp, base):
    """Classify one command against the undamaged capture's result."""
    if cp is None:
        return 'HANG', ''
    err = cp.stderr.decode('utf-8', 'replace')
    if cp.returncode < 0 or 'Sanitizer' in err or 'runtime error:' in err:
        return 'CRASH', err.strip()[:200]
    if cp.returncode != 0:
        lines = [l for l in err.splitlines() if l.strip()]
        return 'error', err.strip()[:200] + ('' if len(lines) == 1 else ' [%d lines]' % len(lines))
    if cp.stdout == base.stdout and cp.stderr == base.stderr:
        return 'identical', ''
    if cp.stderr != base.stderr and err.strip():
        return 'warning', err.strip()[:200]
    return 'SILENT CHANGE', ''


def trial(args, cap, data, bases, idx, rng_seed):
    rng = random.Random(rng_seed)
    buf = bytearray(data)
    flips = []
    for _ in range(rng.randint(1, 4)):
        off = rng.randrange(len(buf))
        bit = rng.randrange(8)
        buf[off] ^= 1 << bit
        flips.append((off, bit))
    d = tempfile.mkdtemp(prefix='bitflip-', dir=args.tmp)
    path = os.path.join(d, 'cap.data')  # the same name as the baseline's
    try:
        with open(path, 'wb') as f:
            f.write(buf)
        worst, note = 'identical', ''
        for cmd, base in zip(commands(args.cygprof, path, cap['memory']), bases):
            res, msg = outcome(run(cmd, args.timeout), base)
            if ORDER.index(res) < ORDER.index(worst):
                worst, note = res, '%s: %s' % (cmd[1], msg)
        if args.keep and worst in ('SILENT CHANGE', 'CRASH', 'HANG'):
            os.makedirs(args.keep, exist_ok=True)
            kept = os.path.join(args.keep, '%s-%d.data' % (cap['name'], idx))
            shutil.copy(path, kept)
            note += ' (kept as %s)' % kept
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return cap['name'], worst, note, flips


def record(args, out):
    b = args.build
    specs = [
        ('plain', [], os.path.join(b, 'tests', 'example-calls-O2'), False),
        ('timeline', ['--timeline'], os.path.join(b, 'tests', 'example-calls-O2'), False),
        ('memory', ['--memory'], os.path.join(b, 'tests', 'memory', 'example-mem-basic-instr-O2'),
         True),
        ('c++', [], os.path.join(b, 'tests', 'example-exceptions-O2'), False),
    ]
    caps = []
    for name, opts, exe, memory in specs:
        if not os.path.exists(exe):
            print('skipping %s: no %s' % (name, exe), file=sys.stderr)
            continue
        path = os.path.join(out, name + '.data')
        cp = subprocess.run([args.cygprof, 'record'] + opts + ['-o', path, '--', exe],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if cp.returncode:
            sys.exit('record %s failed: %s' % (name, cp.stderr.decode()))
        caps.append({'name': name, 'path': path, 'memory': memory})
    return caps


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', required=True)
    ap.add_argument('--build', help='build dir whose tests/example-* are recorded')
    ap.add_argument('--captures', nargs='*', help='captures to damage instead of recording')
    ap.add_argument('--memory', nargs='*', default=[],
                    help='which of --captures are memory captures')
    ap.add_argument('--flips', type=int, default=1000, help='trials')
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--jobs', type=int, default=2)
    ap.add_argument('--timeout', type=float, default=20)
    ap.add_argument('--tmp', default=None, help='where damaged copies go')
    ap.add_argument('--show', type=int, default=5, help='examples shown per class')
    ap.add_argument('--fail-on-silent', action='store_true')
    ap.add_argument('--keep', help='directory where damaged copies that gave a silent change, '
                    'a crash or a hang are kept')
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix='bitflip-caps-', dir=args.tmp)
    try:
        if args.captures:
            caps = [{'name': os.path.basename(p), 'path': p,
                     'memory': p in args.memory} for p in args.captures]
        elif args.build:
            caps = record(args, work)
        else:
            sys.exit('give --build or --captures')
        # the undamaged results, under the same file name as the trials
        for cap in caps:
            with open(cap['path'], 'rb') as f:
                cap['data'] = f.read()
            d = tempfile.mkdtemp(prefix='bitflip-', dir=args.tmp)
            path = os.path.join(d, 'cap.data')
            with open(path, 'wb') as f:
                f.write(cap['data'])
            cap['bases'] = [run(c, args.timeout) for c in commands(args.cygprof, path, cap['memory'])]
            shutil.rmtree(d, ignore_errors=True)
            for c, b in zip(commands(args.cygprof, path, cap['memory']), cap['bases']):
                if b is None or b.returncode:
                    sys.exit('%s %s fails on the undamaged capture' % (c[1], cap['name']))
        master = random.Random(args.seed)
        jobs = []
        for i in range(args.flips):
            cap = caps[i % len(caps)]
            jobs.append((cap, master.getrandbits(64)))
        counts = collections.Counter()
        per = collections.defaultdict(collections.Counter)
        examples = collections.defaultdict(list)
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            futs = [ex.submit(trial, args, cap, cap['data'], cap['bases'], i, seed)
                    for i, (cap, seed) in enumerate(jobs)]
            for done, fut in enumerate(futs, 1):
                name, res, note, flips = fut.result()
                if done % 1000 == 0:
                    print('%d/%d trials' % (done, len(futs)), file=sys.stderr, flush=True)
                counts[res] += 1
                per[name][res] += 1
                if len(examples[res]) < args.show and res != 'identical':
                    examples[res].append('%s %s %s' % (name, flips, note))
    finally:
        shutil.rmtree(work, ignore_errors=True)

    names = [c['name'] for c in caps]
    print('%d trials of 1-4 random bit flips, seed %d, %s' % (args.flips, args.seed, args.cygprof))
    print('sizes: ' + ', '.join('%s %d B' % (c['name'], len(c['data'])) for c in caps))
    print()
    print('| outcome | ' + ' | '.join(names) + ' | total |')
    print('|---|' + '---:|' * (len(names) + 1))
    for res in ORDER:
        print('| %s | ' % res + ' | '.join(str(per[n][res]) for n in names) +
              ' | %d |' % counts[res])
    for res in ORDER:
        for e in examples[res]:
            print('  %s: %s' % (res, e))
    bad = counts['SILENT CHANGE'] + counts['CRASH'] + counts['HANG']
    print('%d passed, %d failed' % (args.flips - bad, bad))
    return 1 if args.fail_on_silent and bad else 0


if __name__ == '__main__':
    sys.exit(main())
