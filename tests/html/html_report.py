#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of `cygprof html`, rendered in headless Chromium.

Usage:
  html_report.py --cygprof CYGPROF --example EXAMPLE --test NAME [--memory MEMEX]
          [--skip REASON] [-v] [--keep]

EXAMPLE is examples/calls.c (main 1, a 3, b 6, c 30 calls; arcs main->a 3,
a->b 6, b->c 30) for html-calls and html-output, tests/html/html-name.c
(main calls `</script><script>alert(1)</script>` 7 times) for html-escape;
MEMEX is examples/mem-basic.c (leaker: 5 allocations, 385 bytes, never
freed; new_node: 50 x 24 bytes under make_list) for html-memory.

The DOM tests load the report in headless Chromium and read its tables;
they are skipped when chromium is not installed (the Debian package
`chromium`, tools/install-deps.sh).  One Chromium per test renders every
page the test looks at (Browser below: the DevTools protocol over
--remote-debugging-pipe; a start costs 3 s of CPU, a page 0.5 s).  The
page's script writes any uncaught error into <pre id="errors"> and marks
<body data-rendered="1"> when it is done.

Tests:
  html-calls    the report of calls-O2 starts with the report's mark, has no
                http:// or https:// reference, renders without an error; its
                flat profile has one row per function with the calls of
                `report --format=json` (1, 3, 6, 30) and its times; the call
                graph of main (picked first: the largest total) has callee a
                with 3 calls; the flame graph has a frame for each of main, a,
                b and c; the info tables hold the command and one thread;
                report.html#search=^c$ highlights c's frame and gives its
                share of the time; in a 1280x800 window the summary (command,
                threads, 40 calls, the top functions by self time) and the
                flame graph start above the fold (a screenshot is saved and
                decoded: not blank) and no metadata key (duration_ns,
                sig_lost) is on the screen; '/' focuses the search, '?'
                shows the help, 2 the sandwich; the sandwich of b
                (#sandwich=b) has caller a 6 calls, callee c 30, its callers
                merged b, a, main; Enter in the search opens c's sandwich;
                the report of timefilter (--timefilter) ranks slow and fast
                in the flame graph as report --tree does;
                report.html#selftest (every heading,
                first rows, flame frames and searches clicked) throws nothing
                (also in html-memory and html-samples)
  html-memory   record --memory --counters=5ms of mem-basic: the memory table
                has leaker with 5 allocations, 385 bytes leaked, new_node 50
                allocations, 1200 bytes, make_list total 1200, every row as
                `memory --format=json` has it; the allocation flame graph (all,
                main) is drawn, one chart per counter of counters
                --format=json, heap/live_bytes up to the peak of memory
                --format=json, one panel per process and unit with its scale;
                the memory
                flame graph (#view=memflame) above the fold, its root the
                allocated, leaked and peak bytes of memory --format=json in
                each of its three modes, leaker 385 bytes leaked
  html-escape   the symbol `</script><script>alert(1)</script>` stays inside
                the data block (written \\u003c), the page has exactly its two
                scripts and the onerror one, the flat profile shows the name
                verbatim with 7 calls
  html-samples  record --sample of tests/sampling/sampling-prog.c (EXAMPLE;
                skipped when no sample is taken): each flat profile row has
                the calls, samples, sampled and off-CPU ns of report
                --format=json, spin most samples; the uninstrumented
                functions are listed
  html-counters record -i counters,memory --counters=5ms of memgrow
                (EXAMPLE): one line per counter of counters --format=json,
                one panel per process and unit, the system's bytes (GiB
                beside MiB) on a log scale, the view above the fold
  html-timeline record --timeline of calls-O2: the data holds its 40 calls,
                30 of c; report.html#view=timeline lists main 1, a 3, b 6,
                c 30 calls in view, zooms in (fewer in view) and back (key
                0); --max-calls 10 keeps 10 of 40, main among them, and the
                page says it is limited; no timeline without --timeline
  html-output   -o onto a file that is not a report is refused (exit 1,
                file unchanged) unless -f; an earlier report is replaced; the
                default output is report.html; a missing capture exits 1, a
                bad option 2; --help exits 0
"""

import html.parser
import json
import os
import select
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status  # noqa: E402

MAGIC = b'<!DOCTYPE html>\n<!-- cygprof report -->'
VIEW_W, VIEW_H = 1280, 800  # the viewport: "above the fold" is within VIEW_H


def chromium():
    for name in ('chromium', 'chromium-browser'):
        path = shutil.which(name)
        if path:
            return path
    return None


def need_chromium():
    path = chromium()
    if not path:
        print('SKIP: chromium is not installed (Debian package chromium, tools/install-deps.sh)')
        sys.exit(cygtest.SKIP)
    return path


class Dom(html.parser.HTMLParser):
    """The tables (by id: rows of cells, each (text, data-v)), the text of
    elements by id, the flame frames' names and the attributes of body."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tables, self.text, self.frames, self.body = {}, {}, {}, {}
        self.scripts = 0
        self.matches = {}
        self.chart_max = {}
        self.charts = []
        self.panels = []  # (unit, scale) of each counter panel
        self.values = {}  # flame id -> [(frame name, data-v)]
        self.table = None
        self.row = None
        self.cell = None
        self.ids = []  # (id, depth) of open elements with an id
        self.depth = 0
        self.flame = None
        self.flame_id = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ('meta', 'input', 'br', 'img', 'link'):
            return
        if tag == 'polyline' and 'data-counter' in a:
            self.charts.append((a['data-counter'], a.get('points', '')))
            self.chart_max[a['data-counter']] = a.get('data-max')
        self.depth += 1
        if tag == 'body':
            self.body = a
        if tag == 'script':
            self.scripts += 1
        if 'id' in a:
            self.ids.append((a['id'], self.depth))
            self.text.setdefault(a['id'], '')
        if tag == 'table' and 'id' in a:
            self.table = self.tables.setdefault(a['id'], [])
        elif tag == 'tr' and self.table is not None:
            self.row = []
        elif tag in ('td', 'th') and self.row is not None:
            self.cell = ['', a.get('data-v')]
        if tag == 'div' and a.get('class', '').startswith('flame'):
            self.flame_id = a.get('id')
            self.flame = self.frames.setdefault(self.flame_id, [])
        elif tag == 'div' and self.flame is not None and 'data-n' in a:
            self.flame.append(a.get('title', ''))
            self.values.setdefault(self.flame_id, []).append(
                (a.get('title', '').split(':')[0], int(a.get('data-v', '-1')),
                 int(a['data-n']), int(a.get('data-p', '-1'))))
            if 'match' in a.get('class', '').split():
                self.matches.setdefault(self.flame_id, []).append(a.get('title', '').split(':')[0])
        if tag == 'div' and 'data-unit' in a:
            self.panels.append((a.get('data-pid'), a['data-unit'], a.get('data-scale')))

    def handle_endtag(self, tag):
        if tag in ('td', 'th') and self.cell is not None:
            self.row.append((self.cell[0], self.cell[1]))
            self.cell = None
        elif tag == 'tr' and self.row is not None:
            self.table.append(self.row)
            self.row = None
        elif tag == 'table':
            self.table = None
        while self.ids and self.ids[-1][1] >= self.depth:
            if self.ids[-1][0] in self.frames:
                self.flame = None
            self.ids.pop()
        self.depth -= 1

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[0] += data
        for i, _ in self.ids:
            self.text[i] += data


class Browser:
    """Headless Chromium driven through the DevTools protocol over a pipe
    (--remote-debugging-pipe: JSON messages ended by NUL, commands on its
    fd 3, answers and events on its fd 4), one tab for every page."""

    def __init__(self, exe, profile):
        r_cmd, w_cmd = os.pipe()
        r_out, w_out = os.pipe()

        def fds():
            a, b = os.dup(r_cmd), os.dup(w_out)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.log = open(profile + '.log', 'w+')
        cmd = [exe, '--headless', '--disable-gpu', '--no-sandbox', '--user-data-dir=' + profile,
               '--remote-debugging-pipe', 'about:blank']
        print('$ ' + ' '.join(cmd))
        self.p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=self.log, pass_fds=(3, 4), preexec_fn=fds)
        os.close(r_cmd)
        os.close(w_out)
        self.w, self.r = w_cmd, r_out
        self.buf = b''
        self.id = 0
        self.events = []
        self.session = None

    def send(self, method, params=None, session=None):
        self.id += 1
        msg = {'id': self.id, 'method': method, 'params': params or {}}
        if session:
            msg['sessionId'] = session
        os.write(self.w, json.dumps(msg).encode() + b'\0')
        return self.id

    def recv(self, end):
        while b'\0' not in self.buf:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise Failure('chromium did not answer within 90 s')
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise Failure('chromium ended (%s)' % self.stderr()[-2000:])
            self.buf += chunk
        msg, self.buf = self.buf.split(b'\0', 1)
        return json.loads(msg)

    def call(self, method, params=None, session=None):
        i = self.send(method, params, session)
        end = time.monotonic() + 90
        while True:
            m = self.recv(end)
            if m.get('id') == i:
                if 'error' in m:
                    raise Failure('chromium: %s: %s' % (method, m['error']))
                return m.get('result', {})
            self.events.append(m)

    def wait_event(self, method, session):
        end = time.monotonic() + 90
        while True:
            for k, m in enumerate(self.events):
                if m.get('method') == method and m.get('sessionId') == session:
                    return self.events.pop(k)
            self.events.append(self.recv(end))

    def render(self, url):
        """The page's DOM once loaded (its scripts have run: they are
        inline), and the exceptions and console messages it gave."""
        if not self.session:
            t = self.call('Target.createTarget', {'url': 'about:blank'})['targetId']
            self.session = self.call('Target.attachToTarget',
                                     {'targetId': t, 'flatten': True})['sessionId']
            self.call('Runtime.enable', session=self.session)
            self.call('Page.enable', session=self.session)
            # the window the page is judged in: what a laptop shows
            self.call('Emulation.setDeviceMetricsOverride',
                      {'width': VIEW_W, 'height': VIEW_H, 'deviceScaleFactor': 1, 'mobile': False},
                      session=self.session)
        s = self.session
        # through about:blank: a page that differs only in its #fragment
        # is loaded anew
        self.call('Page.navigate', {'url': 'about:blank'}, session=s)
        self.wait_event('Page.loadEventFired', s)
        self.events = []
        self.call('Page.navigate', {'url': url}, session=s)
        self.wait_event('Page.loadEventFired', s)
        dom = self.call('Runtime.evaluate', {'expression': 'document.documentElement.outerHTML',
                                             'returnByValue': True}, session=s)['result']['value']
        msgs = []
        for m in self.events:
            if m.get('method') == 'Runtime.exceptionThrown':
                d = m['params']['exceptionDetails']
                msgs.append('%s %s' % (d.get('text', ''),
                                       d.get('exception', {}).get('description', '')))
            elif m.get('method') == 'Runtime.consoleAPICalled':
                msgs.append(' '.join(str(a.get('value', a.get('description', '')))
                                     for a in m['params'].get('args', [])))
        self.events = []
        return dom, msgs

    def evaluate(self, expr):
        """The value of a JavaScript expression in the page last rendered."""
        r = self.call('Runtime.evaluate', {'expression': expr, 'returnByValue': True},
                      session=self.session)
        if 'exceptionDetails' in r:
            raise Failure('evaluate %s: %s' % (expr, r['exceptionDetails']))
        return r['result'].get('value')

    def screenshot(self, path):
        """A PNG of the viewport into path; its bytes."""
        import base64
        r = self.call('Page.captureScreenshot', {'format': 'png'}, session=self.session)
        data = base64.b64decode(r['data'])
        with open(path, 'wb') as f:
            f.write(data)
        return data

    def stderr(self):
        self.log.seek(0)
        return self.log.read()

    def close(self):
        try:
            self.send('Browser.close')
            self.p.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.p.kill()
            self.p.wait()
        os.close(self.w)
        os.close(self.r)
        err = self.stderr()
        self.log.close()
        return err


BROWSER = []


def render(ck, path, fragment=''):
    """Load the report in headless Chromium; the parsed DOM."""
    if not BROWSER:
        BROWSER.append(Browser(need_chromium(),
                               os.path.join(os.path.dirname(path), 'chromium-profile')))
    print('render file://%s%s' % (path, fragment))
    out, msgs = BROWSER[0].render('file://' + path + fragment)
    if '<html' not in out:
        raise Failure('chromium rendered no page: %r' % out[:200])
    for line in msgs:
        ck.check('Uncaught' not in line, 'no uncaught error on the console: %s' % line)
    dom = Dom()
    dom.feed(out)
    ck.eq(dom.text.get('errors', '').strip(), '', 'errors the page caught')
    ck.eq(dom.body.get('data-rendered'), '1', 'the script ran to its end')
    return dom


def dom_now(ck, expr=None):
    """The DOM of the page last rendered, after running expr (a control
    clicked, a key pressed), checked for caught errors again."""
    b = BROWSER[0]
    if expr:
        b.evaluate(expr)
    dom = Dom()
    dom.feed(b.evaluate('document.documentElement.outerHTML'))
    ck.eq(dom.text.get('errors', '').strip(), '', 'errors the page caught after %s' % expr)
    return dom


def png_colours(data, keep=False):
    """The size and the number of distinct colours (of a grid of pixels,
    every 8th of every 8th row; with keep, the colours themselves as RGB
    bytes) of a PNG: 8-bit RGB or RGBA, not interlaced, as Chromium writes
    it."""
    import struct
    import zlib
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        raise Failure('the screenshot is no PNG')
    pos, idat, w = 8, b'', 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, inter = struct.unpack('>IIBBBBB', body)
            if depth != 8 or ctype not in (2, 6) or inter:
                raise Failure('unexpected PNG kind: depth %d, colour type %d' % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        if y % 8 == 0:
            for x in range(0, w, 8):
                colours.add(bytes(line[x * bpp:x * bpp + 3]))
        prev = line
    return w, h, (colours if keep else len(colours))


def screenshot(ck, name):
    """A screenshot of the viewport into --screenshots DIR (as TEST-NAME; the
    test's workdir without it): a PNG of the viewport's size with more than
    a few colours."""
    path = os.path.join(CYG[0].workdir, name)
    if ARGS[0] is not None and ARGS[0].screenshots:
        # kept after the test, as its artefacts (the workdir is removed)
        os.makedirs(ARGS[0].screenshots, exist_ok=True)
        path = os.path.join(ARGS[0].screenshots, '%s-%s' % (ARGS[0].test, name))
    data = BROWSER[0].screenshot(path)
    w, h, cs = png_colours(data, keep=True)
    n = len(cs)
    print('screenshot %s: %dx%d, %d colours' % (path, w, h, n))
    ck.eq((w, h), (VIEW_W, VIEW_H), 'the screenshot %s is the viewport' % name)
    ck.check(n >= 8, 'the screenshot %s is not blank (%d colours)' % (name, n))
    return cs


def above_fold(ck, ids):
    """Each element of ids is shown (not hidden, not empty) and starts
    within the first VIEW_H pixels of the page."""
    boxes = BROWSER[0].evaluate(
        'JSON.stringify(%s.map(function (id) { var e = document.getElementById(id); '
        'if (!e) return null; var r = e.getBoundingClientRect(); '
        'return [r.top + window.scrollY, r.bottom + window.scrollY, r.width, r.height]; }))' % json.dumps(ids))
    for i, b in zip(ids, json.loads(boxes)):
        if not ck.check(b is not None, '#%s on the page' % i):
            continue
        ck.check(b[2] > 0 and b[3] > 0, '#%s is shown (%s)' % (i, b))
        ck.check(b[0] < VIEW_H - 40, '#%s starts above the fold (top %.0f px of %d)' % (i, b[0], VIEW_H))


def no_internal_keys(ck, data):
    """No key of the data's metadata and limits written with an underscore
    (duration_ns, sig_lost, shm_full) is on the screen."""
    text = BROWSER[0].evaluate('document.body.innerText')
    keys = set(data.get('meta', {})) | set(data.get('limits', {}))
    keys |= {'duration_ns', 'sig_lost', 'shm_full', 'mem_lost', 'start_time', 'in_progress'}
    shown = sorted(k for k in keys if '_' in k and k in text)
    ck.eq(shown, [], 'internal key names shown on the page')


def page_data(path):
    with open(path, encoding='utf-8') as f:
        text = f.read()
    start = text.index('<script id="data" type="application/json">') + 42
    return json.loads(text[start:text.index('</script>', start)])


CYG = []
ARGS = [None]


def with_browser(fn, ck, cyg, example, args):
    """Run the test, then close its Chromium (whose stderr must have no
    uncaught error either)."""
    CYG.append(cyg)
    ARGS[0] = args
    try:
        fn(ck, cyg, example, args)
    finally:
        if BROWSER:
            for line in BROWSER.pop().close().splitlines():
                ck.check('Uncaught' not in line, 'no uncaught error on the console: %s' % line)


def selftest(ck, path):
    """report.html#selftest: every control clicked once, no error."""
    dom = render(ck, path, '#selftest')
    ck.check(int(dom.body.get('data-selftest', '0')) > 10,
             'the self-test clicked the controls (%s actions)' % dom.body.get('data-selftest'))
    return dom


def table(ck, dom, tid):
    rows = dom.tables.get(tid)
    if rows is None:
        raise Failure('the page has no table #%s (tables: %s)' % (tid, sorted(dom.tables)))
    if not rows:
        raise Failure('table #%s is empty' % tid)
    head = [c[0].strip() for c in rows[0]]
    out = {}
    for r in rows[1:]:
        out[r[0][0]] = {head[i]: (c[1] if c[1] is not None else c[0]) for i, c in enumerate(r)}
    return out


def record(ck, cyg, example, opts, name):
    cap = os.path.join(cyg.workdir, name)
    cp = cyg.record(cap, [example], opts)
    if cp.returncode != 0:
        raise Failure('record %s failed (%s): %s' % (' '.join(opts), describe_status(cp.returncode),
                                                     cp.err.strip()))
    return cap


def write_html(ck, cyg, cap, out, extra=()):
    cp = run([cyg.exe, 'html', '-o', out] + list(extra) + [cap])
    if cp.returncode != 0:
        raise Failure('html failed (%s): %s' % (describe_status(cp.returncode), cp.err.strip()))
    with open(out, 'rb') as f:
        data = f.read()
    ck.check(data.startswith(MAGIC), 'the report starts with %r' % MAGIC)
    ck.check(b'http://' not in data and b'https://' not in data,
             'the report refers to nothing on the network')
    ck.check(data.count(b'<script') == 3, 'three scripts: onerror, data, code (got %d)' %
             data.count(b'<script'))
    return data


def test_calls(ck, cyg, example, args):
    cap = record(ck, cyg, example, [], 'calls.cyg')
    out = os.path.join(cyg.workdir, 'calls.html')
    write_html(ck, cyg, cap, out)
    data, _ = cyg.report_json(cap, ck)
    dom = render(ck, out)
    flat = table(ck, dom, 'flat')
    want = {'main': 1, 'a': 3, 'b': 6, 'c': 30}
    ck.eq(sorted(flat), sorted(want), 'functions in the flat profile')
    for f in data['functions']:
        row = flat.get(f['name'])
        if not ck.check(row is not None, 'flat profile row of %s' % f['name']):
            continue
        ck.eq(int(row['calls']), f['calls'], '%s calls in the report' % f['name'])
        ck.eq(int(row['calls']), want.get(f['name']), '%s calls stated by calls.c' % f['name'])
        ck.eq(int(row['self']), f['self_ns'], '%s self time' % f['name'])
        ck.eq(int(row['total']), f['total_ns'], '%s total time' % f['name'])
    order = [int(r[2][1]) for r in dom.tables['flat'][1:]]
    ck.eq(order, sorted(order, reverse=True), 'the flat profile sorted by self time, largest first')
    callees = table(ck, dom, 'callees')
    ck.eq({k: int(v['calls']) for k, v in callees.items()}, {'a': 3}, 'callees of main')
    callers = table(ck, dom, 'callers')
    ck.eq({k: int(v['calls']) for k, v in callers.items()}, {'<spontaneous>': 1}, 'callers of main')
    frames = dom.frames.get('flame', [])
    names = {t.split(':')[0] for t in frames}
    for fn in ('all', 'main', 'a', 'b', 'c'):
        ck.check(fn in names, 'flame graph frame %s (frames: %s)' % (fn, sorted(names)))
    ck.check(any(t.startswith('c: ') and ', 30 calls' in t for t in frames),
             'the frame of c says its 30 calls')
    ck.check(example in dom.text.get('meta', ''), 'the info names the command')
    ck.eq(len(table(ck, dom, 'threads')), 1, 'threads listed')

    # above the fold: the summary and the flame graph; no internal names
    above_fold(ck, ['summary', 'top5', 'flame'])
    screenshot(ck, 'calls-top.png')
    no_internal_keys(ck, page_data(out))
    ck.check(example in dom.text.get('sum-command', ''), 'the summary names the command')
    ck.eq(dom.text.get('sum-threads', '').strip(), '1', 'the summary: threads')
    ck.check('40 calls' in dom.text.get('sum-holds', ''), 'the summary: 40 calls (%r)' %
             dom.text.get('sum-holds'))
    top = [r[0][0] for r in dom.tables.get('top5', [])[1:]]
    # by self time: functions of equal self time may come in either order
    self_of = {f['name']: f['self_ns'] for f in data['functions']}
    by_self = sorted(self_of.values(), reverse=True)
    ck.eq([self_of.get(n) for n in top], by_self[:5],
          'the summary\'s top functions, by self time (%s)' % top)
    if args.timefilter:
        # the flame graph ranks children as report --tree does (main calls
        # fast, 1000 short calls, first, slow, 3 x 5 ms asleep, after)
        tcap = record(ck, cyg, os.path.abspath(args.timefilter), [], 'timefilter.data')
        tout = os.path.join(cyg.workdir, 'timefilter.html')
        write_html(ck, cyg, tcap, tout)
        render(ck, tout)
        at = json.loads(BROWSER[0].evaluate(
            'JSON.stringify(Array.from(document.querySelectorAll("#flame div[data-n]"))'
            '.map(function (d) { return [d.title.split(":")[0], parseFloat(d.style.left)]; }))'))
        kids = [n for n, x in sorted(at, key=lambda f: f[1]) if n in ('slow', 'fast')]
        # the times are CPU time: slow's sleeps are not in them, so fast
        # (30-70 us of work) and slow (its 3 system calls, 20-60 us) come
        # in the order report --tree gives; the narrower may be too narrow
        # to draw: then the other alone
        cp = run([cyg.exe, 'report', '--format=json', '--tree', '--min-percent', '0', tcap])
        want = [p['name'] for t in json.loads(cp.out)['tree'] for p in t['paths']
                if p['name'] in ('slow', 'fast')] if cp.returncode == 0 else []
        ck.check(len(want) == 2 and kids in (want, want[:1]), 'timefilter: the flame graph ranks '
                 'slow and fast (left to right) as report --tree does (%s, %s)' % (kids, want))
    # keys: '/' focuses the search, '?' the help, 2 the sandwich, Esc back
    key = 'document.dispatchEvent(new KeyboardEvent("keydown", {key: %s, bubbles: true}))'
    BROWSER[0].evaluate(key % '"/"')
    ck.eq(BROWSER[0].evaluate('document.activeElement.id'), 'flame-search', '/ focuses the search')
    BROWSER[0].evaluate('document.activeElement.blur()')
    BROWSER[0].evaluate(key % '"?"')
    ck.eq(BROWSER[0].evaluate('document.getElementById("help").hidden'), False, '? shows the help')
    ck.check('search' in BROWSER[0].evaluate('document.getElementById("help").innerText'),
             'the help lists the keys')
    BROWSER[0].evaluate(key % '"Escape"')
    ck.eq(BROWSER[0].evaluate('document.getElementById("help").hidden'), True, 'Esc hides the help')
    BROWSER[0].evaluate(key % '"2"')
    ck.eq(BROWSER[0].evaluate('document.body.dataset.view'), 'sandwich', 'key 2: the sandwich')
    BROWSER[0].evaluate(key % '"ArrowLeft"')
    ck.eq(BROWSER[0].evaluate('document.body.dataset.view'), 'flame', 'left arrow: the flame graph')

    # the sandwich of b: its callers and callees merged, with exact calls
    dom = render(ck, out, '#sandwich=b')
    ck.eq(dom.body.get('data-view'), 'sandwich', 'report.html#sandwich=b opens the sandwich')
    ck.eq({k: int(v['calls']) for k, v in table(ck, dom, 'sw-callers').items()}, {'a': 6},
          'callers of b')
    ck.eq({k: int(v['calls']) for k, v in table(ck, dom, 'sw-callees').items()}, {'c': 30},
          'callees of b')
    up = [t.split(':')[0] for t in dom.frames.get('sw-up', [])]
    ck.eq(up, ['b', 'a', 'main'], 'b\'s callers merged down to the root')
    down = dom.frames.get('sw-down', [])
    ck.check(any(t.startswith('c: ') and ', 30 calls' in t for t in down), 'b\'s callee c with 30 calls')
    above_fold(ck, ['summary', 'sw-callers', 'sw-up'])
    screenshot(ck, 'calls-sandwich.png')
    # Enter in the flame graph's search opens the heaviest match's sandwich
    dom = render(ck, out)
    dom = dom_now(ck, 'var s = document.getElementById("flame-search"); s.value = "^c$"; '
                  's.dispatchEvent(new Event("input")); '
                  's.dispatchEvent(new KeyboardEvent("keydown", {key: "Enter"}))')
    ck.eq(dom.body.get('data-view'), 'sandwich', 'Enter in the search: the sandwich')
    ck.eq({k: int(v['calls']) for k, v in table(ck, dom, 'sw-callers').items()}, {'b': 30},
          'callers of c')

    # report.html#search=^c$: c's frames highlighted, their share of the time
    dom = render(ck, out, '#search=%5Ec%24')
    frames = dom.frames.get('flame', [])
    total = sum(t['total_ns'] for t in data['threads'])
    c_total = [f['total_ns'] for f in data['functions'] if f['name'] == 'c'][0]
    got = dom.text.get('flame-match', '').strip()
    ck.check(got.startswith('matched: ') and got.endswith('%'), 'the search says its share: %r' % got)
    if got.startswith('matched: ') and got.endswith('%'):
        ck.check(abs(float(got[9:-1]) - 100.0 * c_total / total) < 0.011,
                 'matched share %s of c\'s %d ns in %d ns' % (got, c_total, total))
    ck.eq(dom.matches.get('flame'), ['c'], 'highlighted frames')
    selftest(ck, out)


def test_memory(ck, cyg, example, args):
    cap = record(ck, cyg, os.path.abspath(args.memory), ['--memory', '--counters=5ms'], 'mem.cyg')
    out = os.path.join(cyg.workdir, 'mem.html')
    write_html(ck, cyg, cap, out)
    cp = run([cyg.exe, 'memory', '--format=json', cap])
    if cp.returncode != 0:
        raise Failure('memory --format=json failed: ' + cp.err.strip())
    mj = {f['name']: f for f in json.loads(cp.out)['functions']}
    dom = render(ck, out)
    # a --memory capture opens on the memory flame graph (at the peak), the
    # peak and the leaks above it, their allocating functions beside
    ck.eq(dom.body.get('data-view'), 'memflame', 'a memory capture opens on the memory flame graph')
    ck.eq(BROWSER[0].evaluate('document.getElementById("v-memflame").dataset.kind'), 'peak',
          'the memory flame graph opens on the bytes live at the peak')
    totals0 = json.loads(cp.out)['totals']
    ck.eq([v[1] for v in dom.values.get('memflame', []) if v[0] == 'all'], [totals0['peak_bytes']],
          'its root: the peak of memory --format=json')
    head = dom.text.get('mem-peak-leak', '')
    ck.check('Peak:' in head and 'Leaked:' in head and '385 B in 5 blocks' in head,
             'the peak and the leaks first: %r' % head)
    for tid, key in (('mem-peak5', 'self_peak_bytes'), ('mem-leak5', 'self_leaked_bytes')):
        rows = [(r[0][0], int(r[1][1])) for r in dom.tables.get(tid, [])[1:]]
        wantr = sorted(((n, f[key]) for n, f in mj.items() if f[key]), key=lambda r: -r[1])[:5]
        ck.eq(sorted(r[1] for r in rows), sorted(r[1] for r in wantr), '%s: the top bytes of %s' % (tid, key))
        ck.eq({n for n, _ in rows} - set(mj), set(), '%s names functions of memory --format=json' % tid)
    ck.eq([r[0][0] for r in dom.tables.get('mem-leak5', [])[1:]], ['leaker'], 'leaker, the one leak')
    above_fold(ck, ['summary', 'mem-peak-leak', 'mem-peak5', 'mem-leak5', 'memflame'])
    screenshot(ck, 'mem-open.png')
    mem = table(ck, dom, 'memfns')
    want = {'leaker': (5, 385, 5, 385, 385), 'new_node': (50, 1200, 50, 1200, 0),
            'make_list': (0, 0, 50, 1200, 0)}
    for fn, (sa, sb, ta, tb, leak) in want.items():
        row = mem.get(fn)
        if not ck.check(row is not None, 'memory row of %s' % fn):
            continue
        got = (int(row['self allocations']), int(row['self allocated']),
               int(row['total allocations']), int(row['total allocated']), int(row['total leaked']))
        ck.eq(got, (sa, sb, ta, tb, leak), '%s (self allocs, bytes, total allocs, bytes, leaked)' % fn)
    for name, f in mj.items():
        row = mem.get(name)
        if not ck.check(row is not None, 'memory row of %s' % name):
            continue
        ck.eq((int(row['self allocated']), int(row['total allocated']), int(row['total leaked'])),
              (f['self_bytes'], f['total_bytes'], f['total_leaked_bytes']),
              '%s as memory --format=json' % name)
    frames = {t.split(':')[0] for t in dom.frames.get('memflame', [])}
    # the small stacks are under a pixel wide at the default window size
    for fn in ('all', 'main'):
        ck.check(fn in frames, 'allocation flame graph frame %s (frames: %s)' % (fn, sorted(frames)))
    charts = dict(dom.charts)
    ck.check('heap/live_bytes' in charts, 'the live heap is plotted (charts: %s)' % sorted(charts))
    ck.check(len(charts.get('heap/live_bytes', '').split()) >= 1, 'the heap plot has points')
    peak = json.loads(cp.out)['totals']['peak_bytes']
    ck.eq(int(dom.chart_max.get('heap/live_bytes') or -1), peak,
          'the live heap plot reaches the peak of memory --format=json')
    ck.check(dom.panels and all(p[2] in ('linear', 'log') for p in dom.panels),
             'counter panels, each with its scale: %s' % dom.panels)
    ck.eq(len(dom.panels), len({p[:2] for p in dom.panels}), 'one panel per process and unit')
    # the memory flame graph: allocated, leaked and live at the peak, the
    # figures of memory --format=json
    totals = json.loads(cp.out)['totals']
    dom = render(ck, out, '#view=memflame')
    above_fold(ck, ['summary', 'memflame'])
    screenshot(ck, 'mem-flame.png')
    for kind, key, fn, fkey in (('0', 'allocated_bytes', None, None),
                                ('1', 'leaked_bytes', 'leaker', 'total_leaked_bytes'),
                                ('2', 'peak_bytes', None, None)):
        dom = dom_now(ck, 'var r = document.querySelector("input[name=memkind][value=\'%s\']"); '
                      'r.checked = true; r.dispatchEvent(new Event("change"))' % kind)
        vals = dom.values.get('memflame', [])
        ck.eq([v[1] for v in vals if v[0] == 'all'], [totals[key]],
              'the memory flame graph of %s: all as memory --format=json' % key)
        if fn:
            name = {v[2]: v[0] for v in vals}
            parent = {v[2]: v[3] for v in vals}

            def outermost(k):  # no ancestor frame of the same function
                p = parent[k]
                while p in name and name[p] != name[k]:
                    p = parent[p]
                return p not in name
            ck.eq(sum(v[1] for v in vals if v[0] == fn and outermost(v[2])), mj[fn][fkey],
                  'the memory flame graph of %s: %s' % (key, fn))
    ck.eq(mj['leaker']['total_leaked_bytes'], 385, 'leaker leaks 385 bytes')
    for name, f in mj.items():
        row = mem.get(name)
        if row is not None:
            ck.eq(int(row['total at peak']), f['total_peak_bytes'], '%s at the peak' % name)
    cc = run([cyg.exe, 'counters', '--format=json', cap])
    if cc.returncode != 0:
        raise Failure('counters --format=json failed: ' + cc.err.strip())
    ck.eq(sorted(c[0] for c in dom.charts), sorted(c['name'] for c in json.loads(cc.out)['counters']),
          'one chart per counter of counters --format=json')
    selftest(ck, out)


def test_escape(ck, cyg, example, args):
    evil = '</script><script>alert(1)</script>'
    cap = record(ck, cyg, example, [], 'name.cyg')
    out = os.path.join(cyg.workdir, 'name.html')
    data = write_html(ck, cyg, cap, out)
    ck.check(evil.encode() not in data, 'the name is not in the file as is')
    ck.check(b'\\u003c/script>\\u003cscript>alert(1)\\u003c/script>' in data,
             'the name is in the data block with < written \\u003c')
    dom = render(ck, out)
    ck.eq(dom.scripts, 3, 'scripts in the rendered page')
    flat = table(ck, dom, 'flat')
    ck.check(evil in flat, 'the flat profile shows the name verbatim (rows: %s)' % sorted(flat))
    if evil in flat:
        ck.eq(int(flat[evil]['calls']), 7, 'its calls')


def test_output(ck, cyg, example, args):
    cap = record(ck, cyg, example, [], 'calls.cyg')
    other = os.path.join(cyg.workdir, 'notes.txt')
    with open(other, 'w') as f:
        f.write('not a report\n')
    cp = run([cyg.exe, 'html', '-o', other, cap])
    ck.eq(cp.returncode, 1, 'html -o onto another file: exit status')
    ck.eq(len(cp.err.strip().splitlines()), 1, 'one line of error')
    with open(other) as f:
        ck.eq(f.read(), 'not a report\n', 'the other file is left as it was')
    write_html(ck, cyg, cap, other, ['-f'])
    rep = os.path.join(cyg.workdir, 'r.html')
    write_html(ck, cyg, cap, rep)
    write_html(ck, cyg, cap, rep)  # an earlier report is replaced
    cp = run([cyg.exe, 'html', cap], cwd=cyg.workdir)
    ck.eq(cp.returncode, 0, 'html without -o')
    ck.check(os.path.isfile(os.path.join(cyg.workdir, 'report.html')), 'the default report.html')
    cp = run([cyg.exe, 'html', '-o', rep, os.path.join(cyg.workdir, 'missing.cyg')])
    ck.eq(cp.returncode, 1, 'a missing capture: exit status')
    cp = run([cyg.exe, 'html', '--bogus', cap])
    ck.eq(cp.returncode, 2, 'an unknown option: exit status')
    cp = run([cyg.exe, 'html', '--help'])
    ck.eq(cp.returncode, 0, '--help')
    ck.check('usage: cygprof html' in cp.out, '--help prints the usage')


def test_samples(ck, cyg, example, args):
    cap = record(ck, cyg, example, ['--sample'], 'samples.cyg')
    data, _ = cyg.report_json(cap, ck)
    sm = data.get('samples')
    if not sm or not sm.get('samples'):
        print('SKIP: record --sample took no sample here (no perf events?)')
        sys.exit(cygtest.SKIP)
    out = os.path.join(cyg.workdir, 'samples.html')
    write_html(ck, cyg, cap, out)
    dom = render(ck, out)
    flat = table(ck, dom, 'flat')
    for f in data['functions']:
        row = flat.get(f['name'])
        if not ck.check(row is not None, 'flat profile row of %s' % f['name']):
            continue
        ck.eq((int(row['calls']), int(row['samples']), int(row['sampled']), int(row['off-CPU'])),
              (f['calls'], f['samples'], f['sampled_ns'], f['offcpu_ns']),
              '%s: calls, samples, sampled and off-CPU ns as report --format=json' % f['name'])
    ck.check(int(flat.get('spin', {}).get('samples', 0)) * 2 > sm['samples'],
             'spin has most of the %d samples' % sm['samples'])
    leaves = table(ck, dom, 'leaves')
    ck.eq(len(leaves), len({(u['name'] + (' (kernel)' if u['kernel'] else '')) for u in sm['uninstrumented']}),
          'uninstrumented functions listed')
    ck.check('Samples' in dom.text.get('s-samples', ''), 'the samples section')
    selftest(ck, out)
    # record --time=sampled --sample: the page shows the samples' times
    cap = record(ck, cyg, example, ['--sample', '--time=sampled'], 'tsampled.cyg')
    data, _ = cyg.report_json(cap, ck)
    ck.eq(data.get('sampled_times'), True, 'the capture has sampled times')
    out = os.path.join(cyg.workdir, 'tsampled.html')
    write_html(ck, cyg, cap, out)
    dom = render(ck, out)
    flat = table(ck, dom, 'flat')
    for f in data['functions']:
        row = flat.get(f['name'])
        if ck.check(row is not None, 'sampled: flat profile row of %s' % f['name']):
            ck.eq((int(row['self']), int(row['total'])), (f['self_ns'], f['total_ns']),
                  '%s: sampled self and total ns as report --format=json' % f['name'])
    ck.check(int(flat.get('spin', {}).get('self', 0)) > 0, 'spin has a sampled self time')
    ck.check('Exact calls and sampled times' in dom.text.get('app', ''),
             'the flat profile says its times are sampled')


def test_timeline(ck, cyg, example, args):
    cap = record(ck, cyg, example, ['--timeline'], 'tl.cyg')
    out = os.path.join(cyg.workdir, 'tl.html')
    write_html(ck, cyg, cap, out)
    tl = page_data(out)['timeline']
    ck.eq((tl['calls'], tl['kept']), (40, 40), 'timeline calls recorded and kept')
    names = [f[0] for f in page_data(out)['fns']]
    ck.eq(sum(1 for k in tl['fn'] if names[k] == 'c'), 30, 'slices of c in the data')
    dom = render(ck, out, '#view=timeline')
    ck.eq(dom.body.get('data-view'), 'timeline', 'report.html#view=timeline opens the timeline')
    rows = table(ck, dom, 'tl-fns')
    ck.eq({k: int(v['calls']) for k, v in rows.items()}, {'main': 1, 'a': 3, 'b': 6, 'c': 30},
          'calls in view of the whole timeline')
    ck.check('All 40 calls' in dom.text.get('tl-note', ''), 'the note: nothing left out')
    above_fold(ck, ['summary', 'tl-canvas'])
    screenshot(ck, 'timeline.png')
    # zoom in around the middle: fewer calls in view; 0 shows them all
    dom = dom_now(ck, 'for (var i = 0; i < 8; i++) document.getElementById("tl-in").click()')
    inview = sum(int(v['calls']) for v in table(ck, dom, 'tl-fns').values()) \
        if dom.tables.get('tl-fns', [[]])[1:] else 0
    ck.check(inview < 40, 'zoomed in: %d of 40 calls in view' % inview)
    dom = dom_now(ck, 'document.dispatchEvent(new KeyboardEvent("keydown", {key: "0", bubbles: true}))')
    ck.eq(sum(int(v['calls']) for v in table(ck, dom, 'tl-fns').values()), 40, 'key 0: all calls again')
    selftest(ck, out)
    # bounded: --max-calls keeps the longest calls and the page says so
    out2 = os.path.join(cyg.workdir, 'tl10.html')
    write_html(ck, cyg, cap, out2, ['--max-calls', '10'])
    tl = page_data(out2)['timeline']
    ck.eq((tl['calls'], tl['kept']), (40, 10), '--max-calls 10: calls recorded and kept')
    ck.check(names[tl['fn'][0]] == 'main', 'the longest call (main) is kept')
    dom = render(ck, out2, '#view=timeline')
    ck.check('longest 10 of 40' in dom.text.get('tl-note', ''), 'the page says the timeline is limited: %r'
             % dom.text.get('tl-note', ''))
    # a capture without a timeline has no timeline view
    cap = record(ck, cyg, example, [], 'calls.cyg')
    out3 = os.path.join(cyg.workdir, 'calls.html')
    write_html(ck, cyg, cap, out3)
    ck.eq(page_data(out3)['timeline'], None, 'no timeline without --timeline')
    dom = render(ck, out3)
    ck.check('v-timeline' not in dom.text, 'no timeline view without --timeline')


def test_counters(ck, cyg, example, args):
    cap = record(ck, cyg, example, ['-i', 'counters,memory', '--counters=5ms'], 'grow.cyg')
    out = os.path.join(cyg.workdir, 'grow.html')
    write_html(ck, cyg, cap, out)
    cc = run([cyg.exe, 'counters', '--format=json', cap])
    if cc.returncode != 0:
        raise Failure('counters --format=json failed: ' + cc.err.strip())
    want = json.loads(cc.out)['counters']
    dom = render(ck, out, '#view=counters')
    ck.eq(sorted(c[0] for c in dom.charts), sorted(c['name'] for c in want),
          'one line per counter of counters --format=json')
    groups = {(str(c['pid'] or 0), c['unit']) for c in want}
    ck.eq(sorted(p[:2] for p in dom.panels), sorted(groups), 'one panel per process and unit')
    # the system's bytes (MemTotal: GiB, Buffers or Dirty: MiB) are more
    # than two decades apart: a log scale (as counters --plot); memgrow's
    # heap/live_bytes beside statm: each panel its own scale
    scale = {p[:2]: p[2] for p in dom.panels}
    ck.eq(scale.get(('0', 'bytes')), 'log', 'the system\'s bytes panel on a log scale')
    ck.check(all(s in ('linear', 'log') for s in scale.values()), 'every panel has a scale')
    above_fold(ck, ['summary', 'v-counters'])
    screenshot(ck, 'counters.png')
    no_internal_keys(ck, page_data(out))
    selftest(ck, out)


LONG = ('Pipeline<std::map<std::__cxx11::basic_string<char, std::char_traits<char>, '
        'std::allocator<char> >, std::vector<std::pair<unsigned long, double>, '
        'std::allocator<std::pair<unsigned long, double> > >, std::less<std::__cxx11::'
        'basic_string<char, std::char_traits<char>, std::allocator<char> > > > >::run(unsigned '
        'long, std::function<void (double)> const&)')
CHAIN = ['main', 'run'] + ['s%02d' % i for i in range(1, 13)]


def flame_frames():
    """The time flame graph's drawn frames: [name, value, left, parent]
    (data-n divs; a collapsed chain is none) and its chain rows."""
    return json.loads(BROWSER[0].evaluate(
        'JSON.stringify({f: Array.from(document.querySelectorAll("#flame div[data-n]")).map(function (d) {'
        ' return [d.title.split(": ")[0], +d.getAttribute("data-v"), parseFloat(d.style.left), +d.getAttribute("data-p"),'
        ' +d.getAttribute("data-n"), d.style.backgroundColor]; }),'
        ' c: Array.from(document.querySelectorAll("#flame div[data-chain]")).map(function (d) {'
        ' return [+d.getAttribute("data-frames"), d.title]; }),'
        ' a: Object.assign({}, document.getElementById("flame").dataset),'
        ' legend: document.getElementById("flame-legend").innerText})'))


def press(k):
    BROWSER[0].evaluate('document.dispatchEvent(new KeyboardEvent("keydown", {key: %s, bubbles: true}))'
                        % json.dumps(k))


def test_flame(ck, cyg, example, args):
    cap = record(ck, cyg, example, [], 'chain.cyg')
    out = os.path.join(cyg.workdir, 'chain.html')
    write_html(ck, cyg, cap, out)
    data, _ = cyg.report_json(cap, ck)
    fns = {f['name']: f for f in data['functions']}
    want = dict({n: 1 for n in CHAIN + ['branch']}, right=100, left=200)
    want[LONG] = 50
    ck.eq({n: f['calls'] for n, f in fns.items()}, want, 'the calls html-chain.c states')
    render(ck, out)
    g = flame_frames()
    # collapsed: main -> run -> s01 .. s12 as one row under all, then branch
    ck.eq([c[0] for c in g['c']], [len(CHAIN)], 'one collapsed chain of %d frames' % len(CHAIN))
    ck.check(g['c'] and ' \u2192 '.join(CHAIN) in g['c'][0][1], 'the chain\'s title names its frames in order')
    ck.eq(sorted(f[0] for f in g['f']), sorted(['all', 'branch', 'left', 'right', LONG]),
          'the frames drawn below the chain')
    ck.eq(g['a'].get('collapse'), 'collapsed', 'the chains collapsed by default')
    ck.eq(g['a'].get('layout'), 'top-down', 'top-down by default')
    ck.eq(g['a'].get('order'), 'left-heavy', 'left-heavy by default')
    by = {f[0]: f for f in g['f']}
    for n in ('left', 'right', LONG):
        if n in by:
            ck.eq(by[n][1], fns[n]['total_ns'], 'the frame of %s is its total time' % n[:20])
    # colours by object: two objects, a legend naming them
    ck.eq(g['a'].get('colour'), 'object', 'two objects: coloured by object')
    ck.check('html-chain' in g['legend'] and 'libhtml-chain-lib.so' in g['legend'],
             'the legend names both objects: %r' % g['legend'])
    if 'left' in by and 'right' in by:
        ck.check(by['left'][5] != by['right'][5], 'left (the program) and right (the library) differ in colour')
        ck.eq(by['left'][5], by.get(LONG, by['left'])[5], 'functions of one object share its colour')
    above_fold(ck, ['summary', 'top5', 'sum-time', 'flame', 'flame-legend'])
    px = screenshot(ck, 'flame-collapsed.png')
    # the pixels: the two objects' colours (report.js OBJ_COLOURS, by time:
    # the program's first, the library's second) are on the screen
    for rgb, what in ((b'\xf0\xa0\x50', 'the program\'s orange'), (b'\x6f\xa8\xdc', 'the library\'s blue')):
        ck.check(rgb in px, 'the screenshot shows %s' % what)
    # x: every chain expanded (main and the s frames drawn), x again folds
    press('x')
    g = flame_frames()
    ck.eq((g['a'].get('collapse'), len(g['c'])), ('expanded', 0), 'key x expands the chains')
    ck.check(set(CHAIN) <= {f[0] for f in g['f']}, 'expanded: every frame of the chain is drawn')
    press('x')
    g = flame_frames()
    ck.eq(len(g['c']), 1, 'key x again: collapsed')
    # a click on the chain expands it alone
    BROWSER[0].evaluate('document.querySelector("#flame div[data-chain]").click()')
    g = flame_frames()
    ck.eq((len(g['c']), g['a'].get('collapse')), (0, 'collapsed'), 'a click expands that chain')
    ck.check('main' in {f[0] for f in g['f']}, 'the clicked chain\'s frames are drawn')
    # l: by name (as flamegraph.pl: Pipeline<..>, left, right), l again: left-heavy
    press('l')
    g = flame_frames()
    x = {f[0]: f[2] for f in g['f']}
    ck.eq(g['a'].get('order'), 'by-name', 'key l: by name')
    ck.check(x.get(LONG, 1e9) < x.get('left', -1) < x.get('right', -1),
             'by name: the long name, left, right from the left (%s)' % x)
    press('l')
    g = flame_frames()
    x = {f[0]: f[2] for f in g['f']}
    ck.check(x.get('left', 1e9) < min(x.get('right', -1), x.get(LONG, -1)), 'left-heavy: left (the heaviest) first')
    # i: inverted: the functions by self time first, their callers below
    press('i')
    g = flame_frames()
    ck.eq(g['a'].get('layout'), 'inverted', 'key i: inverted')
    firsts = {f[0]: f[1] for f in g['f'] if f[3] == 0}
    self_of = {n: f['self_ns'] for n, f in fns.items() if f['self_ns']}
    ck.check({'left', 'right', LONG} <= set(firsts), 'inverted: left, right and the long name on the first row (%s)'
             % sorted(firsts))
    for n in ('left', 'right', LONG):
        if n in firsts:
            ck.eq(firsts[n], self_of[n], 'inverted: %s is its self time' % n[:20])
    # (branch's own self time, when a pixel wide, has its chain s12 .. run)
    ck.eq(len([c for c in g['c'] if c[0] == len(CHAIN) and 'branch \u2192 s12 \u2192' in c[1]]), 3,
          'inverted: each function\'s callers branch, s12 .. s01, run as one row (%s)' % [c[0] for c in g['c']])
    ck.check('main' in {f[0] for f in g['f']}, 'inverted: main, the outermost caller, after the chain')
    px = screenshot(ck, 'flame-inverted.png')
    ck.check(b'\x6f\xa8\xdc' in px, 'inverted: the library\'s blue still on the screen')
    press('i')
    # c: by self share, by name, back to by object; the legend says which
    for want_c, word in (('self', 'self share'), ('name', 'by name'), ('object', 'by object')):
        press('c')
        g = flame_frames()
        ck.eq(g['a'].get('colour'), want_c, 'key c: %s' % want_c)
        ck.check(word in g['legend'].lower(), 'the legend says %r: %r' % (word, g['legend']))
    # the controls: a click on "inverted" does what i does
    BROWSER[0].evaluate('document.querySelector("#flame-modes button[data-m=inverted][data-v=\'1\']").click()')
    ck.eq(flame_frames()['a'].get('layout'), 'inverted', 'the inverted button')
    ck.eq(BROWSER[0].evaluate('document.querySelector("#flame-modes button.on[data-m=inverted]").textContent'),
          'inverted (bottom-up)', 'the control shows the layout chosen')
    # the long name: cut in the summary (whole in its title), wrapped in the
    # tables, and nothing wider than the window
    render(ck, out)
    m = json.loads(BROWSER[0].evaluate(
        'JSON.stringify((function () { var t = Array.from(document.querySelectorAll("#top5 td.name"))'
        '.filter(function (d) { return d.title.indexOf("Pipeline<") === 0; })[0];'
        ' var f = Array.from(document.querySelectorAll("#flat td.name"))'
        '.filter(function (d) { return d.textContent.indexOf("Pipeline<") === 0; })[0];'
        ' return {title: t ? t.title : null, tw: t ? t.getBoundingClientRect().width : -1,'
        ' top5: document.getElementById("top5").getBoundingClientRect().right,'
        ' fw: f ? f.getBoundingClientRect().width : -1, fh: f ? f.getBoundingClientRect().height : -1,'
        ' page: document.documentElement.scrollWidth, win: window.innerWidth}; })())'))
    ck.eq(m['title'], LONG, 'the summary\'s top 5 keeps the whole name in the title')
    ck.check(0 < m['tw'] <= 400, 'the long name is cut in the top 5 (%.0f px wide)' % m['tw'])
    ck.check(m['top5'] <= VIEW_W, 'the top 5 ends inside the window (%.0f px)' % m['top5'])
    ck.check(0 < m['fw'] <= 48 * 13 + 20 and m['fh'] > 20, 'the flat profile wraps the long name (%s)' % m)
    ck.check(m['page'] <= m['win'], 'nothing is wider than the window (%d of %d px)' % (m['page'], m['win']))
    selftest(ck, out)


def test_data(ck, cyg, example, args):
    """The page's data without a browser: each function's object, what the
    wall time is made of, and the size guard."""
    cap = record(ck, cyg, example, [], 'calls.cyg')
    out = os.path.join(cyg.workdir, 'calls.html')
    write_html(ck, cyg, cap, out)
    d = page_data(out)
    rj, _ = cyg.report_json(cap, ck)
    names = [f[0] for f in d['fns']]
    ck.eq(sorted(names), ['a', 'b', 'c', 'main'], 'the functions of calls.c')
    ck.eq([d['objects'][k] if k >= 0 else None for k in d['fn_obj']], [os.path.basename(example)] * len(names),
          'every function is in the example\'s executable')
    w = d['wall']
    ck.eq(w['calls'], 40, 'the wall summary counts the 40 calls')
    ck.eq(w['threads'], 1, 'one thread')
    main = [f for f in rj['functions'] if f['name'] == 'main'][0]
    ck.eq(w['in_fns_ns'], main['total_ns'], 'in functions: main\'s total (the root\'s only child)')
    ck.eq(w['self_ns'], sum(f['self_ns'] for f in rj['functions']), 'the self-time total of report --format=json')
    ck.eq(w['self_ns'], w['in_fns_ns'], 'self times add up to the time in functions')
    ck.check(w['in_fns_ns'] <= w['threads_ns'] <= w['duration_ns'],
             'functions <= the thread\'s wall time <= the duration (%s)' % w)
    # (the pair is written to 3 decimals: the product may round apart by 1)
    ck.check(abs(w['hooks_ns'] - 40 * w['hook_pair_ns']) <= 1, 'the hooks: 40 calls times the calibrated pair (%s)' % w)
    ck.eq(d['duration_ns'], w['duration_ns'], 'one duration')
    # the size guard: a page past CYGPROF_HTML_MAX_PAGE (here 500 bytes:
    # 23 to 26 per timeline call of a run of 10 ms to 1 s) is refused in one
    # line unless -f
    tcap = record(ck, cyg, example, ['--timeline'], 'tl.cyg')
    big = os.path.join(cyg.workdir, 'big.html')
    env = dict(os.environ, CYGPROF_HTML_MAX_PAGE='500')
    cp = run([cyg.exe, 'html', '-o', big, tcap], env=env)
    ck.eq(cp.returncode, 1, 'a page past the limit: exit 1')
    err = cp.err.strip()
    ck.eq(len(err.splitlines()), 1, 'one line: %r' % err)
    for word in ('html: ', big, 'a page of about', '40 timeline calls of --max-calls 200000',
                 'CYGPROF_HTML_MAX_PAGE (500 bytes)', 'lower --max-calls', 'give -f'):
        ck.check(word in err, 'the refusal says %r: %r' % (word, err))
    ck.check(not os.path.exists(big), 'nothing written')
    cp = run([cyg.exe, 'html', '-o', big, '--max-calls', '15', tcap], env=env)
    ck.eq(cp.returncode, 0, '--max-calls 15 (at most 390 bytes) fits: %s' % cp.err.strip())
    ck.eq(page_data(big)['timeline']['kept'], 15, '15 calls kept')
    cp = run([cyg.exe, 'html', '-f', '-o', big, tcap], env=env)
    ck.eq(cp.returncode, 0, '-f writes it anyway')
    ck.eq(page_data(big)['timeline']['kept'], 40, 'all 40 calls')
    cp = run([cyg.exe, 'html', '-o', big, tcap], env=dict(os.environ, CYGPROF_HTML_MAX_PAGE='lots'))
    ck.eq(cp.returncode, 2, 'a bad CYGPROF_HTML_MAX_PAGE: exit 2')
    ck.check('CYGPROF_HTML_MAX_PAGE' in cp.err, 'the error names the variable')
    # by default a 40-call timeline is far from the limit
    cp = run([cyg.exe, 'html', '-o', big, '--max-calls', '100000000', tcap])
    ck.eq(cp.returncode, 0, '--max-calls 100000000 of 40 calls: written')


TESTS = {
    'html-counters': test_counters,
    'html-timeline': test_timeline,
    'html-calls': test_calls,
    'html-memory': test_memory,
    'html-escape': test_escape,
    'html-output': test_output,
    'html-samples': test_samples,
    'html-flame': test_flame,
    'html-data': test_data,
}


def extra(ap):
    ap.add_argument('--memory', help='mem-basic built with -finstrument-functions')
    ap.add_argument('--screenshots', metavar='DIR',
                    help='where the screenshots are kept (test artefacts)')
    ap.add_argument('--timefilter', help='examples/timefilter.c (html-calls: the flame '
                    'graph\'s order)')


if __name__ == '__main__':
    sys.exit(cygtest.driver_main(TESTS, 'html', __doc__, extra, call=with_browser))
