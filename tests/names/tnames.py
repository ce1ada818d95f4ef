#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Thread names a program sets after its threads' first calls.

Usage:
  tnames.py --cygprof CYGPROF --example TNAMES --test names-threads [-v] [--keep]

TNAMES is tests/names/tnames.c: "worker-1" names itself
(pthread_setname_np) after its first call and is joined, "early-2" names
itself (prctl PR_SET_NAME) and ends at once, "runner-3" names itself and
is still running when main returns.  Recorded with --timeline and
CYGPROF_CHECKPOINT_MS=50; the program returns once a checkpoint, read
with info while it runs, shows "runner-3" (its name then comes from the
collector's look at /proc, the two others' from their writers' ends).

names-threads  info (JSON and text), report --threads (JSON and text),
               export --format=chrome (thread_name events), perfetto (the
               thread tracks' names, decoded), pprof (each sample's
               "thread" label) and html show exactly the four names, each
               thread with its calls (main 2, worker-1 11, early-2 1,
               runner-3 6)
"""

import gzip
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run  # noqa: E402

NAMES = {'worker-1': 11, 'early-2': 1, 'runner-3': 6}


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """(field, wire type, value) of a protobuf message: ints, or bytes for
    length-delimited fields."""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError('wire type %d' % wt)
        out.append((f, wt, v))
    return out


def perfetto_threads(data):
    """{tid: thread_name} of the TrackDescriptors (Trace.packet 1 ->
    TracePacket.track_descriptor 60 -> .thread 4 -> ThreadDescriptor
    tid 2, thread_name 5)."""
    out = {}
    for f, wt, pkt in fields(data):
        if f != 1 or wt != 2:
            continue
        for g, wt2, td in fields(pkt):
            if g != 60 or wt2 != 2:
                continue
            for h, wt3, th in fields(td):
                if h == 4 and wt3 == 2:
                    d = {k: v for k, _, v in fields(th)}
                    out[d.get(2)] = d.get(5, b'').decode('utf-8', 'replace')
    return out


def pprof_threads(data):
    """{thread label: calls} over the samples of a pprof profile."""
    prof = fields(gzip.decompress(data))
    strings = [v.decode('utf-8', 'replace') for f, _, v in prof if f == 6]
    out = {}
    for f, _, s in prof:
        if f != 2:
            continue
        vals, label = [], None
        for g, wt, v in fields(s):
            if g == 2:
                vals = [x for x in ([v] if wt == 0 else packed(v))]
            elif g == 3:
                d = {k: x for k, _, x in fields(v)}
                if strings[d.get(1, 0)] == 'thread':
                    label = strings[d.get(2, 0)]
        out[label] = out.get(label, 0) + (vals[0] if vals else 0)
    return out


def packed(b):
    i, out = 0, []
    while i < len(b):
        v, i = varint(b, i)
        out.append(v)
    return out


def test_threads(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 't.data')
    stop = os.path.join(cyg.workdir, 'stop')
    env = dict(os.environ, CYGPROF_CHECKPOINT_MS='50')
    rec = subprocess.Popen([cyg.exe, 'record', '-q', '--timeline', '-o', cap, '--', example,
                            stop], cwd=cyg.workdir, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE)
    # a checkpoint that shows runner-3 named, while it runs
    deadline = time.monotonic() + cygtest.TIMEOUT
    seen = None
    while time.monotonic() < deadline and rec.poll() is None:
        if os.path.exists(cap):
            cp = subprocess.run([cyg.exe, 'info', '--format=json', cap], capture_output=True)
            try:
                seen = [t['name'] for t in json.loads(cp.stdout)['threads']]
            except (ValueError, KeyError, TypeError):
                seen = None
            if seen and 'runner-3' in seen:
                break
        time.sleep(0.05)
    with open(stop, 'w'):
        pass
    try:
        out, err = rec.communicate(timeout=cygtest.TIMEOUT)
    except subprocess.TimeoutExpired:
        rec.kill()
        out, err = rec.communicate()
    ck.check(seen is not None and 'runner-3' in seen,
             'a checkpoint while runner-3 runs shows its name (saw %s)' % seen)
    ck.eq((rec.returncode, out.decode()), (0, 'tnames: work=20\n'), 'record: status, stdout')
    if rec.returncode != 0:
        raise Failure('record failed: %s' % err.decode(errors='replace'))

    comm = os.path.basename(example)[:15]
    want = dict(NAMES, **{comm: 2})
    info = cygtest.info_json(ck, cyg, cap)
    ck.eq({t['name']: t['calls'] for t in info['threads']}, want,
          'info --format=json: each thread\'s name and calls')
    txt = run([cyg.exe, 'info', cap]).out
    for name, calls in want.items():
        ck.check(re.search(r'^\s*\d+\s+\d+\s+%s\s+%d\s' % (re.escape(name), calls), txt, re.M),
                 'info: a thread row "%s" with %d calls' % (name, calls))

    rep = json.loads(run([cyg.exe, 'report', '--threads', '--format=json', cap]).out)
    ck.eq(sorted(t['name'] for t in rep['threads']), sorted(want),
          'report --threads --format=json: the names')
    txt = run([cyg.exe, 'report', '--threads', cap]).out
    heads = re.findall(r'^==== pid \d+ tid \d+ \((.*)\) ====$', txt, re.M)
    ck.eq(sorted(heads), sorted(want), 'report --threads: one section per thread, named')

    chrome = os.path.join(cyg.workdir, 't.json')
    run([cyg.exe, 'export', '--format=chrome', '-o', chrome, cap])
    with open(chrome) as f:
        ev = json.load(f)
    ev = ev['traceEvents'] if isinstance(ev, dict) else ev
    ck.eq(sorted(e['args']['name'] for e in ev if e.get('name') == 'thread_name'),
          sorted(want), 'export chrome: the thread_name events')

    pf = os.path.join(cyg.workdir, 't.perfetto')
    run([cyg.exe, 'export', '--format=perfetto', '-o', pf, cap])
    with open(pf, 'rb') as f:
        ck.eq(sorted(perfetto_threads(f.read()).values()), sorted(want),
              'export perfetto: the thread tracks\' names')

    pp = os.path.join(cyg.workdir, 't.pb.gz')
    run([cyg.exe, 'export', '--format=pprof', '-o', pp, cap])
    with open(pp, 'rb') as f:
        ck.eq(pprof_threads(f.read()), want, 'export pprof: calls by the samples\' thread label')

    html = os.path.join(cyg.workdir, 't.html')
    run([cyg.exe, 'html', '-o', html, cap])
    with open(html, encoding='utf-8', errors='replace') as f:
        page = f.read()
    for name in NAMES:
        ck.check('"%s"' % name in page, 'html: the report holds "%s"' % name)


TESTS = {'names-threads': test_threads}


def main():
    return cygtest.driver_main(TESTS, 'names', __doc__)


if __name__ == '__main__':
    sys.exit(main())
