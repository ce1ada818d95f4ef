#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Make a seed of fuzz/corpus-net: stand in for `cygprof receive` (the
handshake of docs/remote.md), record one program with `cygprof record
--send`, and save the frames it streams after the handshake.
usage: net-corpus.py OUT CYGPROF [RECORD OPTIONS] -- PROG [ARGS]"""
import hashlib
import hmac
import os
import socket
import subprocess
import sys
import tempfile

MAGIC = b'CYGPNET\n'
TOKEN = b'fuzz-corpus-token-0123456789'


def read_n(c, n):
    b = b''
    while len(b) < n:
        chunk = c.recv(n - len(b))
        if not chunk:
            break
        b += chunk
    return b


def main():
    out, cyg, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
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
        hello = read_n(c, 12)
        assert hello[:8] == MAGIC, hello
        nonce = os.urandom(32)
        c.sendall(hello + nonce)
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
    with open(out, 'wb') as f:
        f.write(data)
    print('%s: %d bytes' % (out, len(data)))


main()
