#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cygprof receive over loopback, against a sender written here from
docs/remote.md (send.py drives record --send itself): a whole stream gives a
complete capture; a wrong token is refused on both sides and writes
nothing; a connection cut mid-stream keeps an incomplete capture; a stream
past --max-bytes is cut; a token file others may read is refused.
TAP output.  usage: receive.py CYGPROF"""
import hashlib
import hmac
import json
import os
import socket
import struct
import subprocess
import sys
import tempfile
import time

CYG = sys.argv[1]
TOKEN = b'0123456789abcdef-secret'
MAGIC = b'CYGPNET\n'
T = dict(BEGIN=1, COMMIT=2, META=3, PROC=4, THREAD=5, TREE=6, PUBLISH=17, END=18, ABORT=19)
NONE = 0xffffffff
results = []


def ok(cond, name, detail=''):
    results.append(cond)
    print('%s %d - %s' % ('ok' if cond else 'not ok', len(results), name))
    if not cond and detail:
        for line in str(detail).splitlines():
            print('# ' + line)


def frame(t, payload=b''):
    return struct.pack('<IHH', len(payload), T[t], 0) + payload


def s(text):
    b = text.encode()
    return struct.pack('<I', len(b)) + b


def stream():
    """One process, one thread, main -> work called 1000 times."""
    first = frame('BEGIN') + frame('META', s('command') + s('prog')) + \
        frame('META', s('mode') + s('profile')) + \
        frame('PROC', struct.pack('<IIIIQQIi', 0, 42, 1, NONE, 0, 5000, 1, 0) +
              s('prog') + s('/tmp/prog')) + \
        frame('THREAD', struct.pack('<IIII' + 'Q' * 9, 0, 0, 42, 1, 0, 5000, 1001, 0, 0, 0,
                                    0, 0, 0) + b'prog'.ljust(16, b'\0') +
              struct.pack('<QQQ', 0, 0, 0)) + \
        frame('COMMIT') + frame('PUBLISH')
    nodes = [(NONE, 0, 0, 0, 0, 0), (0, 0, 0x401000, 0x400500, 1, 5000),
             (1, 0, 0x401100, 0x401010, 1000, 3000)]
    tree = struct.pack('<II', 0, len(nodes)) + b''.join(struct.pack('<IIQQQQ', *n)
                                                         for n in nodes)
    second = frame('BEGIN') + frame('TREE', tree) + \
        frame('META', s('duration_ns') + s('5000')) + \
        frame('META', s('complete') + s('1')) + frame('COMMIT')
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


def connect(port, token):
    c = socket.create_connection(('127.0.0.1', port), timeout=10)
    c.sendall(MAGIC + struct.pack('<I', 1))
    reply = b''
    while len(reply) < 12 + 32:
        chunk = c.recv(12 + 32 - len(reply))
        if not chunk:
            break
        reply += chunk
    mac = hmac.new(token, reply[12:44] + b'cygprof-send-v1', hashlib.sha256).digest()
    c.sendall(mac)
    verdict = c.recv(1)
    return c, verdict


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


def test_whole():
    out = os.path.join(TMP, 'whole.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'whole stream', line)
        return
    c, verdict = connect(port, TOKEN)
    first, second = stream()
    c.sendall(first + second)
    c.close()
    rc, err = finish(p)
    ok(verdict == b'K' and rc == 0, 'whole stream: receiver exits 0', err)
    cp = subprocess.run([CYG, 'report', '--format=json', out], capture_output=True, text=True)
    ok(cp.returncode == 0, 'whole stream: report reads it', cp.stderr)
    rc, text, e = info(out)
    ok(rc == 0 and complete(text) is True, 'whole stream: complete', text + e)
    try:
        calls = {f['name']: f['calls'] for f in json.loads(cp.stdout)['functions']}
    except (ValueError, KeyError, TypeError):
        calls = None
    ok(calls == {'0x401000': 1, '0x401100': 1000}, 'whole stream: the calls sent',
       cp.stdout[:2000])


def test_wrong_token():
    out = os.path.join(TMP, 'wrong.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'wrong token', line)
        return
    c, verdict = connect(port, b'not-the-token-at-all')
    c.close()
    rc, err = finish(p)
    ok(verdict == b'T', 'wrong token: the sender is told', repr(verdict))
    ok(rc == 1 and 'wrong token' in err and len(err.strip().splitlines()) == 1,
       'wrong token: receiver refuses in one line, exit 1', err)
    ok(not os.path.exists(out), 'wrong token: nothing written')


def test_cut():
    out = os.path.join(TMP, 'cut.cyg')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'cut', line)
        return
    c, verdict = connect(port, TOKEN)
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
    c, verdict = connect(port, TOKEN)
    first, _ = stream()
    big = frame('META', s('filler') + s('x' * 2000))
    try:
        c.sendall(first + big + frame('END'))
    except OSError:
        pass
    c.close()
    rc, err = finish(p)
    ok(rc == 1 and '--max-bytes' in err, 'max-bytes: stream cut, exit 1', err)
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
    test_wrong_token()
    test_cut()
    test_max_bytes()
    test_token_mode()
print('1..%d' % len(results))
sys.exit(0 if all(results) else 1)
