#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof export --format=perfetto`, read back by a
small protobuf decoder written here (no protobuf package).

Usage:
  perfetto.py --cygprof CYGPROF --example CALLS --test NAME --threads PROG
              --counters-prog PROG --mem-prog PROG [--sanitize B_SANITIZE]
              [--skip REASON] [-v] [--keep]

CALLS is examples/calls.c at -O2 (main 1, a 3, b 6, c 30).

Tests:
  export-perfetto-timeline  record --timeline of calls and of threads (1000):
                  one SLICE_BEGIN/SLICE_END pair per call on its thread's
                  track, as many per function as the report's calls; every
                  thread track has a ThreadDescriptor (pid, tid, name) under
                  its process's track (ProcessDescriptor pid, process_name);
                  every name_iid resolves to an interned event name of its
                  sequence; timestamps (incremental clock 64) never decrease
                  on a sequence, and each call's begin and end equal the
                  chrome export's ts and ts+dur (us); the file is at least 3x
                  smaller than the chrome JSON.  trace_processor_shell, where
                  installed, would be a further check: not done here.
                  With -F b: the slices of b (6) and c (30) only, as chrome's
  export-perfetto-counters  record --counters --timeline of counters-prog: one counter
                  track per counter with as many values, equal to `cygprof
                  counters --format=json`'s samples (times and values)
  export-perfetto-memory  record --memory --timeline of mem-basic: a
                  heap/live_bytes counter track peaking at `cygprof memory`'s
                  peak_bytes (skipped under sanitizers)
  export-perfetto-errors  a capture without a timeline: one error line
                  naming --timeline, exit 1, nothing written; a file at -o
                  that is not a Perfetto trace is kept without -f, an earlier
                  perfetto output is replaced
"""

import collections
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status  # noqa: E402

# Field numbers from Perfetto's published schema, protos/perfetto/trace/:
# trace.proto (Trace.packet 1), trace_packet.proto (TracePacket),
# clock_snapshot.proto, trace_packet_defaults.proto,
# track_event/track_event.proto (TrackEvent, TrackEventDefaults, EventName),
# interned_data/interned_data.proto, track_event/track_descriptor.proto,
# track_event/process_descriptor.proto, track_event/thread_descriptor.proto,
# track_event/counter_descriptor.proto.
TRACE_PACKET = 1
PKT_CLOCK_SNAPSHOT, PKT_TIMESTAMP, PKT_SEQ_ID, PKT_TRACK_EVENT = 6, 8, 10, 11
PKT_INTERNED, PKT_SEQ_FLAGS, PKT_CLOCK_ID, PKT_DEFAULTS, PKT_TRACK_DESC = 12, 13, 58, 59, 60
CS_CLOCKS, CLOCK_ID, CLOCK_TS, CLOCK_INCREMENTAL = 1, 1, 2, 3
DEF_TRACK_EVENT, DEF_CLOCK_ID, TED_TRACK_UUID = 11, 58, 11
TE_TYPE, TE_NAME_IID, TE_TRACK_UUID, TE_NAME, TE_COUNTER_VALUE = 9, 10, 11, 23, 30
INT_EVENT_NAMES, EN_IID, EN_NAME = 2, 1, 2
TD_UUID, TD_NAME, TD_PROCESS, TD_THREAD, TD_PARENT, TD_COUNTER = 1, 2, 3, 4, 5, 8
PD_PID, PD_NAME = 1, 6
THD_PID, THD_TID, THD_NAME = 1, 2, 5
SLICE_BEGIN, SLICE_END, COUNTER = 1, 2, 4
SEQ_CLEARED, SEQ_NEEDS = 1, 2


class Skip(Exception):
    """The test cannot run here (exit 77)."""


def varint(b, i):
    v = shift = 0
    while True:
        if i >= len(b):
            raise Failure('truncated varint')
        c = b[i]
        i += 1
        v |= (c & 0x7f) << shift
        shift += 7
        if not c & 0x80:
            return v, i


def fields(b):
    """{field: [values]} of one message: varints as ints, length-delimited
    as bytes (fixed32/64 as ints)."""
    out = collections.defaultdict(list)
    i = 0
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 2:
            n, i = varint(b, i)
            v = bytes(b[i:i + n])
            if len(v) != n:
                raise Failure('truncated field %d' % f)
            i += n
        elif wt == 1:
            v, i = int.from_bytes(b[i:i + 8], 'little'), i + 8
        elif wt == 5:
            v, i = int.from_bytes(b[i:i + 4], 'little'), i + 4
        else:
            raise Failure('wire type %d at field %d' % (wt, f))
        out[f].append(v)
    return out


def one(m, f, default=None):
    return m[f][-1] if m.get(f) else default


class Trace:
    """A decoded trace: tracks by uuid; per sequence its events as
    (abs_ns, TrackEvent fields, track uuid, event name)."""

    def __init__(self, ck, data):
        self.tracks = {}
        self.events = []  # (seq, ts, type, name, track, counter_value)
        seqs = {}
        for raw in fields(data).get(TRACE_PACKET, []):
            p = fields(raw)
            seq = one(p, PKT_SEQ_ID, 0)
            if not seq:
                raise Failure('a packet without trusted_packet_sequence_id')
            st = seqs.setdefault(seq, {'names': {}, 'last': None, 'incr': False, 'cleared': False,
                                       'clock': None, 'track': None})
            flags = one(p, PKT_SEQ_FLAGS, 0)
            if flags & SEQ_CLEARED:
                st.update(names={}, cleared=True, last=None)
            if PKT_CLOCK_SNAPSHOT in p:
                for c in fields(one(p, PKT_CLOCK_SNAPSHOT)).get(CS_CLOCKS, []):
                    c = fields(c)
                    if one(c, CLOCK_ID) == 64:
                        st['incr'] = bool(one(c, CLOCK_INCREMENTAL, 0))
                        st['last'] = one(c, CLOCK_TS, 0)
            if PKT_DEFAULTS in p:
                d = fields(one(p, PKT_DEFAULTS))
                st['clock'] = one(d, DEF_CLOCK_ID)
                if DEF_TRACK_EVENT in d:
                    st['track'] = one(fields(one(d, DEF_TRACK_EVENT)), TED_TRACK_UUID)
            if PKT_INTERNED in p:
                ck.check(st['cleared'], 'interned data on sequence %d after its clear' % seq)
                for en in fields(one(p, PKT_INTERNED)).get(INT_EVENT_NAMES, []):
                    en = fields(en)
                    st['names'][one(en, EN_IID)] = one(en, EN_NAME).decode()
            if PKT_TRACK_DESC in p:
                td = fields(one(p, PKT_TRACK_DESC))
                self.tracks[one(td, TD_UUID)] = td
            if PKT_TRACK_EVENT in p:
                te = fields(one(p, PKT_TRACK_EVENT))
                clock = one(p, PKT_CLOCK_ID, st['clock'])
                ts = one(p, PKT_TIMESTAMP)
                if ts is None:
                    raise Failure('a track event without a timestamp')
                ck.check(clock == 64 and st['incr'],
                         'sequence %d: events on the incremental clock 64' % seq)
                if clock == 64 and st['incr']:
                    ts = st['last'] + ts
                    st['last'] = ts
                if flags & SEQ_NEEDS == 0 and TE_NAME_IID in te:
                    ck.fail('an interned name on a packet without SEQ_NEEDS_INCREMENTAL_STATE')
                name = None
                if TE_NAME_IID in te:
                    iid = one(te, TE_NAME_IID)
                    name = st['names'].get(iid)
                    if name is None:
                        raise Failure('name_iid %d not interned on sequence %d' % (iid, seq))
                elif TE_NAME in te:
                    name = one(te, TE_NAME).decode()
                track = one(te, TE_TRACK_UUID, st['track'])
                cv = one(te, TE_COUNTER_VALUE)
                if cv is not None and cv >= 1 << 63:
                    cv -= 1 << 64
                self.events.append((seq, ts, one(te, TE_TYPE), name, track, cv))


def record(cyg, name, prog_args, opts):
    cap = os.path.join(cyg.workdir, name)
    cp = cyg.record(cap, prog_args, opts)
    if cp.returncode != 0:
        raise Failure('record %s failed (%s): %s' % (' '.join(opts), describe_status(cp.returncode),
                                                     cp.err.strip()))
    return cap


def json_of(cyg, cmd, cap, opts=()):
    cp = run([cyg.exe] + cmd + ['--format=json'] + list(opts) + [cap])
    if cp.returncode != 0:
        raise Failure('%s failed: %s' % (' '.join(cmd), cp.err.strip()))
    return json.loads(cp.out)


def export(cyg, cap, fmt, out, opts=()):
    cp = run([cyg.exe, 'export', '--format=' + fmt, '-o', out] + list(opts) + [cap])
    if cp.returncode != 0:
        raise Failure('export --format=%s failed (%s): %s' % (fmt, describe_status(cp.returncode),
                                                             cp.err.strip()))
    with open(out, 'rb') as f:
        return f.read()


def perfetto(ck, cyg, cap, opts=()):
    data = export(cyg, cap, 'perfetto', cap + '.pftrace', opts)
    return Trace(ck, data), data


WAIT_NAME = '[cygprof: waiting for the collector]'


def slices(ck, tr, waits=False):
    """The calls of the trace's thread tracks: (track, name, begin, end);
    with waits, the waits for the collector too (a slice of their own when
    the ring filled)."""
    stacks = collections.defaultdict(list)
    out = []
    last = {}
    for seq, ts, typ, name, track, _ in tr.events:
        if seq in last and ts < last[seq]:
            ck.fail('sequence %d: time %d after %d' % (seq, ts, last[seq]))
        last[seq] = ts
        if typ == SLICE_BEGIN:
            stacks[track].append((name, ts))
        elif typ == SLICE_END:
            if not stacks[track]:
                raise Failure('SLICE_END with no open slice on track %x' % track)
            name, b = stacks[track].pop()
            if waits or name != WAIT_NAME:
                out.append((track, name, b, ts))
    ck.check(all(not s for s in stacks.values()), 'every slice ends')
    return out


def check_timeline(ck, cyg, cap, opts=()):
    report = json_of(cyg, ['report', '--raw-times'], cap, opts)
    tr, data = perfetto(ck, cyg, cap, opts)
    ss = slices(ck, tr)
    ck.eq(len(ss), sum(f['calls'] for f in report['functions']), 'slices == the report\'s calls')
    ck.eq(dict(collections.Counter(s[1] for s in ss)),
          {f['name']: f['calls'] for f in report['functions']},
          'slices per function == calls per function')
    # tracks: threads named and under their process
    procs = {u: fields(one(t, TD_PROCESS)) for u, t in tr.tracks.items() if TD_PROCESS in t}
    threads = {}
    for u, t in tr.tracks.items():
        if TD_THREAD in t:
            th = fields(one(t, TD_THREAD))
            parent = procs.get(one(t, TD_PARENT))
            ck.check(parent is not None and one(parent, PD_PID) == one(th, THD_PID),
                     'thread track %x under its process\'s track' % u)
            ck.check(bool(one(th, THD_NAME)), 'thread track %x named' % u)
            threads[(one(th, THD_PID), one(th, THD_TID))] = u
    for p in report['processes']:
        ck.check(any(one(d, PD_PID) == p['pid'] and one(d, PD_NAME) for d in procs.values()),
                 'process %d has a named track' % p['pid'])
    for t in report['threads']:
        ck.check((t['pid'], t['tid']) in threads, 'thread %d (pid %d) has a thread track' %
                 (t['tid'], t['pid']))
    ck.check(all(s[0] in tr.tracks and TD_THREAD in tr.tracks[s[0]] for s in ss),
             'every slice is on a thread track')
    # the same calls at the same times as the chrome export's
    chrome_out = cap + '.json'
    cj = json.loads(export(cyg, cap, 'chrome', chrome_out, opts))
    track_of = {v: k for k, v in threads.items()}
    got = sorted((track_of[s[0]][0], track_of[s[0]][1], s[1], s[2] / 1000.0, s[3] / 1000.0)
                 for s in ss)
    want = sorted((e['pid'], e['tid'], e['name'], e['ts'], e['ts'] + e['dur'])
                  for e in cj['traceEvents'] if e['ph'] == 'X' and e.get('cat') != 'cygprof')
    ck.eq(len(got), len(want), 'as many slices as chrome X events')
    bad = [(g, w) for g, w in zip(got, want)
           if g[:3] != w[:3] or abs(g[3] - w[3]) > 0.0015 or abs(g[4] - w[4]) > 0.0015]
    ck.check(not bad, 'slices equal chrome\'s X events (pid, tid, name, begin, end in us): %r'
             % bad[:3])
    csize = os.path.getsize(chrome_out)
    print('sizes: perfetto %d bytes, chrome %d bytes (%.1fx)' % (len(data), csize,
                                                                csize / max(len(data), 1)))
    return report, data, csize


def test_timeline(ck, cyg, example, args):
    cap = record(cyg, 't.cyg', [example], ['--timeline'])
    check_timeline(ck, cyg, cap)
    cap = record(cyg, 'th.cyg', [args.threads, '1000'], ['--timeline'])
    report, data, csize = check_timeline(ck, cyg, cap)
    ck.eq(len(report['threads']), 6, 'the threads example has 6 threads')
    # the filters are the view's, as chrome's: -F keeps the calls under b
    rep, _, _ = check_timeline(ck, cyg, record(cyg, 'f.cyg', [example], ['--timeline']),
                               ['-F', 'b'])
    ck.eq(sorted((f['name'], f['calls']) for f in rep['functions']), [('b', 6), ('c', 30)],
          '-F b: b 6, c 30')
    ck.check(len(data) * 3 <= csize, 'at least 3x smaller than chrome JSON (%d vs %d bytes)' %
             (len(data), csize))


def test_counters(ck, cyg, example, args):
    cap = record(cyg, 'c.cyg', [args.counters_prog], ['--counters', '--timeline'])
    counters = json_of(cyg, ['counters'], cap)['counters']
    ck.check(len(counters) > 0, 'the capture has counters')
    tr, _ = perfetto(ck, cyg, cap)
    procs = {u: one(fields(one(t, TD_PROCESS)), PD_PID) for u, t in tr.tracks.items()
             if TD_PROCESS in t}
    ctracks = {u: t for u, t in tr.tracks.items() if TD_COUNTER in t}
    got = collections.defaultdict(list)
    for _, ts, typ, _, track, cv in tr.events:
        if typ == COUNTER:
            t = ctracks.get(track)
            if t is None:
                raise Failure('a counter value on a track %x with no CounterDescriptor' % track)
            got[(one(t, TD_NAME).decode(), procs.get(one(t, TD_PARENT), 0))].append((ts, cv))
    want = {}
    for c in counters:
        if c['samples']:
            want[(c['name'], c['pid'] or 0)] = [(s[0], s[1]) for s in c['samples']]
    ck.eq(sorted(got), sorted(want), 'counter tracks (name, pid) == the counters\'')
    for k in want:
        ck.eq(got.get(k), want[k], 'counter %s: times and values == the counters\'' % (k,))


def test_memory(ck, cyg, example, args):
    if args.sanitize not in (None, '', 'none'):
        raise Skip('--memory under b_sanitize=%s' % args.sanitize)
    cap = record(cyg, 'm.cyg', [args.mem_prog], ['--memory', '--timeline'])
    mem = json_of(cyg, ['memory'], cap)['totals']
    tr, _ = perfetto(ck, cyg, cap)
    heap = {u for u, t in tr.tracks.items()
            if TD_COUNTER in t and one(t, TD_NAME) == b'heap/live_bytes'}
    ck.check(len(heap) > 0, 'a heap/live_bytes counter track')
    vals = [cv for _, _, typ, _, track, cv in tr.events if typ == COUNTER and track in heap]
    ck.check(len(vals) > 0, 'the heap track has values')
    if vals:
        ck.eq(max(vals), mem['peak_bytes'], 'the heap track peaks at peak_bytes')


def test_errors(ck, cyg, example, args):
    cap = record(cyg, 'p.cyg', [example], [])
    out = os.path.join(cyg.workdir, 'p.pftrace')
    cp = run([cyg.exe, 'export', '--format=perfetto', '-o', out, cap])
    lines = cp.err.splitlines()
    ck.eq(cp.returncode, 1, 'without a timeline: exit 1')
    ck.check(len(lines) == 1 and 'no timeline' in lines[0] and '--timeline' in lines[0],
             'without a timeline: one error line naming --timeline (%r)' % lines)
    ck.check(not os.path.exists(out), 'nothing written without a timeline')
    cap = record(cyg, 't.cyg', [example], ['--timeline'])
    other = os.path.join(cyg.workdir, 'other.txt')
    with open(other, 'w') as f:
        f.write('not a trace\n')
    cp = run([cyg.exe, 'export', '--format=perfetto', '-o', other, cap])
    ck.check(cp.returncode != 0, 'a file that is not a Perfetto trace is not replaced (exit %d)'
             % cp.returncode)
    with open(other) as f:
        ck.eq(f.read(), 'not a trace\n', 'that file is kept')
    first = export(cyg, cap, 'perfetto', out)
    again = export(cyg, cap, 'perfetto', out)
    ck.eq(len(again), len(first), 'an earlier perfetto output is replaced without -f')


TESTS = {
    'export-perfetto-timeline': test_timeline,
    'export-perfetto-counters': test_counters,
    'export-perfetto-memory': test_memory,
    'export-perfetto-errors': test_errors,
}


def extra(ap):
    ap.add_argument('--threads')
    ap.add_argument('--counters-prog')
    ap.add_argument('--mem-prog')
    ap.add_argument('--sanitize')


def call(fn, ck, cyg, example, args):
    for k in ('threads', 'counters_prog', 'mem_prog'):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    try:
        fn(ck, cyg, example, args)
    except Skip as e:
        print('SKIP %s: %s' % (args.test, e))
        sys.exit(cygtest.SKIP)


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'export', __doc__, extra=extra, call=call))
