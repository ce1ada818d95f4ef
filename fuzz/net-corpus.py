#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Make a seed of fuzz/corpus-net: stand in for `cygprof receive` (the
handshake of docs/remote.md, agreeing to compression as receive does),
record one program with `cygprof record --send`, and save the frames it
streams after the handshake.  With --expand, every ZBATCH frame is replaced
by the frames it holds (the `zstd` command decompresses their stream): a
seed of plain PUT frames, whose values the fuzzer then changes.
usage: net-corpus.py [--expand] OUT CYGPROF [RECORD OPTIONS] -- PROG [ARGS]"""
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
TOKEN = b'fuzz-corpus-token-0123456789'


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
        assert version == 2, hello  # NETP_VERSION
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
