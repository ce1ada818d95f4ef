#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cygprof receive against stray peers (docs/remote.md "Receiver"): random
bytes, a wrong token, a connection closed during the hello, peers that
connect and close (with FIN and with RST, as a port scan does), a peer
trickling its hello one byte at a time: each is refused in exactly one
stderr line naming its address and why, and the record --send that follows
is received as if they had not been there (report: exact calls).  The
trickling peer is dropped when the whole handshake's deadline
(CYGPROF_HANDSHAKE_MS, shortened here) passes, though every byte came well
within it, while the sender waiting behind it is served.  A peer that
connects while a sender is served waits, and is closed unseen when the
capture ends.  A sender cut off right after its handshake leaves an
incomplete capture and one line.  A bad CYGPROF_HANDSHAKE_MS is refused,
naming the variable.
TAP output.  usage: stray.py CYGPROF --example CALLS"""
import argparse
import hashlib
import hmac
import json
import os
import queue
import re
import select
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ap = argparse.ArgumentParser()
ap.add_argument('cygprof')
ap.add_argument('--example', required=True)
ap.add_argument('--flood', action='store_true', help='only the flood of slow peers')
A = ap.parse_args()
CYG = os.path.abspath(A.cygprof)
PROG = os.path.abspath(A.example)
TOKEN = b'0123456789abcdef-secret'
MAGIC = b'CYGPNET\n'
VERSION = 5  # NETP_VERSION
CALLS = {'main': 1, 'a': 3, 'b': 6, 'c': 30}  # examples/calls.c
WAIT = 60  # generous: the machine running the suite may be loaded
results = []


def ok(cond, name, detail=''):
    results.append(cond)
    print('%s %d - %s' % ('ok' if cond else 'not ok', len(results), name))
    if not cond and detail:
        for line in str(detail).splitlines()[:40]:
            print('# ' + line)
    sys.stdout.flush()


def write_token(name, token):
    path = os.path.join(TMP, name)
    with open(path, 'wb') as f:
        f.write(token + b'\n')
    os.chmod(path, 0o600)
    return path


class Receiver:
    """cygprof receive on 127.0.0.1:0; its stderr lines arrive in a queue
    (read by a thread), so a test waits for the line it needs."""

    def __init__(self, out, env=None):
        self.p = subprocess.Popen([CYG, 'receive', '--listen', '127.0.0.1:0', '--token-file',
                                   TOK, '-o', out, '-f'], stderr=subprocess.PIPE,
                                  stdout=subprocess.DEVNULL, text=True, env=env)
        self.q = queue.Queue()
        self.lines = []
        threading.Thread(target=self._read, daemon=True).start()
        first = self.line()
        m = re.fullmatch(r'receive: listening on port (\d+)', first or '')
        self.port = int(m.group(1)) if m else None
        self.first = first

    def _read(self):
        for ln in self.p.stderr:
            self.q.put(ln.rstrip('\n'))
        self.q.put(None)

    def line(self):
        """The next stderr line (None at its end, or after WAIT s)."""
        try:
            ln = self.q.get(timeout=WAIT)
        except queue.Empty:
            return None
        if ln is not None:
            self.lines.append(ln)
        return ln

    def finish(self):
        """The exit status and every stderr line after the listening one."""
        try:
            self.p.wait(timeout=WAIT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        while self.line() is not None:
            pass
        return self.p.returncode, self.lines[1:]


def connect(port):
    c = socket.create_connection(('127.0.0.1', port), timeout=WAIT)
    return c, '127.0.0.1:%d' % c.getsockname()[1]


def refusal(peer, why):
    return 'receive: refused %s: %s' % (peer, why)


def record(port, tok=None):
    return subprocess.run([CYG, 'record', '-q', '--send', '127.0.0.1:%d' % port,
                           '--token-file', tok or TOK, '--', PROG],
                          capture_output=True, text=True, timeout=WAIT)


def calls_of(path):
    cp = subprocess.run([CYG, 'report', '--format=json', path], capture_output=True, text=True)
    try:
        return {f['name']: f['calls'] for f in json.loads(cp.stdout)['functions']}
    except (ValueError, KeyError, TypeError):
        return cp.stderr


def received(name, r, out, rec, before):
    """The sender after the stray peers: record exits 0, receive exits 0
    with the lines of the peers refused (before) and its own last line, and
    the capture reports the exact calls."""
    rc, lines = r.finish()
    ok(rec.returncode == 0 and rec.stdout == 'calls: a=3 b=6 c=30\n',
       '%s: record --send ran the program and sent it' % name, rec.stderr + rec.stdout)
    last = lines[-1] if lines else ''
    ok(rc == 0 and lines[:-1] == before and
       re.fullmatch(r'receive: %s: \d+ bytes received from 127\.0\.0\.1:\d+ '
                    r'\(\d+ uncompressed\)' % re.escape(out), last) is not None,
       '%s: receive refused each stray peer in one line, then received, exit 0' % name,
       'exit %s\n%s' % (rc, '\n'.join(lines)))
    ok(calls_of(out) == CALLS, '%s: report shows the exact calls' % name, calls_of(out))


def start(name, env=None):
    out = os.path.join(TMP, name + '.cyg')
    r = Receiver(out, env)
    if r.port is None:
        ok(False, '%s: receiver started' % name, r.first)
    return r, out


def test_random_bytes():
    r, out = start('random')
    if r.port is None:
        return
    c, peer = connect(r.port)
    c.sendall(bytes(range(7, 250, 3)) * 4)
    ln = r.line()
    c.close()
    ok(ln == refusal(peer, 'the peer is not cygprof record --send'),
       'random bytes: refused in one line naming the peer', ln)
    received('random bytes', r, out, record(r.port), [ln])


def test_wrong_token():
    r, out = start('wrongtok')
    if r.port is None:
        return
    bad = record(r.port, write_token('wrong-token', b'not-the-token-at-all'))
    ok(bad.returncode == 1 and bad.stderr.strip().endswith('the receiver refused the token')
       and len(bad.stderr.strip().splitlines()) == 1 and bad.stdout == '',
       'wrong token: record refused in one line before the program ran', bad.stderr)
    ln = r.line()
    ok(re.fullmatch(r'receive: refused 127\.0\.0\.1:\d+: wrong token', ln or '') is not None,
       'wrong token: receive refuses in one line and goes on', ln)
    received('wrong token', r, out, record(r.port), [ln])


def test_closed_in_hello():
    r, out = start('hello')
    if r.port is None:
        return
    c, peer = connect(r.port)
    c.sendall(MAGIC + b'\2\0')
    c.close()
    ln = r.line()
    ok(ln == refusal(peer, 'connection closed during the handshake (hello)'),
       'closed during the hello: refused in one line', ln)
    received('closed during the hello', r, out, record(r.port), [ln])


def test_port_scan():
    """Connect and close, four times with FIN and three with RST, each
    before sending a byte (what a connect scan does)."""
    r, out = start('scan')
    if r.port is None:
        return
    want = []
    for i in range(7):
        c, peer = connect(r.port)
        if i >= 4:
            c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0))
        c.close()
        want.append(refusal(peer, 'connection closed during the handshake (hello)'))
    got = [r.line() for _ in want]
    ok(got == want, 'port scan: each connection refused in one line, in order', '\n'.join(
        map(str, got)))
    received('port scan', r, out, record(r.port), want)


def test_trickle():
    """A peer sending its hello one byte every 200 ms: each byte well
    within the handshake's 1000 ms, the hello not.  The record --send
    after it is served."""
    env = dict(os.environ, CYGPROF_HANDSHAKE_MS='1000')
    r, out = start('trickle', env)
    if r.port is None:
        return
    t0 = time.monotonic()  # before the connect: the deadline starts at the accept
    c, peer = connect(r.port)
    sent, dropped = 0, None
    hello = MAGIC + struct.pack('<II', VERSION, 0)
    try:
        for b in hello:
            c.sendall(bytes([b]))
            sent += 1
            if select.select([c], [], [], 0.2)[0]:
                dropped = time.monotonic() - t0
                break
    except OSError:
        dropped = time.monotonic() - t0
    c.close()
    ln = r.line()
    ok(ln == refusal(peer, 'handshake not done within 1000 ms (hello)'),
       'trickle: refused in one line at the deadline', ln)
    # bytes kept coming, 200 ms apart, and the hello never completed: a
    # timeout per read would not have dropped it in the hello
    ok(dropped is not None and 1.0 <= dropped < 5 and 2 <= sent < len(hello),
       'trickle: dropped when the whole handshake passed 1000 ms, after %d of %d bytes'
       % (sent, len(hello)), 'dropped after %s s, %d bytes sent' % (dropped, sent))
    received('trickle', r, out, record(r.port), [ln])


def test_beside():
    """A record --send that connects while a peer trickles its hello is
    served beside it, without waiting for the peer's deadline (60 s
    here); the peer, still in its handshake, is then refused."""
    env = dict(os.environ, CYGPROF_HANDSHAKE_MS='60000')
    r, out = start('beside', env)
    if r.port is None:
        return
    c, peer = connect(r.port)
    c.sendall(MAGIC[:3])
    t0 = time.monotonic()
    rec = record(r.port)
    took = time.monotonic() - t0
    c.close()
    ok(took < 0.9 * WAIT / 6, 'beside: record --send took %.1f s, served beside the '
       'peer in its hello' % took)
    received('beside', r, out, rec, [refusal(peer, 'another sender is being received')])


FLOOD_OK = re.compile(r'receive: refused 127\.0\.0\.1:\d+: (handshake not done within 1000 '
                      r'ms \(hello\)|another sender is being received|connection closed '
                      r'during the handshake \(hello\))')


def test_flood():
    """Four peers that send their hello a byte a second and reconnect when
    dropped, twenty that connect and hold (and reconnect): a record --send
    started among them is served within 10 s, and its capture has the
    exact calls.  Every peer dropped is one line."""
    r, out = start('flood')
    if r.port is None:
        return
    stop = threading.Event()
    conns = {'trickle': 0, 'hold': 0}
    hello = MAGIC + struct.pack('<II', VERSION, 0)
    lock = threading.Lock()

    def peer(kind):
        while not stop.is_set():
            try:
                c = socket.create_connection(('127.0.0.1', r.port), timeout=WAIT)
            except OSError:
                return  # receive is gone
            with lock:
                conns[kind] += 1
            try:
                i = 0
                while not stop.is_set():
                    if kind == 'trickle' and i < len(hello):
                        c.sendall(hello[i:i + 1])
                        i += 1
                    # a byte a second; dropped when the receiver closes
                    if select.select([c], [], [], 1.0)[0]:
                        break
            except OSError:
                pass
            c.close()

    threads = [threading.Thread(target=peer, args=('trickle',), daemon=True) for _ in range(4)]
    threads += [threading.Thread(target=peer, args=('hold',), daemon=True) for _ in range(20)]
    for t in threads:
        t.start()
    # every peer connected, and the first of them dropped and back
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        with lock:
            if conns['trickle'] >= 8 and conns['hold'] >= 20:
                break
        time.sleep(0.05)
    t0 = time.monotonic()
    try:
        rec = record(r.port)
    except subprocess.TimeoutExpired as e:
        rec = subprocess.CompletedProcess(e.cmd, 'timeout', '', 'not done within %d s' % WAIT)
    finally:
        took = time.monotonic() - t0
        stop.set()
    for t in threads:
        t.join(WAIT)
    if rec.returncode == 'timeout':
        r.p.kill()
    rc, lines = r.finish()
    ok(conns['trickle'] >= 8 and conns['hold'] >= 20,
       'flood: the trickling peers reconnected, the holding ones connected', conns)
    ok(took < 10, 'flood: record --send served and done within 10 s (%.1f s)' % took)
    ok(rec.returncode == 0 and rec.stdout == 'calls: a=3 b=6 c=30\n',
       'flood: record --send ran the program and sent it', rec.stderr + rec.stdout)
    last = lines[-1] if lines else ''
    bad = [ln for ln in lines[:-1] if not FLOOD_OK.fullmatch(ln)]
    ok(rc == 0 and not bad and len(lines) > 1 and
       re.fullmatch(r'receive: %s: \d+ bytes received from 127\.0\.0\.1:\d+ '
                    r'\(\d+ uncompressed\)' % re.escape(out), last) is not None,
       'flood: each peer dropped in one line, the sender received, exit 0',
       'exit %s\n%s' % (rc, '\n'.join(bad + [last])))
    ok(calls_of(out) == CALLS, 'flood: report shows the exact calls', calls_of(out))


def handshake(c, token):
    c.sendall(MAGIC + struct.pack('<II', VERSION, 0))
    reply = b''
    while len(reply) < 48:
        chunk = c.recv(48 - len(reply))
        if not chunk:
            break
        reply += chunk
    c.sendall(hmac.new(token, reply[16:48] + b'cygprof-send-v1', hashlib.sha256).digest())
    return c.recv(1)


def frame(t, payload=b''):
    return struct.pack('<IHH', len(payload), t, 0) + payload


def test_waiting_peer():
    """A peer that connects while a sender is served waits in the backlog;
    receive exits when the capture ends, and the peer is closed, unseen."""
    r, out = start('waiting')
    if r.port is None:
        return
    c, _ = connect(r.port)
    verdict = handshake(c, TOKEN)
    w, _ = connect(r.port)
    w.sendall(b'GET / HTTP/1.0\r\n\r\n')
    # BEGIN, PUT meta "complete" "1", COMMIT, END (docs/remote.md "Frames")
    complete = struct.pack('<HH', 0, 8) + b'complete' + b'1'
    c.sendall(frame(1) + frame(3, complete) + frame(2) + frame(5))
    c.close()
    rc, lines = r.finish()
    ok(verdict == b'K' and rc == 0 and len(lines) == 1 and
       re.fullmatch(r'receive: %s: 45 bytes received from 127\.0\.0\.1:\d+ '
                    r'\(45 uncompressed\)' % re.escape(out), lines[0]) is not None,
       'waiting peer: the sender served, its bytes counted exactly, no line for the peer',
       '%s %s\n%s' % (verdict, rc, '\n'.join(lines)))
    try:
        got = w.recv(1)
    except ConnectionResetError:
        got = b''
    w.close()
    ok(got == b'', 'waiting peer: closed when receive ends', got)


def test_cut_after_handshake():
    """A sender gone right after its handshake: an incomplete capture, one
    line saying what arrived: a frame and part of the next."""
    r, out = start('cut0')
    if r.port is None:
        return
    c, peer = connect(r.port)
    verdict = handshake(c, TOKEN)
    c.sendall(frame(1) + frame(3, struct.pack('<HH', 0, 7) + b'command' + b'prog')[:9])
    c.close()
    rc, lines = r.finish()
    want = ('cygprof: receive: connection lost after 17 bytes received from %s (8 uncompressed); '
            '%s kept, incomplete' % (peer, out))
    ok(verdict == b'K' and rc == 1 and lines == [want],
       'cut after the handshake: one line with what arrived, exit 1', '\n'.join(lines))
    cp = subprocess.run([CYG, 'info', '--format=json', out], capture_output=True, text=True)
    try:
        doc = json.loads(cp.stdout)
        complete = doc['limits']['complete']
    except (ValueError, KeyError, TypeError):
        complete = None
    ok(cp.returncode == 0 and complete is False, 'cut after the handshake: info reads it, '
       'incomplete', cp.stdout + cp.stderr)


def test_bad_env():
    for v in ('abc', '0', '-5', '600001', '10ms'):
        env = dict(os.environ, CYGPROF_HANDSHAKE_MS=v)
        cp = subprocess.run([CYG, 'receive', '--listen', '127.0.0.1:0', '--token-file', TOK,
                             '-o', os.path.join(TMP, 'env.cyg')], capture_output=True,
                            text=True, env=env, timeout=WAIT)
        ok(cp.returncode == 2 and cp.stderr ==
           "cygprof: CYGPROF_HANDSHAKE_MS=%s: not an integer from 1 to 600000\n" % v,
           'CYGPROF_HANDSHAKE_MS=%r: refused, naming it, exit 2' % v,
           cp.stderr)


with tempfile.TemporaryDirectory() as TMP:
    TOK = write_token('token', TOKEN)
    if A.flood:
        test_flood()
        print('1..%d' % len(results))
        sys.exit(0 if all(results) else 1)
    test_random_bytes()
    test_wrong_token()
    test_closed_in_hello()
    test_port_scan()
    test_trickle()
    test_beside()
    test_waiting_peer()
    test_cut_after_handshake()
    test_bad_env()
print('1..%d' % len(results))
sys.exit(0 if all(results) else 1)
