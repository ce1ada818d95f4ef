#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof push` and `cygprof record --push`.

Usage:
  push.py --cygprof CYGPROF --example LONGRUN --test NAME [-v] [--keep]

A small Pyroscope stand-in (http.server in a thread) takes POST /ingest:
it parses the multipart body, gunzips the part "profile" and decodes the
pprof profile.proto with the varint reader below (field numbers of
google/pprof proto/profile.proto), and keeps every request.  EXAMPLE is
examples/longrun.c (ROUNDS rounds of 100 ms: round_ once, work K times).

  push-oneshot   record, then `push --app --label`: one request whose
                 calls per function equal `report --format=json`'s; the
                 name is APP{hostname=...,command=BASENAME,pid=...,team=a};
                 from <= until, the capture's wall clock; format=pprof,
                 spyName=cygprof; sample types calls/count, time/nanoseconds
  push-interval  `record --push --push-interval 1` of a 3 s run: at least 3
                 pushes whose [from, until) follow each other without gap or
                 overlap, whose calls add up to the capture's per function;
                 info's push_sent is their number, push_dropped 0
  push-token     the server wants `Authorization: Bearer <token>`: the right
                 token is sent and taken; a wrong one (401) is one line
                 naming the status and the server's message, exit 4; a token
                 file of mode 0644 is refused in one line (exit 2), nothing sent
  push-credentials  the tenant (X-Scope-OrgID) from --push-tenant-file or
                 CYGPROF_PUSH_TENANT (the file wins), HTTP basic auth from
                 --push-basic-auth-file or CYGPROF_PUSH_BASIC_AUTH, sent
                 exactly, by push and record --push; a server that wants
                 basic auth takes the right one and refuses a wrong one
                 (401, exit 4); refused in one line, exit 2, nothing sent:
                 a basic-auth file others may read, a value that is not
                 USER:PASSWORD (never shown), a token with basic auth; the
                 program record starts does not get the variables
  push-down      `record --push` to a closed port: the program runs to its
                 end (exit 0, its last line), one line says how many
                 intervals were dropped, info's push_dropped counts them
                 (no timing is asserted: bench/push.py measures the cost)
  push-slow      the server answers each request after 2 s: the program
                 still ends, record too, and every interval is either sent
                 or dropped (push_sent + push_dropped)
  push-tls       https with a self-signed certificate (made by openssl,
                 skipped without it): refused (certificates are checked),
                 exit 4; taken with --push-cacert that certificate
  push-options   a --push or --server URL curl cannot parse ('http://[::1')
                 is one line, exit 2, before the program runs; the
                 --push-interval range is the documented 1 s to a day
  push-memory    (--mem-prog: tests/memory's mem-basic) a --memory capture:
                 two requests, the calls as the report's, then the
                 allocation stacks whose alloc_objects, alloc_space and
                 leaked_space add up to `cygprof memory`'s totals
  push-attach    `record --attach PID --duration 2500ms --push`: at least
                 2 contiguous pushes with the label pid=PID whose calls add
                 up to the window's capture; the program runs on (skipped
                 where ptrace is refused)
"""
import base64
import gzip
import subprocess
import http.server
import os
import re
import socket
import sys
import threading
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run  # noqa: E402


# --------------------------------------------------------------------------
# profile.proto, by hand


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
    """(field number, wire type, value) of a message: ints or bytes."""
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
            raise Failure('pprof: wire type %d' % wt)
        out.append((f, wt, v))
    return out


def packed(v, wt):
    if wt == 0:
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def decode_pprof(raw):
    """{'types': [(type, unit)], 'samples': [(location ids, values)],
    'loc_fn': {loc id: fn id}, 'fn_name': {fn id: name}, 'time', 'duration'}."""
    p = {'types': [], 'samples': [], 'loc_fn': {}, 'fn_name': {}, 'time': 0, 'duration': 0}
    strings, fnname = [], {}
    for f, wt, v in fields(raw):
        if f == 6:
            strings.append(v.decode('utf-8', 'replace'))
    for f, wt, v in fields(raw):
        if f == 1:
            d = {k: x for k, _, x in fields(v)}
            p['types'].append((strings[d.get(1, 0)], strings[d.get(2, 0)]))
        elif f == 2:
            locs, vals = [], []
            for k, w, x in fields(v):
                if k == 1:
                    locs += packed(x, w)
                elif k == 2:
                    vals += [y - (1 << 64) if y >= 1 << 63 else y for y in packed(x, w)]
            p['samples'].append((locs, vals))
        elif f == 4:
            lid, fn = 0, 0
            for k, w, x in fields(v):
                if k == 1:
                    lid = x
                elif k == 4:
                    fn = dict((a, c) for a, _, c in fields(x)).get(1, 0)
            p['loc_fn'][lid] = fn
        elif f == 5:
            d = {k: x for k, _, x in fields(v)}
            fnname[d.get(1, 0)] = strings[d.get(2, 0)]
        elif f == 9:
            p['time'] = v
        elif f == 10:
            p['duration'] = v
    p['fn_name'] = fnname
    return p


def calls_per_function(p):
    """Calls per function: each sample's calls to its innermost location."""
    idx = [t for t, _ in p['types']].index('calls')
    out = {}
    for locs, vals in p['samples']:
        if not locs or not vals[idx]:
            continue
        name = p['fn_name'][p['loc_fn'][locs[0]]]
        out[name] = out.get(name, 0) + vals[idx]
    return out


# --------------------------------------------------------------------------
# the server


def multipart_parts(ctype, body):
    m = re.search(r'boundary="?([^";]+)"?', ctype)
    if not m:
        raise ValueError('no boundary in %r' % ctype)
    sep = b'--' + m.group(1).encode()
    parts = {}
    for chunk in body.split(sep)[1:]:
        if chunk.startswith(b'--'):
            break
        head, _, data = chunk.partition(b'\r\n\r\n')
        data = data[:-2] if data.endswith(b'\r\n') else data
        nm = re.search(rb'name="([^"]*)"', head)
        if nm:
            parts[nm.group(1).decode()] = data
    return parts


class Ingest:
    """A Pyroscope /ingest stand-in: requests as dicts (query, headers,
    profile decoded); token: required bearer token; delay_s: before each
    answer."""

    def __init__(self, token=None, delay_s=0.0, tls=None, basic=None):
        self.requests = []
        self.token = token
        # basic: USER:PASSWORD required as HTTP basic auth
        self.basic = base64.b64encode(basic.encode()).decode() if basic else None
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.cv = threading.Condition(self.lock)
        srv = self

        class H(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                n = int(self.headers.get('Content-Length', '0'))
                body = self.rfile.read(n)
                u = urllib.parse.urlsplit(self.path)
                q = dict(urllib.parse.parse_qsl(u.query, keep_blank_values=True))
                req = {'path': u.path, 'query': q, 'auth': self.headers.get('Authorization'),
                       'org': self.headers.get('X-Scope-OrgID'),
                       'n_org': len(self.headers.get_all('X-Scope-OrgID') or []),
                       'n_auth': len(self.headers.get_all('Authorization') or []),
                       'error': None, 'profile': None, 'bytes': len(body)}
                if srv.delay_s:
                    time.sleep(srv.delay_s)
                if srv.basic and req['auth'] != 'Basic ' + srv.basic:
                    code, msg = 401, b'{"code":"unauthenticated","message":"invalid credentials"}'
                elif srv.token and req['auth'] != 'Bearer ' + srv.token:
                    code, msg = 401, b'{"code":"unauthenticated","message":"invalid token"}'
                else:
                    code, msg = 200, b''
                    try:
                        parts = multipart_parts(self.headers.get('Content-Type', ''), body)
                        req['profile'] = decode_pprof(gzip.decompress(parts['profile']))
                    except Exception as e:  # noqa: BLE001 (the test reports it)
                        req['error'] = '%s: %s' % (type(e).__name__, e)
                        code, msg = 400, b'bad profile'
                req['status'] = code
                with srv.cv:
                    srv.requests.append(req)
                    srv.cv.notify_all()
                try:
                    self.send_response(code)
                    self.send_header('Content-Length', str(len(msg)))
                    self.end_headers()
                    self.wfile.write(msg)
                except OSError:
                    pass

        self.httpd = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
        self.httpd.daemon_threads = True
        self.url = 'http://127.0.0.1:%d' % self.httpd.server_address[1]
        if tls:  # (certificate, key): https://localhost
            import ssl
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(*tls)
            self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
            self.url = 'https://localhost:%d' % self.httpd.server_address[1]
        self.th = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.th.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    def taken(self):
        with self.lock:
            return list(self.requests)


def closed_port():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()  # nobody listens there now
    return port


def report_calls(ck, cyg, cap):
    data, _ = cyg.report_json(cap, ck)
    return {f['name']: f['calls'] for f in data['functions'] if f['calls']}


def parse_name(name):
    m = re.match(r'^([^{]*)\{(.*)\}$', name)
    if not m:
        raise Failure('name %r is not APP{labels}' % name)
    labels = dict(kv.split('=', 1) for kv in m.group(2).split(',') if kv)
    return m.group(1), labels


def wall_clock(ck, cyg, cap):
    info = cygtest.info_json(ck, cyg, cap)
    meta = info.get('meta', info)
    cs = meta.get('clock_start')
    dur = meta.get('duration_ns')
    if not isinstance(cs, dict) or not isinstance(dur, int):
        raise Failure('info: no clock_start/duration_ns (%r, %r)' % (cs, dur))
    return cs['real_ns'], dur, meta


def check_request(ck, r, what):
    ck.eq(r['path'], '/ingest', '%s: path' % what)
    ck.check(r['error'] is None, '%s: profile decoded (%s)' % (what, r['error']))
    q = r['query']
    ck.eq(q.get('format'), 'pprof', '%s: format' % what)
    ck.eq(q.get('spyName'), 'cygprof', '%s: spyName' % what)
    ck.check(q.get('sampleRate', '').isdigit(), '%s: sampleRate %r' % (what, q.get('sampleRate')))
    ck.check(q.get('from', '').isdigit() and q.get('until', '').isdigit() and
             int(q['from']) <= int(q['until']),
             '%s: from %r <= until %r' % (what, q.get('from'), q.get('until')))


# --------------------------------------------------------------------------
# the tests


def test_oneshot(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [example, os.path.join(cyg.workdir, 'pid'), '3', '500'])
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    want = report_calls(ck, cyg, cap)
    real_ns, dur, meta = wall_clock(ck, cyg, cap)
    srv = Ingest()
    try:
        cp = run([cyg.exe, 'push', '--server', srv.url, '--app', 'myapp', '--label', 'team=a',
                  cap])
        ck.eq(cp.returncode, 0, 'push: exit status (%s)' % cp.err.strip())
        reqs = srv.taken()
    finally:
        srv.close()
    if not ck.eq(len(reqs), 1, 'requests taken'):
        return
    r = reqs[0]
    check_request(ck, r, 'push')
    app, labels = parse_name(r['query'].get('name', ''))
    ck.eq(app, 'myapp', 'application name')
    ck.eq(labels.get('team'), 'a', 'label team')
    ck.eq(labels.get('command'), os.path.basename(example), 'label command')
    ck.eq(labels.get('hostname'), meta.get('hostname'), 'label hostname')
    pids = [p['pid'] for p in cygtest.info_json(ck, cyg, cap).get('processes', [])]
    ck.check(labels.get('pid', '').isdigit() and (not pids or int(labels['pid']) == pids[0]),
             'label pid %r is the program\'s (%r)' % (labels.get('pid'), pids[:1]))
    ck.eq(int(r['query']['from']), real_ns // 10**9, 'from: the capture\'s start (unix s)')
    ck.check(int(r['query']['until']) in ((real_ns + dur) // 10**9,
                                          (real_ns + dur) // 10**9 + 1),
             'until: the capture\'s end (%s)' % r['query']['until'])
    p = r['profile']
    if p is None:
        return
    types = [t for t, _ in p['types']]
    ck.check(p['types'][:2] == [('calls', 'count'), ('time', 'nanoseconds')],
             'sample types calls/count, time/nanoseconds (%r)' % p['types'])
    got = calls_per_function(p)
    ck.check(cygtest.diff_table('calls per function (push vs report)', want, got),
             'calls per function equal the report\'s (%d functions)' % len(want))
    ck.eq(got.get('work'), 3 * 500, 'work() calls')
    ck.check('time' in types, 'a time sample type')
    # usage: no server
    cp = run([cyg.exe, 'push', cap])
    cygtest.expect_error(ck, cp, 'push without --server', 2)


def wait_requests(srv, n, proc_done):
    """The requests, once at least n came or the recording is over."""
    with srv.cv:
        srv.cv.wait_for(lambda: len(srv.requests) >= n or proc_done(), timeout=60)
        return list(srv.requests)


def test_interval(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    srv = Ingest()
    try:
        cp = cyg.record(cap, [example, os.path.join(cyg.workdir, 'pid'), '30', '2000'],
                        opts=['--push', srv.url, '--push-interval', '1', '--label', 'run=t'])
        ck.eq(cp.returncode, 0, 'record --push: exit status')
        ck.check('dropped' not in cp.err, 'no line about dropped intervals (%r)' % cp.err)
        reqs = srv.taken()
    finally:
        srv.close()
    want = report_calls(ck, cyg, cap)
    ck.check(len(reqs) >= 3, 'at least 3 pushes of a 3 s run every second (%d)' % len(reqs))
    spans = []
    total = {}
    for i, r in enumerate(reqs):
        check_request(ck, r, 'push %d' % i)
        app, labels = parse_name(r['query'].get('name', ''))
        ck.eq(app, os.path.basename(example), 'push %d: application name (default: the command)' % i)
        ck.eq(labels.get('run'), 't', 'push %d: label run' % i)
        ck.check(labels.get('pid', '').isdigit(), 'push %d: label pid %r' % (i, labels.get('pid')))
        spans.append((int(r['query']['from']), int(r['query']['until'])))
        if r['profile']:
            for k, v in calls_per_function(r['profile']).items():
                total[k] = total.get(k, 0) + v
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        ck.check(a[1] == b[0], 'intervals contiguous: %r then %r (no gap, no overlap)' % (a, b))
    ck.check(len(set(spans)) == len(spans), 'no interval sent twice (%r)' % spans)
    ck.check(cygtest.diff_table('calls per function (sum of pushes vs capture)', want, total),
             'the pushes\' calls add up to the capture\'s (%d functions)' % len(want))
    ck.eq(total.get('work'), 30 * 2000, 'work() calls over the pushes')
    _, _, meta = wall_clock(ck, cyg, cap)
    ck.eq(meta.get('push_sent'), len(reqs), 'meta push_sent (a JSON number)')
    ck.eq(meta.get('push_dropped'), 0, 'meta push_dropped')


def test_token(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [example, os.path.join(cyg.workdir, 'pid'), '1', '10'])
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    good = os.path.join(cyg.workdir, 'good.token')
    bad = os.path.join(cyg.workdir, 'bad.token')
    loose = os.path.join(cyg.workdir, 'loose.token')
    for path, text, mode in ((good, 's3cret-token\n', 0o600), (bad, 'wrong\n', 0o600),
                             (loose, 's3cret-token\n', 0o644)):
        with open(path, 'w') as f:
            f.write(text)
        os.chmod(path, mode)
    srv = Ingest(token='s3cret-token')
    try:
        cp = run([cyg.exe, 'push', '--server', srv.url, '--push-token-file', good, cap])
        ck.eq(cp.returncode, 0, 'right token: exit status (%s)' % cp.err.strip())
        cp = run([cyg.exe, 'push', '--server', srv.url, '--push-token-file', bad, cap])
        cygtest.expect_error(ck, cp, 'wrong token', 4)
        ck.check('401' in cp.err and 'invalid token' in cp.err,
                 'wrong token: the line names the status and the server\'s message (%r)' % cp.err)
        n = len(srv.taken())
        cp = run([cyg.exe, 'push', '--server', srv.url, '--push-token-file', loose, cap])
        cygtest.expect_error(ck, cp, 'token file of mode 0644', 2)
        ck.check('0644' in cp.err, 'mode 0644: the line says the mode (%r)' % cp.err)
        ck.eq(len(srv.taken()), n, 'mode 0644: nothing sent')
        cp = cyg.record(os.path.join(cyg.workdir, 'r.data'),
                        [example, os.path.join(cyg.workdir, 'pid2'), '1', '10'],
                        opts=['--push', srv.url, '--push-token-file', loose])
        cygtest.expect_error(ck, cp, 'record --push-token-file of mode 0644', 2)
        reqs = srv.taken()
    finally:
        srv.close()
    ck.eq([r['auth'] for r in reqs[:2]], ['Bearer s3cret-token', 'Bearer wrong'],
          'the tokens sent as Authorization: Bearer')
    ck.eq([r['status'] for r in reqs[:2]], [200, 401], 'the server\'s answers')


def run_env(cmd, env):
    """cmd with env added to (or, for None values, taken from) ours."""
    full = dict(os.environ)
    for k, v in env.items():
        if v is None:
            full.pop(k, None)
        else:
            full[k] = v
    print('$ %s %s' % (' '.join('%s=%s' % kv for kv in env.items()), ' '.join(cmd)))
    cp = subprocess.run(cmd, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL, timeout=cygtest.TIMEOUT)
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    return cp


def test_credentials(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [example, os.path.join(cyg.workdir, 'pid'), '1', '10'])
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    w = cyg.workdir
    files = {}
    for name, text, mode in (('tenant', 'team-a\n', 0o644), ('basic', '123456:glc_s3cr=t\n', 0o600),
                             ('wrongbasic', '123456:nope\n', 0o600),
                             ('loosebasic', '123456:glc_s3cr=t\n', 0o640),
                             ('token', 'tok\n', 0o600)):
        files[name] = os.path.join(w, name)
        with open(files[name], 'w') as f:
            f.write(text)
        os.chmod(files[name], mode)
    clean = {'CYGPROF_PUSH_TENANT': None, 'CYGPROF_PUSH_BASIC_AUTH': None}
    b64 = 'Basic ' + base64.b64encode(b'123456:glc_s3cr=t').decode()
    srv = Ingest(basic='123456:glc_s3cr=t')
    try:
        push = [cyg.exe, 'push', '--server', srv.url]
        # (what, command, environment, tenant sent)
        good = [
            ('files', push + ['--push-tenant-file', files['tenant'],
                              '--push-basic-auth-file', files['basic'], cap], {}, 'team-a'),
            ('variables', push + [cap], {'CYGPROF_PUSH_TENANT': 'env-tenant',
                                         'CYGPROF_PUSH_BASIC_AUTH': '123456:glc_s3cr=t'},
             'env-tenant'),
            ('a file wins over its variable',
             push + ['--push-tenant-file', files['tenant'], '--push-basic-auth-file',
                     files['basic'], cap],
             {'CYGPROF_PUSH_TENANT': 'env-tenant', 'CYGPROF_PUSH_BASIC_AUTH': '9:wrong'},
             'team-a'),
        ]
        for what, cmd, env, tenant in good:
            n = len(srv.taken())
            cp = run_env(cmd, dict(clean, **env))
            ck.eq(cp.returncode, 0, '%s: exit status (%s)' % (what, cp.err.strip()))
            reqs = srv.taken()[n:]
            ck.eq([(r['org'], r['n_org'], r['auth'], r['n_auth'], r['status']) for r in reqs],
                  [(tenant, 1, b64, 1, 200)],
                  '%s: X-Scope-OrgID, basic auth, each once, taken' % what)
        n = len(srv.taken())
        cp = run_env(push + ['--push-basic-auth-file', files['wrongbasic'], cap], clean)
        cygtest.expect_error(ck, cp, 'wrong basic auth', 4)
        ck.check('401' in cp.err and 'invalid credentials' in cp.err and 'nope' not in cp.err,
                 'wrong basic auth: the status and the server\'s message, no password (%r)'
                 % cp.err)
        ck.eq([r['auth'] for r in srv.taken()[n:]],
              ['Basic ' + base64.b64encode(b'123456:nope').decode()], 'wrong basic auth: sent')
        n = len(srv.taken())
        refused = [
            ('basic-auth file of mode 0640', push + ['--push-basic-auth-file',
                                                     files['loosebasic'], cap], {}, '0640'),
            ('CYGPROF_PUSH_BASIC_AUTH without a colon', push + [cap],
             {'CYGPROF_PUSH_BASIC_AUTH': 'glc_s3cr'}, 'not USER:PASSWORD'),
            ('CYGPROF_PUSH_BASIC_AUTH with an empty user', push + [cap],
             {'CYGPROF_PUSH_BASIC_AUTH': ':glc_s3cr'}, 'not USER:PASSWORD'),
            ('CYGPROF_PUSH_TENANT with a space', push + [cap],
             {'CYGPROF_PUSH_TENANT': 'team a'}, 'space'),
            ('a token and basic auth', push + ['--push-token-file', files['token'],
                                               '--push-basic-auth-file', files['basic'], cap],
             {}, 'give one'),
            ('a bad variable refused by any command',
             [cyg.exe, 'info', cap], {'CYGPROF_PUSH_BASIC_AUTH': 'glc_s3cr'}, 'USER:PASSWORD'),
            ('record --push-basic-auth-file of mode 0640',
             [cyg.exe, 'record', '-o', os.path.join(w, 'r.data'), '--push', srv.url,
              '--push-basic-auth-file', files['loosebasic'], '--', example,
              os.path.join(w, 'pid3'), '1', '1'], {}, '0640'),
        ]
        for what, cmd, env, why in refused:
            cp = run_env(cmd, dict(clean, **env))
            cygtest.expect_error(ck, cp, what, 2)
            ck.check(why in cp.err and 'glc_s3cr' not in cp.err,
                     '%s: the line says %r, never the secret (%r)' % (what, why, cp.err))
        ck.eq(len(srv.taken()), n, 'nothing sent when refused')
        ck.check(not os.path.exists(os.path.join(w, 'pid3')), 'record refused: the program never ran')
        # record --push: the headers of every interval; the program does
        # not get the variables
        envf = os.path.join(w, 'env.txt')
        n = len(srv.taken())
        cp = run_env([cyg.exe, 'record', '-o', os.path.join(w, 'r.data'), '--push', srv.url,
                      '--', 'sh', '-c', 'env > "$0"; exec "$@"', envf, example,
                      os.path.join(w, 'pid4'), '1', '10'],
                     {'CYGPROF_PUSH_TENANT': 'env-tenant',
                      'CYGPROF_PUSH_BASIC_AUTH': '123456:glc_s3cr=t'})
        ck.eq(cp.returncode, 0, 'record --push with the variables: exit status (%s)' % cp.err)
        reqs = srv.taken()[n:]
        ck.check(len(reqs) >= 1, 'record --push: pushed (%d)' % len(reqs))
        ck.eq(sorted(set((r['org'], r['n_org'], r['auth'], r['n_auth'], r['status'])
                         for r in reqs)), [('env-tenant', 1, b64, 1, 200)],
              'record --push: X-Scope-OrgID and basic auth in every request')
        with open(envf) as f:
            penv = f.read()
        ck.check('CYGPROF_PUSH_' not in penv, 'the program\'s environment has no '
                 'CYGPROF_PUSH_* (%r)' % [v for v in penv.splitlines() if 'CYGPROF' in v])
    finally:
        srv.close()


def test_down(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    url = 'http://127.0.0.1:%d' % closed_port()
    cp = cyg.record(cap, [example, os.path.join(cyg.workdir, 'pid'), '20', '200'],
                    opts=['--push', url, '--push-interval', '1'])
    ck.eq(cp.returncode, 0, 'record --push to a closed port: the program\'s exit status')
    ck.check('longrun: done rounds=20' in cp.out, 'the program ran to its end')
    lines = [l for l in cp.err.splitlines() if 'dropped' in l]
    ck.check(len(lines) == 1 and re.search(r'\b(\d+) of \1 intervals dropped', lines[0]),
             'one line: every interval dropped (%r)' % lines)
    _, _, meta = wall_clock(ck, cyg, cap)
    ck.eq(meta.get('push_sent'), 0, 'meta push_sent')
    ck.check(isinstance(meta.get('push_dropped'), int) and meta['push_dropped'] >= 2,
             'meta push_dropped counts them (%r)' % meta.get('push_dropped'))
    if lines:
        m = re.search(r'(\d+) of', lines[0])
        ck.eq(meta.get('push_dropped'), int(m.group(1)) if m else None,
              'meta push_dropped is the line\'s count')
    ck.eq(report_calls(ck, cyg, cap).get('work'), 20 * 200, 'the local capture is whole')


def test_slow(ck, cyg, example, args):
    cap = os.path.join(cyg.workdir, 'cap.data')
    srv = Ingest(delay_s=2.0)
    try:
        cp = cyg.record(cap, [example, os.path.join(cyg.workdir, 'pid'), '20', '200'],
                        opts=['--push', srv.url, '--push-interval', '1'])
    finally:
        srv.close()
    ck.eq(cp.returncode, 0, 'record --push to a slow server: exit status')
    ck.check('longrun: done rounds=20' in cp.out, 'the program ran to its end')
    _, _, meta = wall_clock(ck, cyg, cap)
    sent, dropped = meta.get('push_sent'), meta.get('push_dropped')
    ck.check(isinstance(sent, int) and isinstance(dropped, int) and sent + dropped >= 2,
             'every interval sent or dropped (sent %r, dropped %r)' % (sent, dropped))
    ck.eq(report_calls(ck, cyg, cap).get('work'), 20 * 200, 'the local capture is whole')


def test_attach(ck, cyg, example, args):
    import subprocess
    d = cyg.workdir
    pidfile = os.path.join(d, 'pid')
    cap = os.path.join(d, 'cap.data')
    print('$ %s %s 100 2000' % (example, pidfile))
    prog = subprocess.Popen([example, pidfile, '100', '2000'], cwd=d, stdout=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL)
    srv = Ingest()
    try:
        end = time.monotonic() + 30
        pid = None
        while pid is None and time.monotonic() < end and prog.poll() is None:
            if os.path.exists(pidfile):
                with open(pidfile) as f:
                    text = f.read()
                if text.endswith('\n'):
                    pid = int(text)
            time.sleep(0.01)
        if pid is None:
            raise Failure('the program did not write its pid')
        cp = run([cyg.exe, 'record', '--attach', str(pid), '--duration', '2500ms', '-o', cap,
                  '--push', srv.url, '--push-interval', '1'])
        if cp.returncode != 0 and 'ptrace' in cp.err:
            print('SKIP push-attach: %s' % cp.err.strip())
            sys.exit(cygtest.SKIP)
        ck.eq(cp.returncode, 0, 'record --attach --push: exit status')
        reqs = srv.taken()
    finally:
        open(pidfile + '.stop', 'w').close()  # longrun: stop
        try:
            prog.wait(timeout=60)
        finally:
            if prog.poll() is None:
                prog.kill()
        srv.close()
    ck.eq(prog.returncode, 0, 'the program ran on and ended normally')
    want = report_calls(ck, cyg, cap)
    ck.check(len(reqs) >= 2, 'at least 2 pushes of a 2.5 s window every second (%d)' % len(reqs))
    total, spans = {}, []
    for i, r in enumerate(reqs):
        check_request(ck, r, 'push %d' % i)
        app, labels = parse_name(r['query'].get('name', ''))
        ck.eq(app, os.path.basename(example), 'push %d: application name' % i)
        ck.eq(labels.get('pid'), str(pid), 'push %d: label pid' % i)
        spans.append((int(r['query']['from']), int(r['query']['until'])))
        if r['profile']:
            for k, v in calls_per_function(r['profile']).items():
                total[k] = total.get(k, 0) + v
    spans.sort()
    for a, b in zip(spans, spans[1:]):
        ck.check(a[1] == b[0], 'intervals contiguous: %r then %r' % (a, b))
    ck.check(cygtest.diff_table('calls per function (sum of pushes vs capture)', want, total),
             'the pushes\' calls add up to the capture\'s (%d functions)' % len(want))
    _, _, meta = wall_clock(ck, cyg, cap)
    ck.eq(meta.get('push_sent'), len(reqs), 'meta push_sent')


def test_tls(ck, cyg, example, args):
    import shutil
    import subprocess
    if not shutil.which('openssl'):
        print('SKIP push-tls: needs openssl (the command) to make a certificate')
        sys.exit(cygtest.SKIP)
    d = cyg.workdir
    cert, key = os.path.join(d, 'cert.pem'), os.path.join(d, 'key.pem')
    if subprocess.call(['openssl', 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1',
                        '-keyout', key, '-out', cert, '-subj', '/CN=localhost', '-addext',
                        'subjectAltName=DNS:localhost'], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL):
        raise Failure('openssl could not make a self-signed certificate')
    cap = os.path.join(d, 'cap.data')
    cp = cyg.record(cap, [example, os.path.join(d, 'pid'), '1', '10'])
    if cp.returncode != 0:
        raise Failure('record failed: %s' % cp.err.strip())
    srv = Ingest(tls=(cert, key))
    try:
        cp = run([cyg.exe, 'push', '--server', srv.url, cap])
        cygtest.expect_error(ck, cp, 'a self-signed server (certificates checked)', 4)
        ck.check('certificate' in cp.err, 'the line says it is the certificate (%r)' % cp.err)
        cp = run([cyg.exe, 'push', '--server', srv.url, '--push-cacert', cert, cap])
        ck.eq(cp.returncode, 0, 'with --push-cacert its certificate: exit status (%s)' %
              cp.err.strip())
        reqs = srv.taken()
    finally:
        srv.close()
    ck.eq(len(reqs), 1, 'the server took one profile, over TLS')
    if reqs:
        check_request(ck, reqs[0], 'push over https')


def test_memory(ck, cyg, example, args):
    import json
    cap = os.path.join(cyg.workdir, 'cap.data')
    cp = cyg.record(cap, [os.path.abspath(args.mem_prog)], opts=['--memory'])
    if cp.returncode != 0:
        raise Failure('record --memory failed: %s' % cp.err.strip())
    cp = run([cyg.exe, 'memory', '--format=json', cap])
    if cp.returncode != 0:
        raise Failure('cygprof memory --format=json failed: %s' % cp.err.strip())
    m = json.loads(cp.out)
    tot = m.get('totals', m)
    want = report_calls(ck, cyg, cap)
    srv = Ingest()
    try:
        cp = run([cyg.exe, 'push', '--server', srv.url, cap])
        ck.eq(cp.returncode, 0, 'push of a --memory capture: exit status (%s)' % cp.err.strip())
        reqs = srv.taken()
    finally:
        srv.close()
    if not ck.eq(len(reqs), 2, 'two requests: the calls, the allocations'):
        return
    for i, r in enumerate(reqs):
        check_request(ck, r, 'request %d' % i)
    ck.eq(reqs[0]['query'], reqs[1]['query'], 'both for the same name and interval')
    ck.check(cygtest.diff_table('calls per function', want,
                                calls_per_function(reqs[0]['profile'])),
             'the first: the calls per function of the report')
    p = reqs[1]['profile']
    ck.eq(p['types'], [('alloc_objects', 'count'), ('alloc_space', 'bytes'),
                       ('leaked_space', 'bytes')], 'the second: the allocations\' sample types')
    sums = [sum(v[k] for _, v in p['samples']) for k in range(3)]
    ck.eq(sums, [tot['allocations'], tot['allocated_bytes'], tot['leaked_bytes']],
          'alloc_objects, alloc_space, leaked_space add up to cygprof memory\'s totals')
    ck.check(sums[0] > 0, 'the program allocates')


def test_options(ck, cyg, example, args):
    """A URL curl cannot parse is refused before anything runs; the
    interval's documented range, 1 s to a day, is the parser's."""
    cap = os.path.join(cyg.workdir, 'cap.data')
    pidf = os.path.join(cyg.workdir, 'pid')
    for url in ('http://[::1', 'http://:80/', 'http://host:99999/'):
        cp = cyg.record(cap, [example, pidf, '1', '1'], opts=['--push', url])
        cygtest.expect_error(ck, cp, 'record --push %s' % url, 2)
        ck.check(url in cp.err, 'the line names the URL %s (%r)' % (url, cp.err))
        ck.check(not os.path.exists(pidf) and not os.path.exists(cap),
                 'record --push %s: the program never ran, no capture' % url)
        cp = cygtest.run([cyg.exe, 'push', '--server', url, cap])
        cygtest.expect_error(ck, cp, 'push --server %s' % url, 2)
    for bad in ('0.5', '86401', '1d'):
        cp = cyg.record(cap, [example, pidf, '1', '1'],
                        opts=['--push', 'http://127.0.0.1:1', '--push-interval', bad])
        cygtest.expect_error(ck, cp, '--push-interval %s' % bad, 2)
    url = 'http://127.0.0.1:%d' % closed_port()
    for good in ('1', '86400', '86400000ms'):
        cp = cyg.record(cap, [example, pidf, '2', '10'],
                        opts=['-f', '--push', url, '--push-interval', good])
        ck.eq(cygtest.describe_status(cp.returncode), 'exit 0',
              '--push-interval %s is taken' % good)
        ck.check('longrun: done rounds=2' in cp.out, '--push-interval %s: the program ran'
                 % good)
        ck.eq(report_calls(ck, cyg, cap).get('work'), 2 * 10,
              '--push-interval %s: the capture is whole' % good)


TESTS = {    'push-oneshot': test_oneshot,
    'push-interval': test_interval,
    'push-token': test_token,
    'push-credentials': test_credentials,
    'push-down': test_down,
    'push-slow': test_slow,
    'push-attach': test_attach,
    'push-tls': test_tls,
    'push-memory': test_memory,
    'push-options': test_options,
}

if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'push', __doc__,
                                 extra=lambda ap: ap.add_argument('--mem-prog')))
