#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end tests of comparing two captures: `cygprof diff` and
`cygprof memory --diff OLD NEW`.

Usage:
  diff.py --cygprof CYGPROF --example PROG-O2 --other PROG-O0 --test NAME
          [--skip REASON] [-v] [--keep]

PROG-O2 and PROG-O0 are tests/diff/diff-prog.c built at -O2 and -O0; run as
"PROG old" and "PROG new" (counts in its header): work is called 1000 then
2000 times, steady 10 times in both, only_old 3 times in OLD only, only_new
4 times in NEW only; alloc_some allocates 100 then 200 blocks of 64 bytes,
alloc_steady 5 of 32 in both.

Tests:
  diff-ci       the CI verdict (--cidiff: examples/cidiff.c): 6 OLD runs and 3
                NEW ones with hot() 2x slower (a 30% change is within
                what 3 runs a side spread on a busy machine or under ASan:
                up to 26% seen), each about 0.5 s, run alone
                (not beside the suite's other tests; a shared machine stays
                busy): 3 vs 3 flags hot slower (main, its caller, may be
                too), steady not, exit 3; 20 comparisons of 3 OLD runs
                against 3 other OLD runs flag nothing, exit 0; 3 runs with 3 calls
                more of extra() are a change of calls that passes the time
                gate (exit 0) and fails with --fail-calls (exit 3); one
                run a side says on stderr (one line) that the noise is
                unknown, "noise unknown" in the text, null in JSON
  diff-gate-small  hot() at 0.1% of the run in 3 OLD runs, 17 times slower
                (1.7%) in 3 NEW runs: judged on its NEW share, slower,
                exit 3, named in the text
  diff-profile  OLD and NEW of the -O2 build: diff --format=json and the text
                say work 1000 -> 2000 (+1000, +100%), the unchanged functions
                0, only_new added, only_old removed; --paths, --sort, -F
  diff-builds   OLD of the -O0 build against NEW of the -O2 one (and the
                reverse): every function still matches by name (only
                only_new and only_old are added or removed)
  diff-memory   record --memory of OLD and NEW: memory --diff OLD NEW gives
                alloc_some 6400 -> 12800 bytes (+6400), 100 -> 200
                allocations, alloc_steady unchanged, the same per stack, also
                across the two builds; --diff T1 T2 FILE still compares times
  diff-memory-filters
                the filters after the fact on allocation stacks (old run:
                alloc_some 100 x 64 bytes, alloc_steady 5 x 32): -F
                alloc_some keeps exactly its 100 allocations and 6400 bytes,
                -N alloc_some charges them to main, -D 1 charges all 6560
                bytes to main, a time range after the end keeps none; the
                frees of the blocks left out are left out too
  diff-errors   a missing, empty or corrupt capture on either side: one
                line, exit 1; the wrong number of arguments: exit 2; memory
                --diff with a capture without memory events: exit 1
"""

import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure, run, describe_status, expect_error  # noqa: E402


def record(cyg, prog, mode, name, opts=()):
    cap = os.path.join(cyg.workdir, name)
    cp = cyg.record(cap, [prog, mode], opts)
    if cp.returncode != 0:
        raise Failure('record %s %s failed (%s): %s' % (os.path.basename(prog), mode,
                                                        describe_status(cp.returncode),
                                                        cp.err.strip()))
    return cap


def run_json(cmd, what):
    cp = run(cmd)
    if cp.returncode != 0:
        raise Failure('%s failed (%s): %s' % (what, describe_status(cp.returncode),
                                              cp.err.strip()))
    try:
        return json.loads(cp.out)
    except ValueError as e:
        raise Failure('%s: not JSON (%s): %s' % (what, e, cp.out[:500])) from e


def run_text(cmd, what):
    cp = run(cmd)
    if cp.returncode != 0:
        raise Failure('%s failed (%s): %s' % (what, describe_status(cp.returncode),
                                              cp.err.strip()))
    return cp.out


# function -> (old calls, new calls, status)
CALLS = {
    'main': (1, 1, None),
    'work': (1000, 2000, 'changed'),
    'steady': (10, 10, None),
    'only_old': (3, 0, 'removed'),
    'only_new': (0, 4, 'added'),
    'alloc_some': (1, 1, None),
    'alloc_steady': (1, 1, None),
}


def check_functions(ck, data, tag, obj=None, old_obj=None):
    fns = {}
    for f in data['functions']:
        ck.check(f['name'] not in fns, '%s: %s listed once' % (tag, f['name']))
        fns[f['name']] = f
    ck.eq(sorted(fns), sorted(CALLS), '%s: the functions' % tag)
    for name, (o, n, status) in CALLS.items():
        f = fns.get(name)
        if not f:
            continue
        c = f['calls']
        ck.eq((c['old'], c['new'], c['delta']), (o, n, n - o), '%s: %s calls old, new, delta' %
              (tag, name))
        if status:
            ck.eq(f['status'], status, '%s: %s status' % (tag, name))
        else:
            ck.check(f['status'] in ('same', 'changed'),
                     '%s: %s matched (status %s)' % (tag, name, f['status']))
        if obj:
            want = (old_obj or obj) if status == 'removed' else obj
            ck.eq(f['object'], want, '%s: %s object' % (tag, name))
        for k in ('self_ns', 'total_ns'):
            ck.eq(f[k]['delta'], f[k]['new'] - f[k]['old'], '%s: %s %s delta' % (tag, name, k))
        if status == 'added':
            ck.eq((f['calls']['relative'], f['self_ns']['old'], f['total_ns']['old']),
                  (None, 0, 0), '%s: %s added: no old figures' % (tag, name))
        if status == 'removed':
            ck.eq((f['calls']['relative'], f['self_ns']['new'], f['total_ns']['new']),
                  (-1, 0, 0), '%s: %s removed: no new figures' % (tag, name))
    w = fns.get('work')
    if w:
        ck.eq(w['calls']['relative'], 1, '%s: work calls relative change' % tag)
    ck.eq(data['summary']['added'], 1, '%s: one function added' % tag)
    ck.eq(data['summary']['removed'], 1, '%s: one function removed' % tag)
    ck.eq(data['summary']['same'] + data['summary']['changed'], 5,
          '%s: five functions in both' % tag)


def text_rows(out):
    """The function rows of the text: name -> the fields before it."""
    rows = {}
    for line in out.splitlines():
        if not line.strip() or line.startswith('#'):
            continue
        f = line.split()
        # 4 call columns, 2 x (old, unit, new, unit, change, unit, %) = 14
        if len(f) < 20:
            raise Failure("text: a short row: %r" % line)
        name = f[18]
        rows[name] = f
    return rows


def test_profile(ck, cyg, example, args):
    old = record(cyg, example, 'old', 'old.cyg')
    new = record(cyg, example, 'new', 'new.cyg')
    obj = os.path.basename(example)
    data = run_json([cyg.exe, 'diff', '--format=json', old, new], 'diff --format=json')
    check_functions(ck, data, 'json', obj)
    ck.eq(data['old']['file'], old, 'json: old file')
    ck.eq(data['new']['file'], new, 'json: new file')
    ck.eq(data['sort'], 'self', 'json: default sort')

    out = run_text([cyg.exe, 'diff', old, new], 'diff')
    rows = text_rows(out)
    ck.eq(sorted(rows), sorted(CALLS), 'text: the function rows')
    for name, (o, n, status) in CALLS.items():
        r = rows.get(name)
        if not r:
            continue
        ck.eq(r[0:3], [str(o), str(n), '%+d' % (n - o) if n != o else '0'],
              'text: %s calls old, new, change' % name)
        ck.eq(r[19], '[%s]' % obj, 'text: %s object' % name)
        tail = r[20] if len(r) > 20 else None
        want = '(%s)' % status if status in ('added', 'removed') else None
        ck.eq(tail, want, 'text: %s added/removed mark' % name)
    ck.eq(rows.get('work', [None] * 4)[3], '+100.0%', 'text: work calls +100.0%')
    ck.eq(rows.get('steady', [None] * 4)[3], '0.0%', 'text: steady calls 0.0%')
    ck.check('# functions: ' in out and ', 1 added, 1 removed;' in out,
             'text: the summary line says 1 added, 1 removed')

    # by calls change: work first (+1000), then only_new (+4), only_old (-3)
    data = run_json([cyg.exe, 'diff', '--format=json', '--sort', 'calls', old, new],
                    'diff --sort calls')
    ck.eq([f['name'] for f in data['functions']][:3], ['work', 'only_new', 'only_old'],
          '--sort calls: the first three functions')
    data = run_json([cyg.exe, 'diff', '--format=json', '--sort=name', old, new],
                    'diff --sort name')
    names = [f['name'] for f in data['functions']]
    ck.eq(names, sorted(names), '--sort name: functions by name')
    data = run_json([cyg.exe, 'diff', '--format=json', '--function', 'only_*', old, new],
                    'diff --function')
    ck.eq(sorted(f['name'] for f in data['functions']), ['only_new', 'only_old'],
          '-F only_*: the functions')
    out = run_text([cyg.exe, 'diff', '--function', 'work', old, new], 'diff --function work')
    ck.eq(sorted(text_rows(out)), ['work'], 'text --function work: the rows')
    # -F is --filter, as in every command: both captures read as recorded
    # with -F work (main is out of scope), -N hides work
    data = run_json([cyg.exe, 'diff', '--format=json', '-F', 'work', old, new], 'diff -F work')
    ck.eq(sorted((f['name'], f['calls']['old'], f['calls']['new']) for f in data['functions']),
          [('work', 1000, 2000)], 'diff -F work: only work, from both captures')
    data = run_json([cyg.exe, 'diff', '--format=json', '-N', 'work', old, new], 'diff -N work')
    ck.check('work' not in [f['name'] for f in data['functions']], 'diff -N work: no work')

    data = run_json([cyg.exe, 'diff', '--format=json', '--paths', old, new], 'diff --paths')
    paths = {tuple(p['path']): p for p in data['paths']}
    want = {('main',): (1, 1), ('main', 'work'): (1000, 2000), ('main', 'steady'): (10, 10),
            ('main', 'only_old'): (3, 0), ('main', 'only_new'): (0, 4),
            ('main', 'alloc_some'): (1, 1), ('main', 'alloc_steady'): (1, 1)}
    ck.eq(sorted(paths), sorted(want), '--paths: the paths')
    for p, (o, n) in want.items():
        if p in paths:
            ck.eq((paths[p]['calls']['old'], paths[p]['calls']['new']), (o, n),
                  '--paths: %s calls' % ';'.join(p))
    ck.eq(paths.get(('main', 'only_new'), {}).get('status'), 'added', '--paths: only_new added')
    ck.eq(paths.get(('main', 'only_old'), {}).get('status'), 'removed',
          '--paths: only_old removed')
    out = run_text([cyg.exe, 'diff', '--paths', old, new], 'diff --paths (text)')
    line = [x for x in out.splitlines() if x.endswith(' main;work')]
    ck.check(len(line) == 1 and line[0].split()[:3] == ['1000', '2000', '+1000'],
             'text --paths: main;work 1000 2000 +1000 (%r)' % line)

    # a capture against itself: nothing changes
    data = run_json([cyg.exe, 'diff', '--format=json', new, new], 'diff NEW NEW')
    ck.eq(data['summary'], {'same': 6, 'changed': 0, 'added': 0, 'removed': 0},
          'NEW against itself: all the same')


def test_builds(ck, cyg, example, args):
    other = os.path.abspath(args.other)
    for a, b, tag in ((other, example, 'O0 -> O2'), (example, other, 'O2 -> O0')):
        old = record(cyg, a, 'old', 'old.cyg')
        new = record(cyg, b, 'new', 'new.cyg')
        data = run_json([cyg.exe, 'diff', '--format=json', '--paths', old, new],
                        'diff %s' % tag)
        check_functions(ck, data, tag, os.path.basename(b), os.path.basename(a))
        removed = [f for f in data['functions'] if f['status'] == 'removed']
        ck.eq([f['object'] for f in removed], [os.path.basename(a)],
              '%s: a removed function names OLD\'s object' % tag)
        work = [p for p in data['paths'] if p['path'] == ['main', 'work']]
        ck.check(len(work) == 1 and work[0]['calls']['delta'] == 1000,
                 '%s: the path main;work matches, +1000 calls' % tag)


def check_memory(ck, data, tag):
    fns = {f['name']: f for f in data['functions']}
    a = fns.get('alloc_some')
    ck.check(a is not None, '%s: alloc_some listed' % tag)
    if a:
        ck.eq(a['status'], 'changed', '%s: alloc_some changed' % tag)
        ck.eq((a['bytes']['old'], a['bytes']['new'], a['bytes']['delta']), (6400, 12800, 6400),
              '%s: alloc_some bytes' % tag)
        ck.eq((a['self_bytes']['old'], a['self_bytes']['new']), (6400, 12800),
              '%s: alloc_some self bytes' % tag)
        ck.eq((a['allocations']['old'], a['allocations']['new'], a['allocations']['delta']),
              (100, 200, 100), '%s: alloc_some allocations' % tag)
        ck.eq(a['bytes']['relative'], 1, '%s: alloc_some bytes +100%%' % tag)
        ck.eq((a['leaked_bytes']['old'], a['leaked_bytes']['new']), (0, 0),
              '%s: alloc_some leaks nothing' % tag)
        ck.eq((a['peak_bytes']['old'], a['peak_bytes']['new']), (6400, 12800),
              '%s: alloc_some peak bytes' % tag)
    s = fns.get('alloc_steady')
    ck.check(s is not None, '%s: alloc_steady listed' % tag)
    if s:
        ck.eq((s['status'], s['bytes']['old'], s['bytes']['new'], s['bytes']['delta']),
              ('same', 160, 160, 0), '%s: alloc_steady unchanged' % tag)
    stacks = {tuple(x['stack']): x for x in data['stacks']}
    x = stacks.get(('main', 'alloc_some'))
    ck.check(x is not None, '%s: the stack main;alloc_some matched (%s)' % (tag, sorted(stacks)))
    if x:
        ck.eq((x['status'], x['bytes']['old'], x['bytes']['new'], x['allocations']['delta']),
              ('changed', 6400, 12800, 100), '%s: main;alloc_some' % tag)
    ck.eq((data['old']['allocated_bytes'], data['new']['allocated_bytes']),
          (6560, 12960), '%s: allocated bytes in all' % tag)
    ck.eq(data['summary']['added'] + data['summary']['removed'], 0,
          '%s: no function added or removed' % tag)


def test_memory(ck, cyg, example, args):
    other = os.path.abspath(args.other)
    old = record(cyg, example, 'old', 'mold.cyg', ['--memory'])
    new = record(cyg, example, 'new', 'mnew.cyg', ['--memory'])
    data = run_json([cyg.exe, 'memory', '--diff', old, new, '--format=json'], 'memory --diff')
    check_memory(ck, data, 'O2')
    out = run_text([cyg.exe, 'memory', '--diff', old, new], 'memory --diff (text)')
    line = [x.split() for x in out.splitlines() if x.endswith(' alloc_some')]
    ck.check(line and line[0][:4] == ['6400', '12800', '+6400', '+100.0%'],
             'text: alloc_some 6400 12800 +6400 +100.0%% (%r)' % line[:1])
    line = [x.split() for x in out.splitlines() if x.endswith(' main;alloc_some')]
    ck.check(line and line[0][:3] == ['6400', '12800', '+6400'],
             'text: the stack main;alloc_some 6400 12800 +6400 (%r)' % line[:1])

    o0 = record(cyg, other, 'old', 'mold0.cyg', ['--memory'])
    data = run_json([cyg.exe, 'memory', '--diff', o0, new, '--format=json'],
                    'memory --diff across builds')
    check_memory(ck, data, 'O0 -> O2')

    # --diff T1 T2 FILE keeps comparing two times of one capture
    data = run_json([cyg.exe, 'memory', '--format=json', '--diff', '0', '100s', new],
                    'memory --diff 0 100s FILE')
    ck.eq((data['totals']['diff_t1_ns'], data['totals']['diff_t2_ns']) if 'totals' in data
          else (data.get('diff_t1_ns'), data.get('diff_t2_ns')), (0, 100 * 10**9),
          '--diff T1 T2 FILE: still two times')


def test_memory_filters(ck, cyg, example, args):
    cap = record(cyg, example, 'old', 'mf.cyg', ['--memory'])

    def mem(opts):
        d = run_json([cyg.exe, 'memory', '--format=json'] + opts + [cap], 'memory ' + ' '.join(opts))
        t = d['totals']
        fns = dict((f['name'], f['self_bytes']) for f in d['functions'] if f['self_bytes'])
        return (t['allocations'], t['allocated_bytes'], t['frees'], t['untracked_frees']), fns

    cases = [
        ([], (105, 6560, 105, 0), {'alloc_some': 6400, 'alloc_steady': 160}),
        (['-F', 'alloc_some'], (100, 6400, 100, 0), {'alloc_some': 6400}),
        (['-F', 'alloc_steady'], (5, 160, 5, 0), {'alloc_steady': 160}),
        (['-N', 'alloc_some'], (105, 6560, 105, 0), {'main': 6400, 'alloc_steady': 160}),
        (['-D', '1'], (105, 6560, 105, 0), {'main': 6560}),
        (['--time-range', '1000s,'], (0, 0, 0, 0), {}),
    ]
    for opts, totals, fns in cases:
        got_t, got_f = mem(opts)
        ck.eq(got_t, totals, 'memory %s: allocations, bytes, frees, untracked frees' % ' '.join(opts))
        ck.eq(got_f, fns, 'memory %s: self bytes per function' % ' '.join(opts))


def test_errors(ck, cyg, example, args):
    d = cyg.workdir
    good = record(cyg, example, 'old', 'good.cyg')
    mem = record(cyg, example, 'new', 'mem.cyg', ['--memory'])
    missing = os.path.join(d, 'missing.cyg')
    rnd = os.path.join(d, 'random.cyg')
    with open(rnd, 'wb') as f:
        f.write(random.Random(11).randbytes(65536))
    empty = os.path.join(d, 'empty.cyg')
    open(empty, 'wb').close()
    for bad, what in ((missing, 'missing'), (rnd, 'random bytes'), (empty, 'empty')):
        for args_, side in (([bad, good], 'OLD'), ([good, bad], 'NEW')):
            for fmt in ([], ['--format=json']):
                cp = run([cyg.exe, 'diff'] + fmt + args_)
                expect_error(ck, cp, 'diff with a %s %s %s' % (what, side, ' '.join(fmt)), 1)
                ck.eq(cp.out, '', 'diff with a %s %s: nothing on stdout' % (what, side))
        cp = run([cyg.exe, 'memory', '--diff', bad, mem])
        expect_error(ck, cp, 'memory --diff with a %s OLD' % what, 1)
        cp = run([cyg.exe, 'memory', '--diff', mem, bad])
        expect_error(ck, cp, 'memory --diff with a %s NEW' % what, 1)
    cp = run([cyg.exe, 'memory', '--diff', good, mem])
    expect_error(ck, cp, 'memory --diff OLD without memory events', 1)
    for a in ([], [good], [good, good, good]):
        cp = run([cyg.exe, 'diff'] + a)
        expect_error(ck, cp, 'diff with %d captures' % len(a), 2)
    expect_error(ck, run([cyg.exe, 'diff', '--sort', 'bogus', good, good]), 'diff --sort bogus', 2)
    expect_error(ck, run([cyg.exe, 'diff', '--format=xml', good, good]), 'diff --format=xml', 2)
    expect_error(ck, run([cyg.exe, 'diff', '--bogus', good, good]), 'diff --bogus', 2)
    expect_error(ck, run([cyg.exe, 'memory', '--diff', mem]), 'memory --diff with one capture', 2)
    expect_error(ck, run([cyg.exe, 'memory', '--diff', mem, mem, mem]),
                 'memory --diff OLD NEW FILE', 2)
    expect_error(ck, run([cyg.exe, 'memory', '--leaks', '--diff', mem, mem]),
                 'memory --diff OLD NEW --leaks', 2)
    cp = run([cyg.exe, 'diff', '--help'])
    ck.check(cp.returncode == 0 and 'usage: cygprof diff' in cp.out, 'diff --help')


def test_ci(ck, cyg, example, args):
    import random
    prog = os.path.abspath(args.cidiff)
    d = cyg.workdir

    def rec(name, pct, extra='0'):
        cap = os.path.join(d, name)
        cp = cyg.record(cap, [prog, pct, extra, '10000000'])
        if cp.returncode != 0:
            raise Failure('record %s: %s' % (name, cp.err.strip()))
        return cap
    old, new = [], []
    for i in range(6):  # interleaved: the machine's load drifts over both
        old.append(rec('o%d.data' % i, '100'))
        if i < 3:
            new.append(rec('n%d.data' % i, '200'))
    more = rec('x.data', '100', '3')

    def diff(o, n, fmt='json'):
        cp = run([cyg.exe, 'diff', '--format=' + fmt, '--fail-above', '10', ','.join(o),
                  ','.join(n)])
        if fmt != 'json':
            return cp.returncode, cp.out
        try:
            return cp.returncode, json.loads(cp.out)
        except ValueError:
            raise Failure('diff --format=json: not JSON (exit %d): %s' % (cp.returncode, cp.err))
    rc, j = diff(old[:3], new)
    v = {f['name']: f['verdict'] for f in j['functions']}
    # steady did not change: never slower (on a loaded machine its noise may
    # rarely pass for faster, which fails nothing)
    ck.check(rc == 3 and v.get('hot') == 'slower' and v.get('steady') in ('same', 'faster'),
          'hot 2x slower, 3 vs 3: exit 3, hot slower, steady not slower (%s %s)' %
          (v, 
          dict((f['name'], (f['self_ns']['old'], f['self_ns']['new'])) for f in j['functions'])))
    # main's total holds hot's: it may rightly get worse too; nothing else
    ck.check(set(f['name'] for f in j['functions'] if f['verdict'] == 'slower') <= {'hot', 'main'},
             'only hot (and main, its caller) judged slower')
    ck.eq(j.get('failed'), sum(1 for f in j['functions'] if f['verdict'] == 'slower'),
          'JSON: failed counts the slower functions')
    hot = [f for f in j['functions'] if f['name'] == 'hot']
    if hot:
        ck.check(hot[0]['self_ns']['worse'] and hot[0]['self_ns']['change'] > 0.15,
                 'JSON: hot self worse, change %.2f' % hot[0]['self_ns']['change'])
        ck.eq(hot[0]['calls'], {'old': [20, 20, 20], 'new': [20, 20, 20]}, 'JSON: hot calls')
    rc, out = diff(old[:3], new, 'text')
    rows = [ln for ln in out.splitlines() if not ln.startswith('#')]
    ck.check(rc == 3 and any(' hot ' in r for r in rows) and
             all(r.startswith('slower') and (' hot ' in r or ' main ' in r) for r in rows),
             'text: only the failing functions are listed (%r)' % rows)
    rnd = random.Random(7)
    alarms = []
    for t in range(20):
        pool = rnd.sample(old, 6)
        rc, j = diff(pool[:3], pool[3:])
        if rc != 0:
            alarms.append([(f['name'], f['verdict']) for f in j['functions']
                           if f['verdict'] != 'same'])
    ck.eq(alarms, [], '20 comparisons of OLD runs against OLD runs: no alarm')
    # 3 more calls of extra() (as argv[0] or the locale change calls): a
    # change of calls, shown, but failing only a gate that asks for calls
    more3 = [more, rec('x1.data', '100', '3'), rec('x2.data', '100', '3')]
    rc, j = diff(old[:3], more3)
    v = {f['name']: f['verdict'] for f in j['functions']}
    ck.eq((rc, v.get('extra'), j.get('failed')), (0, 'calls changed', 0),
          '3 more calls of extra: calls changed, the time gate passes')
    cp = run([cyg.exe, 'diff', '--format=json', '--fail-above', '10', '--fail-calls',
              ','.join(old[:3]), ','.join(more3)])
    j = json.loads(cp.out) if cp.returncode in (0, 3) else {}
    ck.eq((cp.returncode, j.get('failed'), j.get('fail_calls')), (3, 1, True),
          '--fail-calls: the change of calls fails, exit 3')
    cp = run([cyg.exe, 'diff', '--fail-calls', old[0], new[0]])
    expect_error(ck, cp, 'diff --fail-calls without --fail-above', 2)
    # one run a side: the noise is unknown, said on stderr, null in JSON
    cp = run([cyg.exe, 'diff', '--format=json', '--fail-above', '10', old[0], new[0]])
    ck.check('noise unknown' in cp.err and len(cp.err.strip().splitlines()) == 1,
             'one run a side: one line on stderr says the noise is unknown (%r)' % cp.err)
    j = json.loads(cp.out) if cp.returncode in (0, 3) else {'functions': []}
    ck.check(j.get('noise_known') is False and j['functions'] and
             all(f['self_ns']['noise'] is None and f['total_ns']['noise'] is None
                 for f in j['functions']), 'JSON: noise null with one run a side')
    cp = run([cyg.exe, 'diff', old[0], new[0] + ',' + new[1]])
    ck.check('noise unknown' in cp.err and
             any('noise unknown' in ln and ' hot ' in ln for ln in cp.out.splitlines()),
             'text: "noise unknown" in the rows, not 0.0%% (%r)' % cp.out[:300])
    rc, j = diff(old[:3], new)
    ck.check(j.get('noise_known') is True and 'noise unknown' not in
             run([cyg.exe, 'diff', '--fail-above', '10', ','.join(old[:3]), ','.join(new)]).err,
             '3 runs a side: the noise is known')
    cp = run([cyg.exe, 'diff', '--fail-above', 'x', old[0], new[0]])
    expect_error(ck, cp, 'diff --fail-above x', 2)


def test_gate_small(ck, cyg, example, args):
    """hot 0.1% of the run in OLD, 17 times slower (1.7%) in NEW."""
    prog = os.path.abspath(args.cidiff)
    d = cyg.workdir

    def rec(name, pct):
        cap = os.path.join(d, name)
        cp = cyg.record(cap, [prog, pct, '0', '10000000'])
        if cp.returncode != 0:
            raise Failure('record %s: %s' % (name, cp.err.strip()))
        return cap
    old, new = [], []
    for i in range(3):  # interleaved: the machine's load drifts over both
        old.append(rec('o%d.data' % i, '0.1'))
        new.append(rec('n%d.data' % i, '1.7'))
    cp = run([cyg.exe, 'diff', '--format=json', '--fail-above', '10', ','.join(old),
              ','.join(new)])
    j = json.loads(cp.out) if cp.returncode in (0, 3) else {'functions': []}
    hot = [f for f in j['functions'] if f['name'] == 'hot']
    ck.check(cp.returncode == 3 and hot and hot[0]['verdict'] == 'slower' and
             hot[0]['self_ns']['judged'], 'hot 0.1%% -> 1.7%%: judged, slower, exit 3 (%s %s)' %
             (cp.returncode, hot and (hot[0]['verdict'], hot[0]['self_ns']['old'],
                                      hot[0]['self_ns']['new'])))
    if hot:
        ck.eq(hot[0]['calls'], {'old': [20, 20, 20], 'new': [20, 20, 20]}, 'JSON: hot calls')
    ck.check(set(f['name'] for f in j['functions'] if f['verdict'] == 'slower') <= {'hot', 'main'},
             'only hot (and main, its caller) slower')
    cp = run([cyg.exe, 'diff', '--fail-above', '10', ','.join(old), ','.join(new)])
    rows = [ln for ln in cp.out.splitlines() if not ln.startswith('#')]
    ck.check(cp.returncode == 3 and any(r.startswith('slower') and r.split()[-1] == 'hot'
                                        or ' hot ' in r for r in rows),
             'text: hot named (%r)' % rows)


TESTS = {
    'diff-profile': test_profile,
    'diff-builds': test_builds,
    'diff-memory': test_memory,
    'diff-errors': test_errors,
    'diff-memory-filters': test_memory_filters,
    'diff-ci': test_ci,
    'diff-gate-small': test_gate_small,
}


def main():
    def extra(ap):
        ap.add_argument('--other', required=True, help='diff-prog built at -O0')
        ap.add_argument('--cidiff', help='examples/cidiff.c built at -O2')
    return cygtest.driver_main(TESTS, 'diff', __doc__, extra=extra)


if __name__ == '__main__':
    sys.exit(main())
