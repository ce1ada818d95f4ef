#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Names from the traced program in the readers' output.

Usage:
  names.py --cygprof CYGPROF --example NAMES_PROG --test NAME [-v] [--keep]

NAMES_PROG is tests/names/names-prog.c, copied to a file named
"na<LF>me<ESC>x" whose functions `work` and `worker` are renamed (objcopy
--redefine-sym) to "wo<LF>rk" and "wor<TAB>ker<ESC>[1m", run with the
arguments "arg<TAB>one", "two<LF>x", "esc<ESC>[31m" and "bad<0xff>"; its
second thread names itself "w<TAB>k<ESC>z".  Recorded with --timeline.

Tests:
  names-text  info, report (flat, call graph, --tree, --threads),
              replay, diff: every line of the output is one of the lines
              expected, each name escaped as cygprof(1) says (\\n, \\t,
              \\x1b, \\xff): the command, its process row, both thread
              names, both functions; no output holds a raw ESC, and no
              line is split; record of a missing program whose name holds
              a newline fails with one line
  names-json  info --format=json parses and holds the exact strings: the
              exe path, the command line (bytes that are not UTF-8 as
              U+FFFD), both thread names; report --format=json the exact
              function names
Exits 77 without objcopy (binutils).
"""

import json
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402  (tests/lib: the helpers of every driver)
from cygtest import Failure  # noqa: E402

EXE = 'na\nme\x1bx'
ARGS = ['arg\tone', 'two\nx', 'esc\x1b[31m', 'bad\udcff']  # \udcff: the byte 0xff
THREAD = 'w\tk\x1bz'
WORK, WORKER = 'wo\nrk', 'wor\tker\x1b[1m'


def esc(s):
    """The text form cygprof(1) documents (enough for these names)."""
    out = ''
    for ch in s:
        if ch == '\n':
            out += '\\n'
        elif ch == '\t':
            out += '\\t'
        elif ch == '\\':
            out += '\\\\'
        elif ord(ch) < 0x20 or ord(ch) == 0x7f:
            out += '\\x%02x' % ord(ch)
        elif 0xdc80 <= ord(ch) <= 0xdcff:
            out += '\\x%02x' % (ord(ch) - 0xdc00)
        else:
            out += ch
    return out


def run_raw(cmd, cwd):
    """cmd (str arguments, bytes that are not UTF-8 as surrogates) ->
    (status, stdout, stderr) as str, with the same surrogates."""
    if cygtest.VERBOSE:
        print('$ ' + ' '.join(ascii(c) for c in cmd))
    cp = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL, timeout=cygtest.TIMEOUT)
    return (cp.returncode, cp.stdout.decode('utf-8', 'surrogateescape'),
            cp.stderr.decode('utf-8', 'surrogateescape'))


def prepare(cyg, example):
    """The renamed copy of the program, recorded: the capture's path."""
    objcopy = shutil.which('objcopy')
    if not objcopy:
        raise SystemExit(cygtest.SKIP)
    prog = os.path.join(cyg.workdir, EXE)
    rc, _, err = run_raw([objcopy, '--redefine-sym', 'work=' + WORK,
                          '--redefine-sym', 'worker=' + WORKER, example, prog], cyg.workdir)
    if rc:
        raise Failure('objcopy failed: %s' % ascii(err))
    cap = os.path.join(cyg.workdir, 'cap.data')
    rc, out, err = run_raw([cyg.exe, 'record', '--timeline', '-o', cap, '--', prog] + ARGS,
                           cyg.workdir)
    if rc:
        raise Failure('record failed (%d): %s' % (rc, ascii(err)))
    if 'names-prog: work=5' not in out:
        raise Failure('the program ran: %s' % ascii(out))
    return prog, cap


def lines_of(out):
    """The lines of an output, split at newlines only (str.splitlines()
    also splits at \\x1c-\\x1e, \\x85...)."""
    return out.split('\n')[:-1] if out.endswith('\n') else out.split('\n')


def check_clean(ck, what, out):
    ck.check('\x1b' not in out, '%s: no raw ESC in the output' % what)
    ck.check(not any(0xdc80 <= ord(c) <= 0xdcff for c in out),
             '%s: no byte that is not UTF-8 in the output' % what)


def test_text(ck, cyg, example, args):
    prog, cap = prepare(cyg, example)
    command = ' '.join(esc(x) for x in [prog] + ARGS)

    rc, out, err = run_raw([cyg.exe, 'info', cap], cyg.workdir)
    ck.eq(rc, 0, 'info: exit status')
    check_clean(ck, 'info', out)
    lines = lines_of(out)
    ck.eq([x for x in lines if x.startswith('command ')], ['command       : ' + command],
          'info: the command line, escaped, on one line')
    rows = [x for x in lines if x.endswith('  ' + command)]
    ck.check(len(rows) == 1 and re.match(r'^\s+\d+\s+\d+\s+exit 0\s+', rows[0]),
             'info: the process row ends with the escaped command: %s' % ascii(rows))
    names = [x.split()[2] for x in lines if re.match(r'^\s+\d+\s+\d+\s+\S+\s+\d+\s+\d+\s', x)]
    ck.eq(sorted(names), sorted([esc(EXE), esc(THREAD)]), 'info: the thread names, escaped')
    ck.eq(len(lines), len([x for x in lines if '\t' not in x]), 'info: no raw tab')

    rc, out, err = run_raw([cyg.exe, 'report', cap], cyg.workdir)
    ck.eq(rc, 0, 'report: exit status')
    check_clean(ck, 'report', out)
    flat = [x.split()[-1] for x in lines_of(out) if re.match(r'^\s*[\d.]+\s+[\d.]+\s+[\d.]+\s+(?:ns|us|ms|s)\s', x)]
    ck.eq(sorted(flat), sorted(['main', esc(WORK), esc(WORKER)]),
          'report: the flat profile\'s names, escaped, one line each')
    graph = [x for x in lines_of(out) if re.match(r'^\[\d+\]', x)]
    ck.eq(sorted(re.sub(r'^\[\d+\].*?\d+\s+(\S+) \[\d+\]$', r'\1', x) for x in graph),
          sorted(['main', esc(WORK), esc(WORKER)]), 'report: the call graph\'s primary lines')

    rc, out, err = run_raw([cyg.exe, 'report', '--tree', '--min-percent', '0', cap], cyg.workdir)
    ck.eq(rc, 0, 'report --tree: exit status')
    check_clean(ck, 'report --tree', out)
    heads = [re.sub(r'^# calling-context tree: pid \d+ tid \d+ \((.*)\), \d+ call paths$', r'\1', x)
             for x in lines_of(out) if x.startswith('# calling-context tree:')]
    ck.eq(sorted(heads), sorted([esc(EXE), esc(THREAD)]), 'report --tree: the thread names')
    fns = [x.split(' : ', 1)[1].lstrip('|+- ') for x in lines_of(out) if ' : ' in x and
           not x.startswith('#')]
    ck.eq(sorted(fns), sorted(['main', esc(WORK), esc(WORKER), esc(WORK)]),
          'report --tree: every node on one line, escaped')

    rc, out, err = run_raw([cyg.exe, 'report', '--threads', cap], cyg.workdir)
    ck.eq(rc, 0, 'report --threads: exit status')
    heads = [re.sub(r'^==== pid \d+ tid \d+ \((.*)\) ====$', r'\1', x) for x in lines_of(out)
             if x.startswith('==== ')]
    ck.eq(sorted(heads), sorted([esc(EXE), esc(THREAD)]), 'report --threads: thread names')

    rc, out, err = run_raw([cyg.exe, 'replay', cap], cyg.workdir)
    ck.eq(rc, 0, 'replay: exit status')
    check_clean(ck, 'replay', out)
    lines = lines_of(out)
    ck.eq(lines[0], '# DURATION     TID     FUNCTION', 'replay: its header')
    calls = [cygtest.REPLAY_LINE.match(x) for x in lines[1:]]
    ck.check(all(calls), 'replay: every line is a call line: %s' %
             ascii([x for x, m in zip(lines[1:], calls) if not m]))
    rest = sorted(m.group(3).strip() for m in calls if m)
    want = sorted(['main() {', '} /* main */', '%s() {' % esc(WORKER),
                   '} /* %s */' % esc(WORKER)] + ['%s();' % esc(WORK)] * 5)
    ck.eq(rest, want, 'replay: the calls, escaped, one line each')

    rc, out, err = run_raw([cyg.exe, 'diff', cap, cap], cyg.workdir)
    ck.eq(rc, 0, 'diff: exit status')
    check_clean(ck, 'diff', out)
    ck.eq([x for x in lines_of(out) if x.startswith(('# OLD', '# NEW'))],
          ['# %s: %s (%s)' % (k, cap, command) for k in ('OLD', 'NEW')],
          'diff: the command lines, escaped')
    rows = [re.match(r'^\s*\d.*%\s+(\S+) \[(.*)\]$', x) for x in lines_of(out)
            if re.match(r'^\s*\d', x)]
    ck.eq(sorted(m.groups() for m in rows if m),
          sorted((f, esc(EXE)) for f in ('main', esc(WORK), esc(WORKER))),
          'diff: the functions and their object, escaped, one line each')

    rc, out, err = run_raw([cyg.exe, 'record', '-o', 'none.data', '--', './no\nsuch'],
                           cyg.workdir)
    ck.eq((rc, lines_of(err)), (127, ['cygprof: ./no\\nsuch: No such file or directory']),
          'record of a missing program: one line, escaped')


def test_json(ck, cyg, example, args):
    prog, cap = prepare(cyg, example)
    rc, out, err = run_raw([cyg.exe, 'info', '--format=json', cap], cyg.workdir)
    ck.eq(rc, 0, 'info --format=json: exit status')
    data = json.loads(out)
    # bytes that are not UTF-8 become U+FFFD (cygprof(1), JSON)
    command = ' '.join([prog] + ARGS).replace('\udcff', '\ufffd')
    ck.eq(data['meta']['command'], command, 'info --format=json: meta.command')
    ck.eq([p['command'] for p in data['processes']], [command], 'processes[].command')
    ck.eq([p['exe'] for p in data['processes']], [prog], 'processes[].exe')
    ck.eq(sorted(t['name'] for t in data['threads']), sorted([EXE, THREAD]), 'threads[].name')
    rc, out, err = run_raw([cyg.exe, 'report', '--format=json', cap], cyg.workdir)
    ck.eq(rc, 0, 'report --format=json: exit status')
    data = json.loads(out)
    ck.eq(sorted(f['name'] for f in data['functions']), sorted(['main', WORK, WORKER]),
          'report --format=json: the function names, exact')


TESTS = {'names-text': test_text, 'names-json': test_json}


def main():
    try:
        return cygtest.driver_main(TESTS, 'names', __doc__)
    except SystemExit as e:
        return e.code


if __name__ == '__main__':
    sys.exit(main())
