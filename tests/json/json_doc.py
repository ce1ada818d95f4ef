#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""json_doc.py - every command's --format=json output against the JSON
OUTPUT section of its manual page.

usage: json_doc.py --cygprof CYGPROF --test json-doc --example CALLS
                   --man MANDIR --mem MEMBASIC --sample SAMPLEPROG [--sanitize B]
                   [-v] [--keep]

CALLS is examples/calls.c (main 1, a 3, b 6, c 30 calls), MEMBASIC
examples/mem-basic.c built with -finstrument-functions (leaker: 5
allocations never freed), SAMPLEPROG tests/sampling/sampling-prog.c built
with -finstrument-functions (spin() computes for 300 ms; also the
program of the --counters capture).

For report (flat, --tree, with samples), info, memory (plain, --leaks,
--peak, --temporary, --function, --diff), counters, samples, diff (two
captures, --paths, several runs a side with --fail-above), annotate and
top --once, the test checks:

  documented  every key of the output, at any depth, is named in bold (or
              in an example) in the JSON OUTPUT section of the command's
              page, or of a page that section refers to, or in the JSON
              and Warnings part of cygprof(1) (the limits object);
  order       the top-level members the section lists (.TP items) appear
              in the output in that order;
  typed       no string holds a number or a list of KEY=NUMBER (a number
              is a JSON number, a record an object);
  figures     a few exact figures, so that the outputs are the right ones:
              c 30 calls, leaker 5 allocations leaked, b's callees in the
              tree.

The samples parts are left out (saying so) when the kernel gives this user
no perf sample, the memory parts under a sanitizer (--sanitize: it owns
malloc); the rest still runs.  Exit status: 0 passed, 1 failed.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402
from cygtest import Failure, run  # noqa: E402

IDENT = re.compile(r'[A-Za-z_][A-Za-z0-9_]*')


def troff_args(rest):
    """The arguments of a troff macro line: words, or "quoted strings"."""
    args, cur, q, i = [], '', False, 0
    while i < len(rest):
        ch = rest[i]
        if ch == '\\' and i + 1 < len(rest):
            cur += rest[i:i + 2]
            i += 2
            continue
        if ch == '"':
            q = not q
        elif ch in ' \t' and not q:
            if cur:
                args.append(cur)
            cur = ''
        else:
            cur += ch
        i += 1
    if cur:
        args.append(cur)
    return args


def detroff(s):
    s = s.replace('\\-', '-').replace('\\(dq', '"').replace('\\e', '\\')
    return re.sub(r'\\f[BIRP]|\\\(..|\\&', '', s)


def sections(path, title):
    """The lines of the .SH (or .SS) sections of path whose title has title."""
    out, keep = [], False
    with open(path) as f:
        for ln in f:
            ln = ln.rstrip('\n')
            if ln.startswith('.SH') or ln.startswith('.SS'):
                t = detroff(ln[3:]).strip().strip('"')
                if ln.startswith('.SH'):
                    keep = title in t
                    continue
                if title in t:
                    keep = True
                    continue
            # a subsection of the section stays (tp_members stops at it)
            if keep:
                out.append(ln)
    return out


def bold_tokens(lines):
    """Identifiers set in bold, in examples (.EX) or inside {...} lists."""
    toks, in_ex = set(), False
    for ln in lines:
        if ln.startswith('.EX'):
            in_ex = True
            continue
        if ln.startswith('.EE'):
            in_ex = False
            continue
        if in_ex:
            toks |= set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:', detroff(ln)))
            continue
        bold = []
        m = re.match(r'\.(B|BR|RB|BI|IB)\s+(.*)', ln)
        if m:
            args = troff_args(m.group(2))
            mac = m.group(1)
            if mac in ('B', 'BI', 'IB'):
                bold = args
            elif mac == 'BR':
                bold = args[0::2]
            else:
                bold = args[1::2]
        bold += re.findall(r'\\fB(.*?)\\f[RP]', ln)
        for b in bold:
            toks |= set(IDENT.findall(detroff(b)))
        for lst in re.findall(r'\{([^{}]*)\}', detroff(ln)):
            toks |= set(IDENT.findall(lst))
    return toks


def tp_members(lines):
    """The top-level members a JSON OUTPUT section lists: the bold words of
    the line after each .TP (before any .SS subsection)."""
    out = []
    for i, ln in enumerate(lines):
        if ln.startswith('.SS'):
            break
        if ln.startswith('.TP') and i + 1 < len(lines):
            nxt = lines[i + 1]
            m = re.match(r'\.(B|BR)\s+(.*)', nxt)
            if m:
                args = troff_args(m.group(2))
                words = args if m.group(1) == 'B' else args[0::2]
                for w in words:
                    out += [t for t in IDENT.findall(detroff(w))]
    return out


class Docs:
    def __init__(self, mandir):
        self.mandir = mandir
        common = sections(os.path.join(mandir, 'cygprof.1'), 'JSON')
        common += sections(os.path.join(mandir, 'cygprof.1'), 'Warnings')
        # cygprof(1)'s Warnings part holds the limits object's example
        common = [ln for ln in common]
        self.common = bold_tokens(common) | self._limits_example()

    def _limits_example(self):
        with open(os.path.join(self.mandir, 'cygprof.1')) as f:
            text = f.read()
        m = re.search(r'\.EX\n"limits":(.*?)\.EE', text, re.S)
        return set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"\s*:', m.group(1))) if m else set()

    def section(self, cmd):
        path = os.path.join(self.mandir, 'cygprof-%s.1' % cmd)
        lines = sections(path, 'JSON OUTPUT')
        if not lines:
            raise Failure('%s has no JSON OUTPUT section' % os.path.basename(path))
        return lines

    def tokens(self, cmd, seen=None):
        seen = seen or set()
        seen.add(cmd)
        lines = self.section(cmd)
        toks = bold_tokens(lines) | self.common
        for ref in set(re.findall(r'cygprof\\-([a-z-]+)\s*\(1\)', '\n'.join(lines))):
            if ref not in seen and os.path.exists(os.path.join(self.mandir,
                                                               'cygprof-%s.1' % ref)):
                try:
                    toks |= self.tokens(ref, seen)
                except Failure:
                    pass
        return toks


def keys_of(v, path='', out=None):
    """(path, key) of every key of v, at any depth."""
    out = [] if out is None else out
    if isinstance(v, dict):
        for k, x in v.items():
            out.append((path, k))
            keys_of(x, path + '.' + k, out)
    elif isinstance(v, list):
        for x in v:
            keys_of(x, path + '[]', out)
    return out


NUMERIC = re.compile(r'^-?\d+(\.\d+)?$')
RECORD = re.compile(r'\b[a-z_]+=-?\d+\b.*\b[a-z_]+=-?\d+\b')


def untyped(v, path=''):
    """Strings that hold a number or KEY=NUMBER pairs."""
    bad = []
    if isinstance(v, dict):
        for k, x in v.items():
            bad += untyped(x, path + '.' + k)
    elif isinstance(v, list):
        for x in v:
            bad += untyped(x, path + '[]')
    elif isinstance(v, str) and (NUMERIC.match(v) or RECORD.search(v)):
        # a command line or the record options may hold anything
        if not re.search(r'\.(command|filters|exe|args)$', path):
            bad.append('%s = %r' % (path, v))
    return bad


def check_output(ck, docs, cmd, what, out):
    try:
        j = json.loads(out)
    except ValueError as e:
        raise Failure('%s: not JSON (%s): %r' % (what, e, out[:300]))
    toks = docs.tokens(cmd)
    missing = sorted(set('%s.%s' % (p, k) if p else k for p, k in keys_of(j) if k not in toks))
    ck.eq(missing, [], '%s: every key is named in cygprof-%s(1), JSON OUTPUT' % (what, cmd))
    if isinstance(j, dict):
        order = [m for m in tp_members(docs.section(cmd)) if m in j]
        got = [k for k in j if k in order]
        ck.eq(got, order, '%s: the top-level members in the order of the page' % what)
    ck.eq(untyped(j), [], '%s: numbers are numbers, records objects' % what)
    return j


def cyg_json(ck, docs, cyg, cmd, args, what=None, status=(0,)):
    cp = run([cyg.exe, cmd] + args)
    what = what or ' '.join([cmd] + [a if '/' not in a else os.path.basename(a) for a in args])
    if cp.returncode not in status:
        raise Failure('%s: exit %d: %s' % (what, cp.returncode, cp.err.strip()))
    return check_output(ck, docs, cmd, what, cp.out)


def record(cyg, cap, prog, opts=()):
    cp = cyg.record(cap, prog, list(opts))
    if cp.returncode != 0:
        raise Failure('record %s: exit %d: %s' % (' '.join(opts), cp.returncode, cp.err.strip()))
    return cap


def test_json_doc(ck, cyg, example, args):
    docs = Docs(args.man)
    d = cyg.workdir
    calls = [example]
    a = record(cyg, os.path.join(d, 'a.data'), calls)
    b = record(cyg, os.path.join(d, 'b.data'), calls)
    j = cyg_json(ck, docs, cyg, 'report', ['--format=json', a])
    fns = {f['name']: f for f in j.get('functions', [])}
    ck.eq(fns.get('c', {}).get('calls'), 30, 'report: c 30 calls')
    j = cyg_json(ck, docs, cyg, 'report', ['--format=json', '--tree', '--min-percent=0', a])
    paths = [p for t in j.get('tree', []) for p in t.get('paths', [])]
    byid = {p.get('id'): p for p in paths}
    ck.eq([(p.get('name'), p.get('calls'), byid.get(p.get('parent'), {}).get('name'))
           for p in paths], [('main', 1, None), ('a', 3, 'main'), ('b', 6, 'a'), ('c', 30, 'b')],
          'report --tree: main > a 3 > b 6 > c 30')
    j = cyg_json(ck, docs, cyg, 'info', ['--format=json', a])
    ck.eq(j.get('calls'), 40, 'info: 40 calls')
    k = record(cyg, os.path.join(d, 'k.data'), [os.path.abspath(args.sample)],
               ['--counters=20ms'])
    j = cyg_json(ck, docs, cyg, 'counters', ['--format=json', k])
    ck.check(any(c.get('samples') for c in j.get('counters', [])), 'counters: sampled')
    if args.sanitize not in ('', 'none'):
        print('# not checked: memory (b_sanitize=%s: the sanitizer owns malloc, the '
              'malloc preload cannot run under it)' % args.sanitize)
    else:
        m = record(cyg, os.path.join(d, 'm.data'), [os.path.abspath(args.mem)],
                   ['--memory', '--counters=5ms'])
        m2 = record(cyg, os.path.join(d, 'm2.data'), [os.path.abspath(args.mem)], ['--memory'])
        cyg_json(ck, docs, cyg, 'info', ['--format=json', m])
        j = cyg_json(ck, docs, cyg, 'memory', ['--format=json', m])
        fm = {f['name']: f for f in j.get('functions', [])}
        ck.eq(fm.get('leaker', {}).get('self_leaked_allocations'), 5,
              'memory: leaker 5 allocations leaked')
        for opt in ('--leaks', '--peak', '--temporary'):
            cyg_json(ck, docs, cyg, 'memory', ['--format=json', opt, m])
        cyg_json(ck, docs, cyg, 'memory', ['--format=json', '--function', 'make_list', m])
        cyg_json(ck, docs, cyg, 'memory', ['--format=json', '--diff', m2, m])
        j = cyg_json(ck, docs, cyg, 'counters', ['--format=json', m])
        ck.check(any(c.get('name') == 'heap/live_bytes' for c in j.get('counters', [])),
                 'counters: heap/live_bytes')
    j = cyg_json(ck, docs, cyg, 'diff', ['--format=json', a, b])
    ck.eq(sorted((f.get('name'), f.get('calls', {}).get('delta')) for f in j.get('functions', [])),
          [('a', 0), ('b', 0), ('c', 0), ('main', 0)], 'diff: the same calls in both runs')
    cyg_json(ck, docs, cyg, 'diff', ['--format=json', '--paths', a, b])
    c = record(cyg, os.path.join(d, 'c.data'), calls)
    e = record(cyg, os.path.join(d, 'e.data'), calls)
    j = cyg_json(ck, docs, cyg, 'diff', ['--format=json', '--fail-above', '50',
                                         a + ',' + b, c + ',' + e], status=(0, 3))
    ck.check(all(f.get('calls', {}).get('old') == f.get('calls', {}).get('new')
                 for f in j.get('functions', [])), 'diff --fail-above: the same calls')
    j = cyg_json(ck, docs, cyg, 'annotate', ['--format=json', a])
    lines = [ln for f in j.get('files', []) for ln in f.get('lines', [])]
    ck.eq((sum(ln.get('calls', 0) for ln in lines), j.get('totals', {}).get('calls')), (40, 40),
          'annotate: the 40 calls, each from a source line')
    cp = run([cyg.exe, 'top', '--once', '--format=json', '-O', os.path.join(d, 'top.out'),
              '--'] + calls)
    if cp.returncode != 0:
        raise Failure('top --once: exit %d: %s' % (cp.returncode, cp.err.strip()))
    last = cp.out.strip().splitlines()[-1] if cp.out.strip() else ''
    j = check_output(ck, docs, 'top', 'top --once --format=json', last)
    ck.eq({f['name']: f['calls'] for f in j.get('functions', [])}.get('c'), 30,
          'top: c 30 calls')
    s = os.path.join(d, 's.data')
    cp = cyg.record(s, [os.path.abspath(args.sample)], ['--sample=1000'])
    if cp.returncode != 0:
        raise Failure('record --sample: exit %d: %s' % (cp.returncode, cp.err.strip()))
    j = cyg_json(ck, docs, cyg, 'report', ['--format=json', s], 'report (samples)')
    if not j.get('samples', {}).get('samples'):
        print('# not checked: samples, annotate with samples (this user gets no perf '
              'sample here)')
        return
    cyg_json(ck, docs, cyg, 'samples', ['--format=json', s])
    cyg_json(ck, docs, cyg, 'annotate', ['--format=json', s], 'annotate (samples)')


def extra(ap):
    ap.add_argument('--man', required=True)
    ap.add_argument('--mem', required=True)
    ap.add_argument('--sample', required=True)
    ap.add_argument('--sanitize', default='none', help="meson's b_sanitize option")


if __name__ == '__main__':
    sys.exit(cygtest.driver_main({'json-doc': test_json_doc}, 'json', __doc__, extra))
