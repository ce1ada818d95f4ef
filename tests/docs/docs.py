#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""docs.py - the docs checked against the code, so that they cannot drift.

usage: docs.py --source SOURCE_ROOT --build BUILD_DIR --cygprof CYGPROF

Checks (one TAP line each):
  - the README's first command, run from this build, reports a function with
    at least 0.05 s of self time (real times, not the zeros of a toy run);
  - every command `cygprof --help` lists has its man page man/cygprof-CMD.1,
    prints with `cygprof help CMD` exactly its `cygprof CMD --help`,
    installed by man/meson.build, listed in cygprof(1), in docs/DESIGN.md's
    `cmds[]` list (cli/), and named in README.md as `cygprof CMD`;
  - every command has a paragraph of its own (.TP) in cygprof(1);
  - every command cli/cygprof.c pages names CYGPROF_PAGER and PAGER in the
    ENVIRONMENT section of its man page;
  - every man page in man/ is installed by man/meson.build and named in
    docs/DESIGN.md's paragraph on man/;
  - every place docs/capture-format.md states its own schema number
    ("(schema N)" in its title, "Schema N (this document)", "`N` for this
    document") says CYGPROF_CAPTURE_SCHEMA of
    include/cygprof/cygprof-capture.h;
  - every unit test the build registers (suite 'unit', from the build's
    meson-info/intro-tests.json) is listed in HACKING.md as `NAME`;
  - every folder of tests/ is described in tests/README.md (as `NAME/`),
    and every other test is named after its folder: its suite is the folder,
    its name the folder's name or starts with it and a dash.
(The databases capture/ opens are checked against docs/capture-format.md by
capture-dbs.py, the test docs-capture-dbs.)
Exit status 0 when every check passes.  Standard library only.
"""
import argparse
import json
import os
import re
import subprocess
import sys


def read(root, path):
    with open(os.path.join(root, path)) as f:
        return f.read()


def help_commands(cygprof):
    """The commands `cygprof --help` lists, in its order."""
    out = subprocess.run([cygprof, '--help'], stdout=subprocess.PIPE, check=True,
                         universal_newlines=True).stdout
    part = out.split('\ncommands:\n', 1)
    if len(part) != 2:
        raise SystemExit('Bail out! no "commands:" in cygprof --help')
    cmds = []
    for line in part[1].splitlines():
        m = re.match(r'  ([a-z][a-z-]*)\s', line)
        if not m:
            if cmds:
                break
            continue
        cmds.append(m.group(1))
    return cmds


def install_man_list(root):
    m = re.search(r'install_man\((.*?)\)', read(root, 'man/meson.build'), re.S)
    return re.findall(r"'([^']+)'", m.group(1)) if m else []


def design_paragraph(design, folder):
    """The text of DESIGN.md's paragraph that starts **folder/**."""
    m = re.search(r'^\*\*' + re.escape(folder) + r'\*\*(.*?)(?=\n\n)', design, re.S | re.M)
    return m.group(1) if m else ''


def unroff(text):
    return text.replace('\\-', '-')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--source', required=True)
    ap.add_argument('--build', required=True)
    ap.add_argument('--cygprof', required=True)
    a = ap.parse_args()
    root = a.source
    checks = []

    def check(ok, what):
        checks.append((bool(ok), what))

    # ---- commands and man pages
    cmds = help_commands(a.cygprof)
    check(len(cmds) >= 10, 'cygprof --help lists its commands (%s)' % ' '.join(cmds))
    installed = install_man_list(root)
    pages = sorted(f for f in os.listdir(os.path.join(root, 'man')) if f.endswith(('.1', '.3')))
    main_page = unroff(read(root, 'man/cygprof.1'))
    design = read(root, 'docs/DESIGN.md')
    readme = read(root, 'README.md')

    # ---- the README's first command: its record and report, run from this
    # build, show real (non-zero) times
    first = re.search(r'```sh\n(.*?)\n```', readme, re.S)
    steps = re.findall(r'build/cli/cygprof (record|report) ([^&]*?)(?: &&|$)',
                       first.group(1) if first else '')
    check([x[0] for x in steps] == ['record', 'report'],
          "README's first command records then reports (%s)" % steps)
    if len(steps) == 2:
        import shlex
        import tempfile
        with tempfile.TemporaryDirectory(prefix='cygprof-docs-') as tmp:
            def argv(rest):
                return [os.path.abspath(a.cygprof)] + [
                    os.path.join(os.path.abspath(a.build), w[len('build/'):])
                                      if w.startswith('build/') else w
                                      for w in shlex.split(rest)]
            r1 = subprocess.run([argv(steps[0][1])[0], 'record', '-q'] + argv(steps[0][1])[1:],
                                cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            r2 = subprocess.run([argv(steps[1][1])[0], 'report'] + argv(steps[1][1])[1:],
                                cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                universal_newlines=True)
            rows = [ln.split() for ln in r2.stdout.split('Call graph', 1)[0].splitlines()]
            secs = [float(w[2]) for w in rows if len(w) >= 7 and re.match(r'^[\d.]+$', w[0])]
            check(r1.returncode == 0 and r2.returncode == 0 and secs and max(secs) >= 0.05,
                  "README's first command: its report shows real times (self seconds %s)" %
                  secs[:3])
    cli = design_paragraph(design, 'cli/')
    m = re.search(r'`cmds\[\]` table \(([^)]*)\)', cli)
    design_cmds = re.findall(r'`([a-z-]+)`', m.group(1)) if m else []
    for c in cmds:
        page = 'cygprof-%s.1' % c
        check(page in pages, '%s: its man page man/%s' % (c, page))
        check(page in installed, '%s: man/meson.build installs %s' % (c, page))
        check(re.search(r'^\.BR cygprof-%s \(1\)' % re.escape(c), main_page, re.M),
              '%s: cygprof(1) refers to cygprof-%s(1)' % (c, c))
        check(c in design_cmds, '%s: docs/DESIGN.md lists it in the cmds[] table of cli/ (%s)' %
              (c, ' '.join(design_cmds)))
        check(re.search(r'\bcygprof %s\b' % re.escape(c), readme),
              '%s: README.md names `cygprof %s`' % (c, c))
        h1 = subprocess.run([a.cygprof, 'help', c], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
        h2 = subprocess.run([a.cygprof, c, '--help'], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)
        check(h1.returncode == h2.returncode == 0 and h1.stdout == h2.stdout and h1.stdout,
              '%s: `cygprof help %s` prints `cygprof %s --help` (exit %d, %d)' %
              (c, c, c, h1.returncode, h2.returncode))
    # the commands cli/cygprof.c pages (cmds[]'s last field 1) say so in
    # their ENVIRONMENT section, and no page says "no environment variables"
    paged = re.findall(r'^\s*\{"([a-z-]+)", cmd_\w+, "[^"]*", 1\}',
                       read(root, 'cli/cygprof.c'), re.M)
    check(len(paged) >= 5, 'cli/cygprof.c pages commands (%s)' % ' '.join(paged))
    for c in paged:
        page = read(root, 'man/cygprof-%s.1' % c)
        env = page.split('.SH ENVIRONMENT', 1)[1].split('.SH ', 1)[0] if \
            '.SH ENVIRONMENT' in page else ''
        check('CYGPROF_PAGER' in env and 'PAGER' in env.replace('CYGPROF_PAGER', ''),
              '%s: pages, and cygprof-%s(1)\'s ENVIRONMENT names CYGPROF_PAGER and PAGER' %
              (c, c))
        check('no environment variables' not in unroff(page),
              '%s: cygprof-%s(1) does not say it uses no environment variables' % (c, c))
    # each command its own paragraph in cygprof(1): a .TP before it, or it
    # runs into the paragraph above
    top_page = read(root, 'man/cygprof.1')
    for c in cmds:
        check(re.search(r'^\.TP\n\.B %s\n' % re.escape(c.replace('-', '\\-')), top_page, re.M),
              '%s: cygprof(1) starts its paragraph with .TP' % c)
    check(sorted(design_cmds) == sorted(cmds),
          'docs/DESIGN.md\'s cmds[] list has no other command (%s)' %
          ' '.join(sorted(set(design_cmds) - set(cmds))))
    man_par = design_paragraph(design, 'man/')
    for p in pages:
        check(p in installed, 'man/%s: man/meson.build installs it' % p)
        check('`%s(%s)`' % (p[:-2], p[-1]) in man_par,
              'man/%s: docs/DESIGN.md\'s paragraph on man/ names `%s(%s)`' % (p, p[:-2], p[-1]))
    check(set(installed) <= set(pages), 'man/meson.build installs no page man/ lacks (%s)' %
          ' '.join(sorted(set(installed) - set(pages))))

    # ---- the folders: each has its paragraph in DESIGN.md and its row in HACKING.md
    hacking = read(root, 'HACKING.md')
    tops = sorted(d for d in os.listdir(root)
                  if not d.startswith('.') and os.path.isdir(os.path.join(root, d)) and
                  (os.path.exists(os.path.join(root, d, 'meson.build')) or
                   os.path.exists(os.path.join(root, d, 'README.md')) or
                   d in ('docs', 'tools', 'html', 'bench', 'include')))
    for d in tops:
        check(d == 'include' or design_paragraph(design, d + '/'),
              '%s/: docs/DESIGN.md has its paragraph' % d)
        check(re.search(r'^\| `%s/` ' % re.escape(d), hacking, re.M),
              '%s/: HACKING.md\'s table of folders has its row' % d)

    # ---- the capture's schema number
    m = re.search(r'#define\s+CYGPROF_CAPTURE_SCHEMA\s+(\d+)',
                  read(root, 'include/cygprof/cygprof-capture.h'))
    schema = m.group(1) if m else None
    check(schema, 'include/cygprof/cygprof-capture.h defines CYGPROF_CAPTURE_SCHEMA')
    fmt = read(root, 'docs/capture-format.md')
    stated = []
    for n, line in enumerate(fmt.splitlines(), 1):
        for pat in (r'^#.*\(schema (\d+)\)', r'[Ss]chema (\d+) \(this document\)',
                    r'`(\d+)` for this document'):
            stated += [(n, x) for x in re.findall(pat, line)]
    check(stated, 'docs/capture-format.md states its schema number')
    for n, x in stated:
        check(x == schema, 'docs/capture-format.md line %d says schema %s: the code\'s is %s' %
              (n, x, schema))

    # ---- tests
    with open(os.path.join(a.build, 'meson-info', 'intro-tests.json')) as f:
        tests = json.load(f)
    tests_readme = read(root, 'tests/README.md')
    unit = sorted(t['name'] for t in tests if any(s.endswith(':unit') for s in t['suite']))
    check(unit, 'the build registers unit tests')
    for name in unit:
        check('`%s`' % name in hacking, 'unit test %s: HACKING.md lists it' % name)
    folders = sorted(d for d in os.listdir(os.path.join(root, 'tests'))
                     if os.path.isdir(os.path.join(root, 'tests', d)) and
                     set(os.listdir(os.path.join(root, 'tests', d))) - {'__pycache__'})
    for d in folders:
        check('`%s/`' % d in tests_readme, 'tests/%s/: tests/README.md describes it' % d)
    for t in tests:
        suites = [s.split(':', 1)[1] for s in t['suite']]
        if 'unit' in suites:
            continue
        ok = len(suites) == 1 and suites[0] in folders and \
            os.path.exists(os.path.join(root, 'tests', suites[0], 'meson.build')) and \
            (t['name'] == suites[0] or t['name'].startswith(suites[0] + '-'))
        check(ok, 'test %s: its suite is its folder of tests/, its name starts with it (%s)' %
              (t['name'], ' '.join(suites)))

    print('1..%d' % len(checks))
    for i, (ok, what) in enumerate(checks, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == '__main__':
    sys.exit(main())
