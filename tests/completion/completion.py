#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The bash and zsh completions of cygprof (completion/cygprof.bash,
completion/_cygprof), in bash and zsh.

Usage:
  completion.py --cygprof CYGPROF --example EXAMPLE --script cygprof.bash
                [--zsh-script _cygprof] --test completion-bash|completion-zsh

Tests (meson names):
  completion-bash  the script sourced in bash, COMP_WORDS and COMP_CWORD set
                   as bash sets them, _cygprof called: subcommands (and those
                   of `help`), a command's options (from its --help), captures
                   among the files (by content: an LMDB file of any name; not
                   a text file), option values as files, programs after --;
                   only the options a command defines (report --t: not
                   --timeline, which its help mentions), the values of
                   --sort, --format, --times, --view (from each --help),
                   nothing for a pattern, and perf's perf.data not a capture
  completion-zsh   _cygprof sourced in zsh with words, CURRENT and PREFIX set
                   as zsh sets them, and compadd, _files and _command_names
                   standing in for zsh's (they print what they are given):
                   the same cases as completion-bash; skipped without zsh
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'lib'))
import cygtest  # noqa: E402


def complete(script, cwd, words, fn='_cygprof'):
    """COMPREPLY for the command line words (the last one being completed)."""
    arr = ' '.join("'%s'" % w.replace("'", "'\\''") for w in words)
    prog = ('source "$1" || exit 9; COMP_WORDS=(%s); COMP_CWORD=%d; %s; '
            'printf "%%s\\n" "${COMPREPLY[@]}"' % (arr, len(words) - 1, fn))
    cp = subprocess.run(['bash', '--norc', '--noprofile', '-c', prog, 'bash', script], cwd=cwd,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if cp.returncode:
        raise cygtest.Failure('bash: exit %d: %s' % (cp.returncode, cp.stderr.strip()))
    return sorted(x for x in cp.stdout.split('\n') if x)


def check_cases(ck, cyg, example, complete, script, shell):
    """The cases both completions must get right; complete(script, cwd,
    words) gives what the shell's completion offers for words."""
    d = cyg.workdir
    exe = cyg.exe
    cap = os.path.join(d, 'run.bin')  # a capture whatever its name
    ck.eq(cyg.record(cap, [example]).returncode, 0, 'record a capture')
    with open(os.path.join(d, 'notes.txt'), 'w') as f:
        f.write('not a capture\n')
    os.mkdir(os.path.join(d, 'sub'))

    ck.eq(complete(script, d, [exe, 're']), ['receive', 'record', 'replay', 'report'],
          '%s: subcommands: re -> receive, record, replay, report' % shell)
    ck.eq(complete(script, d, [exe, 'help', 'rep']), ['replay', 'report'], '%s: help rep' % shell)
    ck.check('--min-percent' in complete(script, d, [exe, 'report', '--mi']),
             "%s: report --mi: --min-percent (from report's --help)" % shell)
    ck.eq(complete(script, d, [exe, 'report', '--tr']), ['--tree'],
          '%s: report --tr: --tree' % shell)
    ck.eq(complete(script, d, [exe, 'top', '--for']), ['--format='],
          '%s: top --for: --format= (its --help writes --format=text|json)' % shell)
    ck.eq(complete(script, d, [exe, 'report', '']), ['run.bin', 'sub/'],
          '%s: report <TAB>: the capture (by content) and directories, not the text file'
          % shell)
    got = complete(script, d, [exe, 'export', '-o', ''])
    ck.check('notes.txt' in got or got == ['(files)'], '%s: export -o <TAB>: any file' % shell)
    got = complete(script, d, [exe, 'record', '--', 'ech'])
    ck.check('echo' in got or got == ['(commands)'], '%s: record -- ech: programs' % shell)
    ck.eq(complete(script, d, [exe, '--v']), ['--version'], '%s: cygprof --v: --version' % shell)


def test_bash(ck, cyg, example, args):
    if not shutil.which('bash'):
        print('SKIP completion-bash: no bash')
        sys.exit(cygtest.SKIP)
    check_cases(ck, cyg, example, complete, os.path.abspath(args.script), 'bash')
    script, d, exe = os.path.abspath(args.script), cyg.workdir, cyg.exe
    # only the options report defines: its help mentions record's
    # --timeline, which report refuses
    got = complete(script, d, [exe, 'report', '--t'])
    ck.check('--tree' in got and '--timeline' not in got,
             'bash: report --t: its own options, not --timeline (%r)' % got)
    # the values of options, parsed from each command's --help
    for words, want in (
            (['report', '--sort', ''], ['calls', 'name', 'self', 'total']),
            (['report', '--sort', 'c'], ['calls']),
            (['report', '--format', ''], ['json', 'text']),
            (['report', '--times', '=', ''], ['hooks', 'model', 'raw', 'samples', 'wall']),
            (['report', '--times=m'], ['--times=model']),
            (['diff', '--sort', ''], ['calls', 'name', 'self', 'total']),
            (['memory', '--sort', ''], ['allocations', 'leaked', 'name', 'self', 'temporary',
                                        'total']),
            (['export', '--format', ''], ['callgrind', 'chrome', 'folded', 'gmon', 'perfetto',
                                          'pprof']),
            (['export', '--format=p'], ['--format=perfetto', '--format=pprof']),
            (['top', '-s', ''], ['calls', 'name', 'self', 'total']),
            (['top', '--view', '=', ''], ['interval', 'total']),
            (['record', '--time', '=', 's'], ['sampled']),
            (['report', '-F', ''], []),  # a pattern: nothing to offer
    ):
        ck.eq(complete(script, d, [exe] + words), want,
              'bash: %s<TAB>: its values' % ' '.join(words))
    # an option without a value is followed by a capture, as before
    ck.eq(complete(script, d, [exe, 'report', '--tree', '']), ['run.bin', 'sub/'],
          'bash: report --tree <TAB>: captures')
    # perf's own perf.data is no capture, whatever its name
    with open(os.path.join(d, 'perf.data'), 'wb') as f:
        f.write(b'PERFILE2' + bytes(120))
    with open(os.path.join(d, 'old.data'), 'wb') as f:
        f.write(b'named .data, not perf')
    ck.eq(complete(script, d, [exe, 'report', '']), ['old.data', 'run.bin', 'sub/'],
          "bash: report <TAB>: not perf's perf.data (magic PERFILE2)")
    ck.eq(complete(script, d, [exe, 'report', '--li']), ['--limit'],
          'bash: report --li<TAB>: --limit')
    # cygprof-annotate completes as cygprof annotate (the cygprof beside it)
    ann = os.path.join(os.path.dirname(exe), 'cygprof-annotate')
    if os.path.exists(ann):
        ck.eq(complete(script, d, [ann, '--ho'], fn='_cygprof_annotate'), ['--hot'],
              'bash: cygprof-annotate --ho<TAB>: --hot')
        ck.eq(complete(script, d, [ann, '--format', ''], fn='_cygprof_annotate'),
              ['json', 'text'], 'bash: cygprof-annotate --format <TAB>: its values')


ZSH_STUBS = r'''
compadd() {
	local a
	while (( $# )); do
		case $1 in
		-a) shift; for a in "${(@P)1}"; do print -r -- "$a"; done ;;
		-S) shift ;;
		--) shift; for a in "$@"; do print -r -- "$a"; done; return 0 ;;
		-*) ;;
		*) print -r -- "$1" ;;
		esac
		shift
	done
}
_files() { print -r -- '(files)'; }
_command_names() { print -r -- '(commands)'; }
'''


def complete_zsh(script, cwd, words):
    """What _cygprof offers for the command line words (the last one being
    completed), through the stand-ins of ZSH_STUBS."""
    arr = ' '.join("'%s'" % w.replace("'", "'\\''") for w in words)
    prog = ZSH_STUBS + ('words=(%s); CURRENT=%d; PREFIX=%s; source "$1" || exit 9' %
                        (arr, len(words), "'%s'" % words[-1].replace("'", "'\\''")))
    cp = subprocess.run(['zsh', '-f', '-c', prog, 'zsh', script], cwd=cwd,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if cp.returncode:
        raise cygtest.Failure('zsh: exit %d: %s' % (cp.returncode, cp.stderr.strip()))
    return sorted(set(x for x in cp.stdout.split('\n') if x and x.startswith(words[-1]) or
                      x in ('(files)', '(commands)')))


def test_zsh(ck, cyg, example, args):
    if not shutil.which('zsh'):
        print('SKIP completion-zsh: no zsh (Debian package zsh)')
        sys.exit(cygtest.SKIP)
    script = os.path.abspath(args.zsh_script)
    check_cases(ck, cyg, example, complete_zsh, script, 'zsh')
    # cygprof-annotate completes as cygprof annotate (the cygprof beside it)
    ann = os.path.join(os.path.dirname(cyg.exe), 'cygprof-annotate')
    if os.path.exists(ann):
        ck.eq(complete_zsh(script, cyg.workdir, [ann, '--ho']), ['--hot'],
              'zsh: cygprof-annotate --ho<TAB>: --hot')


TESTS = {'completion-bash': test_bash, 'completion-zsh': test_zsh}


def main():
    def extra(ap):
        ap.add_argument('--script', required=True)
        ap.add_argument('--zsh-script')
    return cygtest.driver_main(TESTS, 'completion', __doc__, extra=extra)


if __name__ == '__main__':
    sys.exit(main())
