#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""How long the HTML report takes to open in headless Chromium.

Usage: bench/html_load.py [--cygprof build/cli/cygprof] [--build build]
           [--threads-arg 100000] [--rounds 5]

Not a test (tests/html only checks that the report renders): it makes the
reports the html tests make (examples/calls.c with --timeline, mem-basic
with --memory --counters=5ms) and a large one (example-threads-O2 ARG with
--timeline: the timeline cut to its longest 200000 calls), loads each ROUNDS
times in one headless Chromium (the tests' DevTools driver) at 1280x800 and
prints, per report, its size and the median (min..max) of the page's own
figure: performance.now() when its script has drawn the page (body
data-load-ms: from the start of the navigation, parsing included); a report
with a timeline also opened on it (#view=timeline: the lanes drawn).
Issue 22's goal: under 2 s for the largest report the tests make."""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'html'))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'lib'))
import html_report  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--cygprof', default='build/cli/cygprof')
    ap.add_argument('--build', default='build')
    ap.add_argument('--threads-arg', default='100000')
    ap.add_argument('--rounds', type=int, default=5)
    a = ap.parse_args()
    cyg = os.path.abspath(a.cygprof)
    b = os.path.abspath(a.build)
    exe = html_report.chromium()
    if not exe:
        sys.exit('chromium is not installed')
    runs = [
        ('calls --timeline', [os.path.join(b, 'tests', 'example-calls-O2')], ['--timeline']),
        ('mem-basic --memory --counters', [os.path.join(b, 'tests', 'memory',
                                                        'example-mem-basic-instr-O2')],
         ['--memory', '--counters=5ms']),
        ('threads %s --timeline' % a.threads_arg,
         [os.path.join(b, 'tests', 'example-threads-O2'), a.threads_arg], ['--timeline']),
    ]
    with tempfile.TemporaryDirectory(prefix='cygprof-bench-html-') as d:
        pages = []
        for name, cmd, opts in runs:
            cap = os.path.join(d, '%d.cyg' % len(pages))
            out = os.path.join(d, '%d.html' % len(pages))
            subprocess.run([cyg, 'record', '-o', cap] + opts + ['--'] + cmd, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run([cyg, 'html', '--no-progress', '-o', out, cap], check=True)
            pages.append((name, out))
        br = html_report.Browser(exe, os.path.join(d, 'profile'))
        try:
            print('%-34s %10s %8s  %s' % ('report', 'bytes', 'calls', 'load ms: median (min..max)'))
            views = []
            for name, out in pages:
                views.append((name, out, ''))
                if html_report.page_data(out).get('timeline'):
                    views.append((name + ', timeline view', out, '#view=timeline'))
            for name, out, frag in views:
                ms = []
                for _ in range(a.rounds):
                    br.render('file://' + out + frag)
                    err = br.evaluate('document.getElementById("errors").textContent')
                    if err:
                        sys.exit('%s: %s' % (name, err))
                    ms.append(int(br.evaluate('document.body.getAttribute("data-load-ms")')))
                data = html_report.page_data(out)
                tl = data.get('timeline')
                calls = '%d/%d' % (tl['kept'], tl['calls']) if tl else '-'
                print('%-34s %10d %8s  %d (%d..%d)' % (name, os.path.getsize(out), calls,
                                                       statistics.median(ms), min(ms), max(ms)))
        finally:
            br.close()


if __name__ == '__main__':
    main()
