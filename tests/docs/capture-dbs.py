#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""capture-dbs.py - the capture format document and the capture library
name the same databases.

usage: capture-dbs.py SOURCE_ROOT

Reads the databases the code opens from capture/capture-private.h (the
DB_* enum, in order, and DB_FIRST_OPTIONAL, CAPTURE_MAXDBS) and
capture/capture-common.c (capture_db_names[]), and checks
docs/capture-format.md against them: the "Named databases" table (the same
names in the same order), the number in words and `maxdbs` of its first
sentence, the databases it says were added later (the optional ones), the
order of the seal's `counts` value, and one "### NAME" section per
database; and the list in docs/DESIGN.md.  Prints one line per check (TAP); exit status 0 when all agree.
Standard library only.
"""
import re
import sys

WORDS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine',
         'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen']


def strip_c_comments(text):
    return re.sub(r'/\*.*?\*/', '', text, flags=re.S)


def code_dbs(root):
    """(names in enum order, first optional index, maxdbs) from capture/."""
    with open(root + '/capture/capture-private.h') as f:
        priv = strip_c_comments(f.read())
    with open(root + '/capture/capture-common.c') as f:
        common = strip_c_comments(f.read())
    m = re.search(r'enum\s*\{\s*(DB_META\b.*?)\bDB_COUNT\b', priv, re.S)
    if not m:
        raise SystemExit('Bail out! no DB_* enum in capture/capture-private.h')
    enum = [e.strip() for e in m.group(1).split(',') if e.strip()]
    m = re.search(r'capture_db_names\s*\[\s*DB_COUNT\s*\]\s*=\s*\{(.*?)\};', common, re.S)
    if not m:
        raise SystemExit('Bail out! no capture_db_names[] in capture/capture-common.c')
    table = dict(re.findall(r'\[\s*(DB_[A-Z_]+)\s*\]\s*=\s*"([^"]*)"', m.group(1)))
    names = [table.get(e) for e in enum]
    m = re.search(r'#define\s+DB_FIRST_OPTIONAL\s+(DB_[A-Z_]+)', priv)
    first_opt = enum.index(m.group(1)) if m and m.group(1) in enum else None
    m = re.search(r'#define\s+CAPTURE_MAXDBS\s+(\d+)', priv)
    maxdbs = int(m.group(1)) if m else None
    return enum, names, first_opt, maxdbs


def doc_section(doc, title):
    m = re.search(r'^## ' + re.escape(title) + r'\n(.*?)(?=^## )', doc, re.S | re.M)
    return m.group(1) if m else ''


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    enum, names, first_opt, maxdbs = code_dbs(root)
    with open(root + '/docs/capture-format.md') as f:
        doc = f.read()
    checks = []

    def check(ok, what):
        checks.append((bool(ok), what))

    check(None not in names and len(set(names)) == len(names),
          'capture_db_names[] names every DB_* once (%s)' % names)
    sec = doc_section(doc, 'Named databases')
    check(sec, 'docs/capture-format.md has a "## Named databases" section')
    intro = sec.split('\n### ')[0]  # the section's own text, before its subsections
    rows = re.findall(r'^\|\s*`([a-z_]+)`\s*\|', intro, re.M)
    check(rows == names, 'the Named databases table lists the code\'s databases in its order '
                         '(code %s, document %s)' % (names, rows))
    m = re.search(r'The environment has (\w+) named DBs \(the library sets `maxdbs` to (\d+)\)',
                  intro)
    check(m, 'the section says how many named DBs there are and maxdbs')
    if m:
        n = len(names)
        check(m.group(1) == (WORDS[n] if n < len(WORDS) else str(n)),
              'the number of DBs in words: document "%s", code %d' % (m.group(1), n))
        check(int(m.group(2)) == maxdbs,
              'maxdbs: document %s, code CAPTURE_MAXDBS %s' % (m.group(2), maxdbs))
    later = re.search(r'((?:`[a-z_]+`(?:,\s*|\s+and\s+))+`[a-z_]+`)\s+were added later', intro)
    doc_later = re.findall(r'`([a-z_]+)`', later.group(1)) if later else []
    code_later = names[first_opt:] if first_opt is not None else []
    check(doc_later == code_later, 'the DBs added later (optional): code %s (from '
                                   'DB_FIRST_OPTIONAL), document %s' % (code_later, doc_later))
    m = re.search(r'for each DB in the order `([a-z_ ]+)`', doc)
    seal = m.group(1).split() if m else []
    check(seal == names, 'the seal\'s counts order: code %s, document %s' % (names, seal))
    headings = re.findall(r'^### ([a-z_]+)\b', doc, re.M)
    missing = [n for n in names if n not in headings]
    check(not missing, 'a "### NAME" section for every DB (missing: %s)' % missing)

    # DESIGN.md's paragraph on capture/ lists them too (any order).
    with open(root + '/docs/DESIGN.md') as f:
        design = f.read()
    m = re.search(r'with\s+(\w+)\s+named\s+databases:(.*?)\.\s', design, re.S)
    listed = [n for n in re.findall(r'`([a-z_]+)`', m.group(2))] if m else []
    check(m and sorted(listed) == sorted(names) and
          m.group(1) == (WORDS[len(names)] if len(names) < len(WORDS) else str(len(names))),
          'docs/DESIGN.md names the same databases (%s: %s)' % (m.group(1) if m else None,
                                                                sorted(listed)))

    print('1..%d' % len(checks))
    for i, (ok, what) in enumerate(checks, 1):
        print('%s %d - %s' % ('ok' if ok else 'not ok', i, what))
    return 0 if all(ok for ok, _ in checks) else 1


if __name__ == '__main__':
    sys.exit(main())
