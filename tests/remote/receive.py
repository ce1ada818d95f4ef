#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cygprof receive over loopback, against a sender written here from
docs/remote.md (the frames) and docs/capture-format.md (the values they
carry; send.py drives record --send itself): a whole stream gives a
complete capture that reads as sent (its call tree, timeline and a value
split in parts), and so does the same stream compressed as the handshake
agreed (ZBATCH frames: one zstd stream); a ZBATCH without compression
agreed, or whose stream needs a larger window than agreed, is refused in
one line; a value a reader would refuse is refused in one line and what
came before is kept; a wrong token is refused on both sides and writes
nothing (the receiver goes on listening); a sender of another protocol
version is refused in one line; a connection cut mid-stream keeps an
incomplete capture; a capture past --max-bytes is cut; a token file others
may read is refused.
TAP output.  usage: receive.py CYGPROF"""
import hashlib
import hmac
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

CYG = sys.argv[1]
TOKEN = b'0123456789abcdef-secret'
MAGIC = b'CYGPNET\n'
VERSION = 5  # NETP_VERSION
ZWLOG = 23  # the compression window a receiver agrees to at most (log2)
# docs/remote.md "Frames"
T = dict(BEGIN=1, COMMIT=2, PUT=3, PUBLISH=4, END=5, ABORT=6, ZBATCH=7)
MORE = 1
# docs/capture-format.md "Streams": the DB numbers
DB = dict(meta=0, procs=1, threads=2, trees=3, timeline=4, objects=5, symbols=6, mem=7,
          stacks=8, sites=9, counters=10, samples=11, psamples=12, offcpu=13, cpu=14)
NONE = 0xffffffff
results = []


def ok(cond, name, detail=''):
    results.append(cond)
    print('%s %d - %s' % ('ok' if cond else 'not ok', len(results), name))
    if not cond and detail:
        for line in str(detail).splitlines():
            print('# ' + line)


def frame(t, payload=b'', flags=0):
    return struct.pack('<IHH', len(payload), T[t], flags) + payload


def put(db, key, value, flags=0):
    """A PUT frame: u16 db, u16 key length, the key, the value."""
    return frame('PUT', struct.pack('<HH', DB[db], len(key)) + key + value, flags)


def be32(*v):
    return b''.join(struct.pack('>I', x) for x in v)


def s(text):
    """STR: LE32 length, the bytes."""
    b = text.encode()
    return struct.pack('<I', len(b)) + b


def meta(key, value):
    return put('meta', key.encode(), value.encode())


def proc(idx, pid, ppid, parent, start, end, kind, code, command, exe):
    return put('procs', be32(idx), struct.pack('<IIIQQIi', pid, ppid, parent, start, end, kind,
                                               code) + s(command) + s(exe))


def thread(idx, proc_idx, tid, flags, start, end, calls, events, name):
    """The 124 bytes of a thread record (lost, waits, wait_ns, unpaired,
    unwound, overflow, sig_lost, mem_lost 0)."""
    return put('threads', be32(idx), struct.pack('<IIIQQQQQQQQQ', proc_idx, tid, flags, start,
                                                 end, calls, events, 0, 0, 0, 0, 0) +
               name.encode().ljust(16, b'\0') + struct.pack('<QQQ', 0, 0, 0))


def packed(raw):
    """A packed value stored raw: LE32 raw length, the raw bytes."""
    return struct.pack('<I', len(raw)) + raw


def tree_value(nodes):
    return packed(struct.pack('<II', len(nodes), 40) +
                  b''.join(struct.pack('<IIQQQQ', *n) for n in nodes))


def varint(v):
    out = b''
    while v >= 0x80:
        out += bytes([v & 0x7f | 0x80])
        v >>= 7
    return out + bytes([v])


def zstd_raw(data):
    """One zstd frame (RFC 8878) holding data in one raw block: single
    segment, content size in 1 byte (data < 256 bytes), no checksum."""
    assert len(data) < 256
    return struct.pack('<IBB', 0xFD2FB528, 0x20, len(data)) + \
        struct.pack('<I', len(data) << 3 | 1)[:3] + data


def timeline_block(events):
    """A schema 5 event block: count, first_ts, raw length, zstd frame of
    the calls open before it (none: depth 0, 0 stored), then
    varint(node << 2 | kind), varint(time step) per event."""
    first = events[0][0]
    raw, last = varint(0) + varint(0), first
    for ts, node, kind in events:
        raw += varint(node << 2 | kind) + varint(ts - last)
        last = ts
    return struct.pack('<IQI', len(events), first, len(raw)) + zstd_raw(raw)


NODES = [(NONE, 0, 0, 0, 0, 0), (0, 0, 0x401000, 0x400500, 1, 5000),
         (1, 0, 0x401100, 0x401010, 1000, 3000)]
EVENTS = [(10, 1, 0), (20, 2, 0), (30, 2, 1), (4990, 1, 1)]


def stream(split=False):
    """One process, one thread, main -> work called 1000 times, with a
    timeline; with split, the tree in three parts."""
    first = frame('BEGIN') + meta('command', 'prog') + meta('mode', 'profile+timeline') + \
        proc(0, 42, 1, NONE, 0, 5000, 1, 0, 'prog', '/tmp/prog') + \
        thread(0, 0, 42, 1, 0, 5000, 1001, len(EVENTS), 'prog') + \
        frame('COMMIT') + frame('PUBLISH')
    tree = tree_value(NODES)
    if split:
        trees = put('trees', be32(0), tree[:50], MORE) + put('trees', be32(0), tree[50:90], MORE) + \
            put('trees', be32(0), tree[90:])
    else:
        trees = put('trees', be32(0), tree)
    second = frame('BEGIN') + trees + put('timeline', be32(0, 0), timeline_block(EVENTS)) + \
        meta('duration_ns', '5000') + meta('complete', '1') + frame('COMMIT')
    return first, second + frame('END')


def start_receiver(out, extra=(), token_mode=0o600, token=TOKEN):
    tok = os.path.join(TMP, 'token')
    with open(tok, 'wb') as f:
        f.write(token + b'\n')
    os.chmod(tok, token_mode)
    p = subprocess.Popen([CYG, 'receive', '--listen', '127.0.0.1:0', '--token-file', tok,
                          '-o', out, '-f'] + list(extra),
                         stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    if not line.startswith('receive: listening on port '):
        return p, None, line
    return p, int(line.split()[-1]), line


def connect(port, token, version=VERSION, zwlog=0):
    """The handshake: hello (offering a zstd window, 0: none), the
    receiver's hello and nonce, the proof.  The socket, the verdict and the
    window the receiver agreed to."""
    c = socket.create_connection(('127.0.0.1', port), timeout=10)
    c.sendall(MAGIC + struct.pack('<II', version, zwlog))
    reply = b''
    while len(reply) < 16 + 32:
        chunk = c.recv(16 + 32 - len(reply))
        if not chunk:
            break
        reply += chunk
    mac = hmac.new(token, reply[16:48] + b'cygprof-send-v1', hashlib.sha256).digest()
    c.sendall(mac)
    verdict = c.recv(1)
    return c, verdict, struct.unpack('<I', reply[12:16])[0] if len(reply) >= 16 else None


def zbatch(frames, zstd_args=()):
    """A ZBATCH frame: the raw length, then the frames compressed (a zstd
    frame of its own is the next bytes of a stream too)."""
    z = subprocess.run(['zstd', '-q', '-c'] + list(zstd_args), input=frames,
                       stdout=subprocess.PIPE, check=True).stdout
    return frame('ZBATCH', struct.pack('<I', len(frames)) + z)


def finish(p):
    out, err = p.communicate(timeout=30)
    return p.returncode, err


def info(path):
    cp = subprocess.run([CYG, 'info', '--format=json', path], capture_output=True, text=True)
    return cp.returncode, cp.stdout, cp.stderr


def complete(text):
    try:
        return json.loads(text)['limits']['complete']
    except (ValueError, KeyError, TypeError):
        return None


def report(path):
    cp = subprocess.run([CYG, 'report', '--format=json', path], capture_output=True, text=True)
    try:
        return cp.returncode, {f['name']: f['calls'] for f in json.loads(cp.stdout)['functions']}, \
            cp.stderr
    except (ValueError, KeyError, TypeError):
        return cp.returncode, None, cp.stderr + cp.stdout[:2000]


def test_whole(split=False, compress=False):
    name = 'whole stream' + (', the tree split' if split else '') + \
        (', compressed' if compress else '')
    out = os.path.join(TMP, 'whole.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, name, line)
        return
    c, verdict, agreed = connect(port, TOKEN, zwlog=ZWLOG if compress else 0)
    first, second = stream(split)
    if compress:
        ok(agreed == ZWLOG, '%s: the receiver agrees to the window' % name, agreed)
        # a small batch outside the stream, then two batches of it
        c.sendall(first + zbatch(second[:-8]) + zbatch(second[-8:]))
    else:
        ok(agreed == 0, '%s: no compression agreed' % name, agreed)
        c.sendall(first + second)
    c.close()
    rc, err = finish(p)
    ok(verdict == b'K' and rc == 0, '%s: receiver exits 0' % name, err)
    rc, calls, e = report(out)
    ok(rc == 0, '%s: report reads it' % name, e)
    rc, text, e = info(out)
    ok(rc == 0 and complete(text) is True, '%s: complete' % name, text + e)
    ok(calls == {'0x401000': 1, '0x401100': 1000}, '%s: the calls sent' % name, calls)
    cp = subprocess.run([CYG, 'replay', out], capture_output=True, text=True)
    calls = [ln.split('|', 1)[1].rstrip() for ln in cp.stdout.splitlines() if '|' in ln]
    ok(cp.returncode == 0 and
       calls == [' 0x401000() {', '   0x401100();', ' } /* 0x401000 */'],
       '%s: replay shows the events sent' % name, cp.stdout + cp.stderr)


def test_zbatch_refused(zwlog, zstd_args, want):
    """A ZBATCH the handshake did not agree to, or whose stream needs a
    window larger than agreed: refused in one line, what came before kept."""
    name = 'zbatch refused (%s)' % want
    out = os.path.join(TMP, 'zrefused.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, name, line)
        return
    c, verdict, _ = connect(port, TOKEN, zwlog=zwlog)
    first, second = stream()
    try:
        c.sendall(first + zbatch(second, zstd_args))
    except OSError:
        pass
    c.close()
    rc, err = finish(p)
    ok(rc == 1 and want in err and 'incomplete' in err and len(err.strip().splitlines()) == 1,
       '%s: one line, exit 1' % name, err)
    rc, text, e = info(out)
    ok(rc == 0 and complete(text) is False, '%s: what came before is kept' % name, text + e)


def test_refused_value():
    """A tree whose node 2 names itself as its parent: a reader would
    refuse it, so the receiver does, and keeps what came before."""
    out = os.path.join(TMP, 'refused.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'refused value', line)
        return
    c, verdict, _ = connect(port, TOKEN)
    first, _ = stream()
    bad = list(NODES)
    bad[2] = (2,) + bad[2][1:]
    try:
        c.sendall(first + frame('BEGIN') + put('trees', be32(0), tree_value(bad)) +
                  frame('COMMIT') + frame('END'))
    except OSError:
        pass
    c.close()
    rc, err = finish(p)
    ok(rc == 1 and 'refused a value: thread 0 call tree: node 2 has parent 2' in err and
       'incomplete' in err and len(err.strip().splitlines()) == 1,
       'refused value: receiver says which, in one line, exit 1', err)
    rc, text, e = info(out)
    ok(rc == 0 and complete(text) is False, 'refused value: what came before is kept', text + e)
    rc, calls, e = report(out)
    ok(rc == 0 and calls == {}, 'refused value: no tree stored', '%s %s' % (calls, e))


def refused_then_stop(p):
    """The receiver's next stderr line (a peer refused), then stop it: it
    goes on listening (tests/remote/stray.py).  The line and what it wrote
    after it."""
    line = p.stderr.readline()
    p.terminate()
    out, err = p.communicate(timeout=30)
    return line, err, p.returncode


def test_old_version():
    out = os.path.join(TMP, 'old.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'old version', line)
        return
    c = socket.create_connection(('127.0.0.1', port), timeout=10)
    c.sendall(MAGIC + struct.pack('<I', 1))
    reply = c.recv(12)
    peer = '127.0.0.1:%d' % c.getsockname()[1]
    c.close()
    line, err, rc = refused_then_stop(p)
    ok(reply == MAGIC + struct.pack('<I', VERSION), 'old version: the receiver says its own',
       repr(reply))
    ok(line == 'receive: refused %s: the sender speaks protocol 1, this receiver %d\n'
       % (peer, VERSION) and err == '' and rc == -signal.SIGTERM,
       'old version: refused in one line, receive goes on', line + err)
    ok(not os.path.exists(out), 'old version: nothing written')


def test_wrong_token():
    out = os.path.join(TMP, 'wrong.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'wrong token', line)
        return
    c, verdict, _ = connect(port, b'not-the-token-at-all')
    peer = '127.0.0.1:%d' % c.getsockname()[1]
    c.close()
    line, err, rc = refused_then_stop(p)
    ok(verdict == b'T', 'wrong token: the sender is told', repr(verdict))
    ok(line == 'receive: refused %s: wrong token\n' % peer and err == '' and
       rc == -signal.SIGTERM, 'wrong token: receiver refuses in one line, goes on', line + err)
    ok(not os.path.exists(out), 'wrong token: nothing written')


def test_cut():
    out = os.path.join(TMP, 'cut.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'cut', line)
        return
    c, verdict, _ = connect(port, TOKEN)
    first, second = stream()
    c.sendall(first + second[:30])
    c.close()
    rc, err = finish(p)
    ok(rc == 1 and 'connection lost' in err and 'incomplete' in err,
       'cut: receiver says so, exit 1', err)
    rc, text, e = info(out)
    ok(rc == 0, 'cut: the capture is readable', e)
    ok(complete(text) is False, 'cut: marked incomplete', text)


def test_max_bytes():
    out = os.path.join(TMP, 'max.cyg')
    p, port, line = start_receiver(out, ['--max-bytes', '1K'])
    if port is None:
        ok(False, 'max-bytes', line)
        return
    c, verdict, _ = connect(port, TOKEN)
    first, _ = stream()
    big = meta('filler', 'x' * 2000)
    try:
        c.sendall(first + big + frame('END'))
    except OSError:
        pass
    c.close()
    rc, err = finish(p)
    ok(rc == 1 and 'the capture passed --max-bytes 1024' in err, 'max-bytes: stream cut, exit 1',
       err)
    rc, text, e = info(out)
    ok(rc == 0, 'max-bytes: what came before is readable', e)


def test_token_mode():
    out = os.path.join(TMP, 'mode.cyg')
    p, port, line = start_receiver(out, token_mode=0o644)
    rc, err = finish(p)
    ok(port is None and rc == 2 and 'readable by others' in line + err,
       'token file readable by others: refused, exit 2', line + err)


with tempfile.TemporaryDirectory() as TMP:
    test_whole()
    test_whole(split=True)
    if shutil.which('zstd'):
        test_whole(compress=True)
        test_zbatch_refused(0, [], 'a zbatch frame, but the handshake agreed on no compression')
        test_zbatch_refused(ZWLOG, ['--long=24'],
                            'the zbatch stream needs a window over the 8388608 bytes agreed')
    else:
        ok(True, 'compressed streams # SKIP no zstd command')
    test_refused_value()
    test_old_version()
    test_wrong_token()
    test_cut()
    test_max_bytes()
    test_token_mode()
print('1..%d' % len(results))
sys.exit(0 if all(results) else 1)
