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
                   a text file), option values as files, programs after --
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


def complete(script, cwd, words):
    """COMPREPLY for the command line words (the last one being completed)."""
    arr = ' '.join("'%s'" % w.replace("'", "'\\''") for w in words)
    prog = ('source "$1" || exit 9; COMP_WORDS=(%s); COMP_CWORD=%d; _cygprof; '
            'printf "%%s\\n" "${COMPREPLY[@]}"' % (arr, len(words) - 1))
    cp = subprocess.run(['bash', '--norc', '--noprofile', '-c', prog, 'bash', script], cwd=cwd,
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
    if cp.returncode:
        raise cygtest.Failure('bash: exit %d: %s' % (cp.returncode, cp.stderr.strip()))
    return sorted(x for x in cp.stdout.split('\n') if x)


def test_bash(ck, cyg, example, args):
    if not shutil.which('bash'):
        print('SKIP completion-bash: no bash')
        sys.exit(cygtest.SKIP)
    d = cyg.workdir
    exe = cyg.exe
    script = os.path.abspath(args.script)
    cap = os.path.join(d, 'run.bin')  # a capture whatever its name
    ck.eq(cyg.record(cap, [example]).returncode, 0, 'record a capture')
    with open(os.path.join(d, 'notes.txt'), 'w') as f:
        f.write('not a capture\n')
    os.mkdir(os.path.join(d, 'sub'))

    ck.eq(complete(script, d, [exe, 're']), ['receive', 'record', 'replay', 'report'],
          'subcommands: re -> receive, record, replay, report')
    ck.eq(complete(script, d, [exe, 'help', 'rep']), ['replay', 'report'], 'help rep')
    ck.check('--min-percent' in complete(script, d, [exe, 'report', '--mi']),
             "report --mi: --min-percent (from report's --help)")
    ck.eq(complete(script, d, [exe, 'report', '--tr']), ['--tree'], 'report --tr: --tree')
    got = complete(script, d, [exe, 'report', ''])
    ck.eq(got, ['run.bin', 'sub/'], 'report <TAB>: the capture (by content) and directories, '
          'not the text file')
    ck.check('notes.txt' in complete(script, d, [exe, 'export', '-o', '']),
             'export -o <TAB>: any file')
    ck.check('echo' in complete(script, d, [exe, 'record', '--', 'ech']),
             'record -- ech: programs')
    ck.check('--version' in complete(script, d, [exe, '--v']), 'cygprof --v: --version')


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
    d = cyg.workdir
    exe = cyg.exe
    script = os.path.abspath(args.zsh_script)
    cap = os.path.join(d, 'run.bin')  # a capture whatever its name
    ck.eq(cyg.record(cap, [example]).returncode, 0, 'record a capture')
    with open(os.path.join(d, 'notes.txt'), 'w') as f:
        f.write('not a capture\n')
    os.mkdir(os.path.join(d, 'sub'))

    ck.eq(complete_zsh(script, d, [exe, 're']), ['receive', 'record', 'replay', 'report'],
          'subcommands: re -> receive, record, replay, report')
    ck.eq(complete_zsh(script, d, [exe, 'help', 'rep']), ['replay', 'report'], 'help rep')
    ck.check('--min-percent' in complete_zsh(script, d, [exe, 'report', '--mi']),
             "report --mi: --min-percent (from report's --help)")
    ck.eq(complete_zsh(script, d, [exe, 'report', '--tr']), ['--tree'], 'report --tr: --tree')
    ck.eq(complete_zsh(script, d, [exe, 'top', '--for']), ['--format='],
          "top --for: --format= (its --help writes --format=text|json)")
    ck.eq(complete_zsh(script, d, [exe, 'report', '']), ['run.bin', 'sub/'],
          'report <TAB>: the capture (by content) and directories, not the text file')
    ck.eq(complete_zsh(script, d, [exe, 'export', '-o', '']), ['(files)'],
          'export -o <TAB>: any file')
    ck.eq(complete_zsh(script, d, [exe, 'record', '--', 'ech']), ['(commands)'],
          'record -- ech: programs')
    ck.eq(complete_zsh(script, d, [exe, '--v']), ['--version'], 'cygprof --v: --version')


TESTS = {'completion-bash': test_bash, 'completion-zsh': test_zsh}


def main():
    def extra(ap):
        ap.add_argument('--script', required=True)
        ap.add_argument('--zsh-script')
    return cygtest.driver_main(TESTS, 'completion', __doc__, extra=extra)


if __name__ == '__main__':
    sys.exit(main())
