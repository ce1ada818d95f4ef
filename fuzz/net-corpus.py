#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Make a seed of fuzz/corpus-net: stand in for `cygprof receive` (the
handshake of docs/remote.md, agreeing to compression as receive does),
record one program with `cygprof record --send`, and save the frames it
streams after the handshake.  With --expand, every ZBATCH frame is replaced
by the frames it holds (the `zstd` command decompresses their stream): a
seed of plain PUT frames, whose values the fuzzer then changes.

With --connections, a seed of several connections (fuzz-net.c: each after
CONN_SEP) is made of a stream seed: stray peers (bytes that are not
cygprof, a wrong token, a hello cut short, another protocol version, a
connection that sends nothing), then a sender that offers the window ZWLOG
and proves the token over the harness's fixed nonce, followed by the frames
of STREAM, then one more stray peer (left waiting).
usage: net-corpus.py [--expand] OUT CYGPROF [RECORD OPTIONS] -- PROG [ARGS]
       net-corpus.py --connections OUT ZWLOG STREAM"""
import hashlib
import hmac
import os
import socket
import struct
import subprocess
import sys
import tempfile

MAGIC = b'CYGPNET\n'
ZWLOG = 23  # NETP_ZWLOG
VERSION = 5  # NETP_VERSION
TOKEN = b'fuzz-corpus-token-0123456789'
CONN_SEP = b'CYGPCONN'  # fuzz-net.c
FIXED_NONCE = b'fuzz-net: a fixed 32-byte nonce\0'  # fuzz-net.c fuzz_nonce


def proof(token, nonce):
    return hmac.new(token, nonce + b'cygprof-send-v1', hashlib.sha256).digest()


def connections(out, zwlog, stream_path):
    with open(stream_path, 'rb') as f:
        stream = f.read()
    hello = MAGIC + struct.pack('<II', VERSION, zwlog)
    conns = [b'GET / HTTP/1.0\r\n\r\n',
             hello + proof(b'not-the-token-at-all', FIXED_NONCE),
             MAGIC + b'\4\0',
             MAGIC + struct.pack('<II', 1, 0),
             b'',
             hello + proof(TOKEN, FIXED_NONCE) + stream,
             b'\x00' * 16]
    data = b''.join(CONN_SEP + c for c in conns)
    assert data.count(CONN_SEP) == len(conns)
    with open(out, 'wb') as f:
        f.write(data)
    print('%s: %d bytes' % (out, len(data)))


def read_n(c, n):
    b = b''
    while len(b) < n:
        chunk = c.recv(n - len(b))
        if not chunk:
            break
        b += chunk
    return b


def frames(data):
    """(type, the frame's bytes) of each whole frame of data, and the rest."""
    out, off = [], 0
    while off + 8 <= len(data):
        n, t = struct.unpack_from('<IH', data, off)
        out.append((t, data[off:off + 8 + n]))
        off += 8 + n
    return out, data[off:]


def expand(data):
    """The frames of data, each ZBATCH (type 7: u32 raw, the next bytes of
    the connection's zstd stream) replaced by its content."""
    fs, rest = frames(data)
    stream = b''.join(f[12:] for t, f in fs if t == 7)
    plain = subprocess.run(['zstd', '-dcq'], input=stream, stdout=subprocess.PIPE,
                           check=True).stdout if stream else b''
    out, at = b'', 0
    for t, f in fs:
        if t == 7:
            raw = struct.unpack_from('<I', f, 8)[0]
            out += plain[at:at + raw]
            at += raw
        else:
            out += f
    assert at == len(plain)
    return out + rest


def main():
    args = sys.argv[1:]
    if args[0] == '--connections':
        connections(args[1], int(args[2]), args[3])
        return
    plain = args[0] == '--expand'
    if plain:
        args = args[1:]
    out, cyg, rest = args[0], args[1], args[2:]
    with tempfile.TemporaryDirectory() as tmp:
        tok = os.path.join(tmp, 'token')
        with open(tok, 'wb') as f:
            f.write(TOKEN)
        os.chmod(tok, 0o600)
        srv = socket.socket()
        srv.bind(('127.0.0.1', 0))
        srv.listen(1)
        port = srv.getsockname()[1]
        rec = subprocess.Popen([cyg, 'record', '-q', '--send', '127.0.0.1:%d' % port,
                                '--token-file', tok] + rest, stdout=subprocess.DEVNULL)
        c, _ = srv.accept()
        hello = read_n(c, 16)
        assert hello[:8] == MAGIC, hello
        version, zwlog = struct.unpack('<II', hello[8:])
        assert version == VERSION, hello
        nonce = os.urandom(32)
        # the window record --send offers (NETP_ZWLOG), as receive agrees
        c.sendall(hello[:12] + struct.pack('<I', min(zwlog, ZWLOG)) + nonce)
        mac = read_n(c, 32)
        want = hmac.new(TOKEN, nonce + b'cygprof-send-v1', hashlib.sha256).digest()
        assert hmac.compare_digest(mac, want)
        c.sendall(b'K')
        data = b''
        while True:
            chunk = c.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        rec.wait()
    if plain:
        data = expand(data)
    with open(out, 'wb') as f:
        f.write(data)
    print('%s: %d bytes' % (out, len(data)))


main()
