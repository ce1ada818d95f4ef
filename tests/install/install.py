#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Install test: what `meson install` puts under a prefix works from there.

Usage:
  install.py --build BUILDDIR [--meson MESON] [--example EXE] [-v] [--keep]

Runs `meson install -C BUILDDIR --destdir TMP --no-rebuild --quiet`, then,
with no LD_LIBRARY_PATH and no CYGPROF_RUNTIME:

0. the layout: the preloaded runtimes libcygprof-cyg.so and
   libcygprof-mem.so in their private directory LIBDIR/cygprof/ (and not in
   LIBDIR itself); libcygprof-capture.so.N in LIBDIR with that soname and
   the development link libcygprof-capture.so; the header;
1. TMP/PREFIX/BINDIR/cygprof records EXAMPLE (examples/calls.c) and reports
   it: the installed binary must find libcygprof-capture and the runtime
   libcygprof-cyg.so through its own location, and the runtime preloaded
   into the program must be the installed one (LIBDIR/cygprof/);
2. libcygprof-capture exports exactly the functions declared in the
   installed cygprof-capture.h (nm -D --defined-only), each under a
   version node of the API (CYGPROF_CAPTURE_0 or one that inherits it);
3. TMP/PREFIX/LIBDIR/pkgconfig/cygprof-capture.pc exists (and no
   cygprof.pc), says what it is, and `pkg-config --cflags --libs
   cygprof-capture` works with PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR
   pointing into TMP;
4. a small C program built with those flags against the installed
   cygprof-capture.h opens the capture and prints its thread count
   (LD_LIBRARY_PATH is set for this reader only);
5. the man pages are installed under TMP/PREFIX/MANDIR/man1, the API's in man3;
   the bash and zsh completions under TMP/PREFIX/DATADIR (bash-completion/
   completions/cygprof, zsh/site-functions/_cygprof);
6. libcygprof-memdump: libcygprof-memdump.so.N in LIBDIR with that soname
   and its development link, cygprof/memdump.h, exactly the header's
   functions exported under one symbol version, cygprof-memdump.pc, and a
   program built with `pkg-config --cflags --libs cygprof-memdump` runs
   without cygprof.

Exit status: 0 passed, 1 failed, 77 skipped (no meson, no C compiler or no
pkg-config here). Standard library only.
"""

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
TIMEOUT = 100
VERBOSE = False

READER_C = r'''
#include <stdio.h>
#include <stdlib.h>
#include <cygprof/cygprof-capture.h>

int main(int argc, char **argv)
{
	struct cygprof_capture *cap;
	struct cygprof_thread *threads;
	size_t n;
	int rc;

	if (argc != 2)
		return 2;
	if ((rc = cygprof_capture_open(argv[1], &cap)) < 0) {
		fprintf(stderr, "open: %s\n", cygprof_strerror(rc));
		return 1;
	}
	if ((rc = cygprof_capture_get_threads(cap, &threads, &n)) < 0) {
		fprintf(stderr, "threads: %s\n", cygprof_strerror(rc));
		return 1;
	}
	printf("threads=%zu calls=%llu\n", n, n ? (unsigned long long)threads[0].calls : 0ULL);
	free(threads);
	return cygprof_capture_close(cap) < 0;
}
'''

MAN_PAGES = ['cygprof.1', 'cygprof-record.1', 'cygprof-report.1', 'cygprof-replay.1',
             'cygprof-info.1', 'cygprof-gprof.1', 'cygprof-annotate.1']


class Failure(Exception):
    pass


class Checker:
    def __init__(self):
        self.failures = []
        self.count = 0

    def check(self, cond, msg):
        self.count += 1
        if cond:
            if VERBOSE:
                print('ok: ' + msg)
        else:
            self.failures.append(msg)
            print('FAIL: ' + msg)
        return cond

    def eq(self, got, want, what):
        return self.check(got == want, '%s: expected %r, got %r' % (what, want, got))


def clean_env(**extra):
    env = dict(os.environ)
    for k in ('LD_LIBRARY_PATH', 'LD_PRELOAD', 'CYGPROF_RUNTIME', 'PKG_CONFIG_PATH',
              'PKG_CONFIG_LIBDIR', 'PKG_CONFIG_SYSROOT_DIR'):
        env.pop(k, None)
    env.update(extra)
    return env


def run(cmd, env=None, cwd=None):
    print('$ ' + ' '.join(cmd))
    try:
        cp = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env if env is not None else clean_env(),
                            cwd=cwd, timeout=TIMEOUT)
    except subprocess.TimeoutExpired as e:
        raise Failure('timed out: ' + ' '.join(cmd)) from e
    cp.out = cp.stdout.decode('utf-8', 'replace')
    cp.err = cp.stderr.decode('utf-8', 'replace')
    if VERBOSE or cp.returncode != 0:
        print('  -> exit %d' % cp.returncode)
        for line in cp.err.splitlines()[:20]:
            print('  stderr: ' + line)
    return cp


def build_options(meson, build):
    cp = run(meson + ['introspect', build, '--buildoptions'], env=dict(os.environ))
    if cp.returncode != 0:
        raise Failure('meson introspect --buildoptions failed')
    opts = {o['name']: o['value'] for o in json.loads(cp.out)}
    return opts['prefix'], opts['bindir'], opts['libdir'], opts['mandir'], opts['datadir']


def header_functions(path):
    """The functions the public header declares (comments removed)."""
    with open(path) as f:
        text = re.sub(r'/\*.*?\*/', '', f.read(), flags=re.S)
    return set(re.findall(r'\b(cygprof_[a-z0-9_]+)\s*\(', text))


def exported_symbols(lib):
    """{name: version} of the symbols lib defines in its dynamic table, or
    None without nm.  The version node itself (an absolute symbol named
    like the version) is left out."""
    nm = shutil.which('nm')
    if not nm:
        return None
    cp = run([nm, '-D', '--defined-only', lib])
    if cp.returncode != 0:
        raise Failure('nm -D %s failed' % lib)
    syms = {}
    for line in cp.out.splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        name, _, version = parts[2].partition('@@')
        if not version:
            name, _, version = parts[2].partition('@')
        if parts[1] == 'A' and not version:
            continue
        syms[name] = version
    return syms


def soname(lib):
    """The DT_SONAME of lib, or None without readelf/objdump."""
    readelf = shutil.which('readelf')
    if not readelf:
        return None
    cp = run([readelf, '-d', lib])
    m = re.search(r'\(SONAME\)\s+Library soname: \[([^]]+)\]', cp.out)
    return m.group(1) if m else ''


def under(root, prefix, sub):
    path = sub if os.path.isabs(sub) else os.path.join(prefix, sub)
    return os.path.join(root, path.lstrip('/'))


MEMDUMP_C = r'''
#include <cygprof/memdump.h>
#include <stdio.h>
static void dump(void *data) { cygprof_memdump_report_byte_total("Cache", 1); (void)data; }
int main(void)
{
	cygprof_memdump_report_byte_delta("Nodes", 64);
	if (cygprof_memdump_register(dump, NULL) || cygprof_memdump_unregister(dump, NULL))
		return 1;
	printf("needs=%d\n", cygprof_memdump_needs_report("Cache"));
	return 0;
}
'''


def check_memdump(ck, dest, prefix, lib_dir, tmp):
    link = os.path.join(lib_dir, 'libcygprof-memdump.so')
    ck.check(os.path.islink(link), 'the development link %s' % link)
    sonames = sorted(os.path.basename(p) for p in glob.glob(link + '.*')
                     if re.fullmatch(r'libcygprof-memdump\.so\.\d+', os.path.basename(p)))
    ck.check(len(sonames) == 1, 'one libcygprof-memdump.so.N in %s (got %s)' % (lib_dir, sonames))
    lib = os.path.realpath(link)
    got = soname(lib)
    if got is None:
        print('info: no readelf here: soname check skipped')
    elif sonames:
        ck.eq(got, sonames[0], 'the soname of libcygprof-memdump')
    header = os.path.join(under(dest, prefix, 'include'), 'cygprof', 'memdump.h')
    ck.check(os.path.isfile(header), 'header installed at %s' % header)
    if os.path.isfile(header) and os.path.exists(lib):
        public = header_functions(header)
        syms = exported_symbols(lib)
        if syms is None:
            print('info: no nm here: export check skipped')
        else:
            ck.eq(len(public), 5, 'memdump.h declares the 5 functions of the API')
            extra = sorted(set(syms) - public)
            missing = sorted(public - set(syms))
            ck.check(not extra, 'libcygprof-memdump exports nothing beyond the header '
                                '(also exported: %s)' % extra)
            ck.check(not missing, 'libcygprof-memdump exports every function of the header '
                                  '(missing: %s)' % missing)
            versions = set(syms.values())
            ck.check(len(versions) == 1 and '' not in versions,
                     'one symbol version for the memdump API (got %s)' % sorted(versions))
    pcs = glob.glob(os.path.join(dest, prefix.lstrip('/'), 'lib*', '**', 'pkgconfig',
                                 'cygprof-memdump.pc'), recursive=True)
    ck.check(len(pcs) == 1, 'one cygprof-memdump.pc under %s/lib* (got %s)' % (prefix, pcs))
    if not pcs:
        return
    with open(pcs[0]) as f:
        ck.check(re.search(r'^Name: cygprof-memdump$', f.read(), re.M) is not None,
                 'cygprof-memdump.pc: Name: cygprof-memdump')
    pkg_config = shutil.which('pkg-config') or shutil.which('pkgconf')
    cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
    if not pkg_config or not cc:
        print('info: no pkg-config or C compiler here: memdump program check skipped')
        return
    system_pc = os.environ.get('PKG_CONFIG_PATH', '')
    pc_env = clean_env(PKG_CONFIG_PATH=os.path.dirname(pcs[0]) +
                       (':' + system_pc if system_pc else ''), PKG_CONFIG_SYSROOT_DIR=dest)
    cp = run([pkg_config, '--cflags', '--libs', 'cygprof-memdump'], env=pc_env)
    if not ck.eq(cp.returncode, 0, 'pkg-config --cflags --libs cygprof-memdump'):
        return
    flags = cp.out.split()
    ck.check('-lcygprof-memdump' in flags, '-lcygprof-memdump')
    src = os.path.join(tmp, 'memdump.c')
    exe = os.path.join(tmp, 'memdump')
    with open(src, 'w') as f:
        f.write(MEMDUMP_C)
    san = [] if SANITIZE in ('', 'none') else ['-fsanitize=' + SANITIZE]
    cp = run([cc, '-o', exe, src] + san + flags, env=clean_env())
    if ck.eq(cp.returncode, 0, 'a memdump program compiles and links with pkg-config\'s flags'):
        cp = run([exe], env=clean_env(LD_LIBRARY_PATH=lib_dir))
        ck.eq(cp.returncode, 0, 'the memdump program runs without cygprof')
        ck.eq(cp.out.strip(), 'needs=0', 'the memdump program\'s output')


def test(ck, args, meson, tmp):
    dest = os.path.join(tmp, 'dest')
    cp = run(meson + ['install', '-C', args.build, '--destdir', dest, '--no-rebuild', '--quiet'],
             env=dict(os.environ))
    if cp.returncode != 0:
        raise Failure('meson install failed: %s' % cp.err.strip()[-500:])
    prefix, bindir, libdir, mandir, datadir = build_options(meson, args.build)
    bin_dir = under(dest, prefix, bindir)
    lib_dir = under(dest, prefix, libdir)
    cygprof = os.path.join(bin_dir, 'cygprof')
    print('info: prefix %s, installed cygprof %s' % (prefix, cygprof))
    if not ck.check(os.access(cygprof, os.X_OK), 'cygprof installed at %s' % cygprof):
        raise Failure('no installed cygprof')
    # 0. the layout
    runtime_dir = os.path.join(lib_dir, 'cygprof')
    for lib in ('libcygprof-cyg.so', 'libcygprof-mem.so'):
        ck.check(os.path.isfile(os.path.join(runtime_dir, lib)),
                 '%s installed in the private directory %s' % (lib, runtime_dir))
        ck.check(not os.path.exists(os.path.join(lib_dir, lib)),
                 '%s not installed in %s itself' % (lib, lib_dir))
    capture_link = os.path.join(lib_dir, 'libcygprof-capture.so')
    ck.check(os.path.islink(capture_link), 'the development link %s' % capture_link)
    sonames = sorted(os.path.basename(p) for p in glob.glob(capture_link + '.*')
                     if re.fullmatch(r'libcygprof-capture\.so\.\d+', os.path.basename(p)))
    ck.check(len(sonames) == 1, 'one libcygprof-capture.so.N in %s (got %s)' % (lib_dir, sonames))
    capture_lib = os.path.realpath(capture_link)
    got_soname = soname(capture_lib)
    if got_soname is None:
        print('info: no readelf here: soname check skipped')
    elif sonames:
        ck.eq(got_soname, sonames[0], 'the soname of libcygprof-capture')
    header = os.path.join(under(dest, prefix, 'include'), 'cygprof', 'cygprof-capture.h')
    ck.check(os.path.isfile(header), 'header installed at %s' % header)

    # 2. the library exports its public API and nothing else
    if os.path.isfile(header) and os.path.exists(capture_lib):
        public = header_functions(header)
        syms = exported_symbols(capture_lib)
        if syms is None:
            print('info: no nm here: export check skipped')
        else:
            extra = sorted(set(syms) - public)
            missing = sorted(public - set(syms))
            ck.check(len(public) >= 30, 'the header declares the API (%d functions)' % len(public))
            ck.check(not extra, 'libcygprof-capture exports nothing beyond the header '
                                '(also exported: %s)' % extra)
            ck.check(not missing, 'libcygprof-capture exports every function of the header '
                                  '(missing: %s)' % missing)
            # CYGPROF_CAPTURE_0, and the nodes that inherit it for what was
            # added since (capture/libcygprof-capture.map)
            versions = set(syms.values())
            ck.check('CYGPROF_CAPTURE_0' in versions and
                     all(re.fullmatch(r'CYGPROF_CAPTURE_0(\.\d+)?', v) for v in versions),
                     'every function under a version node of the API (got %s)' %
                     sorted(versions))

    # 6. the memdump library
    check_memdump(ck, dest, prefix, lib_dir, tmp)

    # 1. the installed cygprof, as it is (no LD_LIBRARY_PATH)
    cp = run([cygprof, '--help'])
    ck.check(cp.returncode == 0 and 'record' in cp.out,
             'installed cygprof --help runs without LD_LIBRARY_PATH (exit %d: %s)' %
             (cp.returncode, cp.err.strip()[:300]))
    capture = os.path.join(tmp, 'calls.data')
    cp = run([cygprof, 'record', '-o', capture, '--', args.example], cwd=tmp)
    ck.eq(cp.returncode, 0, 'installed cygprof records the example')
    ck.check('calls: a=3 b=6 c=30' in cp.out, 'the example ran (stdout %r)' % cp.out)
    installed_ok = cp.returncode == 0 and os.path.exists(capture)
    if installed_ok:
        cp = run([cygprof, 'report', '--format=json', capture])
        ck.eq(cp.returncode, 0, 'installed cygprof reports the capture')
        if cp.returncode == 0:
            data = json.loads(cp.out)
            got = {f['name']: f['calls'] for f in data['functions']}
            ck.eq(got, {'main': 1, 'a': 3, 'b': 6, 'c': 30}, 'calls per function')
        # the installed cygprof-annotate runs without LD_LIBRARY_PATH too
        annotate = os.path.join(bin_dir, 'cygprof-annotate')
        cp = run([annotate, '--format=json', capture])
        ck.check(cp.returncode == 0 and '"files"' in cp.out,
                 'installed cygprof-annotate runs (exit %d: %s)' %
                 (cp.returncode, cp.err.strip()[:300]))
        # The runtime preloaded into the program is the installed one,
        # from the private directory; the same for --memory.
        for opt, lib in (([], 'libcygprof-cyg.so'), (['--memory'], 'libcygprof-mem.so')):
            cp = run([cygprof, 'record', '-q'] + opt + ['-o', os.path.join(tmp, 'sh.data'), '--',
                      '/bin/sh', '-c', 'grep -h libcygprof- /proc/$$/maps'], cwd=tmp)
            paths = {line.split()[-1] for line in cp.out.splitlines() if line.strip()}
            want = os.path.realpath(os.path.join(runtime_dir, lib))
            ck.eq({os.path.realpath(p) for p in paths}, {want},
                  'the program preloads the installed %s' % lib)
    else:
        # Go on with a capture of the build tree's cygprof for the checks below.
        build_cygprof = os.path.join(args.build, 'cli', 'cygprof')
        print('info: recording with %s for the reader checks' % build_cygprof)
        run([build_cygprof, 'record', '-q', '-o', capture, '--', args.example],
            env=dict(os.environ), cwd=tmp)

    # 3. pkg-config
    def find_pc(name):
        return glob.glob(os.path.join(dest, prefix.lstrip('/'), 'lib*', '**', 'pkgconfig', name),
                         recursive=True)
    pcs = find_pc('cygprof-capture.pc')
    ck.check(len(pcs) == 1, 'one cygprof-capture.pc under %s/lib* (got %s)' % (prefix, pcs))
    ck.eq(find_pc('cygprof.pc'), [], 'no cygprof.pc (the library is cygprof-capture)')
    if pcs:
        with open(pcs[0]) as f:
            pc = f.read()
        ck.check(re.search(r'^Name: cygprof-capture$', pc, re.M) is not None,
                 'cygprof-capture.pc: Name: cygprof-capture')
        ck.check(re.search(r'^Description: .*captures', pc, re.M) is not None,
                 'cygprof-capture.pc: the description says it reads and writes captures')
    pkg_config = shutil.which('pkg-config') or shutil.which('pkgconf')
    if not pcs or not pkg_config:
        if not pkg_config:
            print('info: no pkg-config here: compile check skipped')
        return
    pc_dir = os.path.dirname(pcs[0])
    system_pc = os.environ.get('PKG_CONFIG_PATH', '')
    pc_env = clean_env(PKG_CONFIG_PATH=pc_dir + (':' + system_pc if system_pc else ''),
                       PKG_CONFIG_SYSROOT_DIR=dest)
    cp = run([pkg_config, '--cflags', '--libs', 'cygprof-capture'], env=pc_env)
    if not ck.eq(cp.returncode, 0, 'pkg-config --cflags --libs cygprof-capture'):
        return
    flags = cp.out.split()
    print('info: pkg-config flags: %s' % ' '.join(flags))
    ck.check(any(f.startswith('-I' + dest) for f in flags), '-I into the destdir')
    ck.check(any(f.startswith('-L' + dest) for f in flags), '-L into the destdir')
    ck.check('-lcygprof-capture' in flags, '-lcygprof-capture')
    cp = run([pkg_config, '--modversion', 'cygprof-capture'], env=pc_env)
    ck.check(cp.returncode == 0 and cp.out.strip() != '', 'pkg-config --modversion')

    # 4. a reader program built against the installed header and library
    cc = os.environ.get('CC') or shutil.which('cc') or shutil.which('gcc')
    if not cc:
        print('info: no C compiler: reader check skipped')
    else:
        src = os.path.join(tmp, 'reader.c')
        exe = os.path.join(tmp, 'reader')
        with open(src, 'w') as f:
            f.write(READER_C)
        san = [] if SANITIZE in ('', 'none') else ['-fsanitize=' + SANITIZE]
        cp = run([cc, '-o', exe, src] + san + flags, env=clean_env())
        if ck.eq(cp.returncode, 0, 'the reader compiles and links with pkg-config\'s flags'):
            cp = run([exe, capture], env=clean_env(LD_LIBRARY_PATH=lib_dir))
            ck.eq(cp.returncode, 0, 'the reader runs')
            ck.eq(cp.out.strip(), 'threads=1 calls=40', 'the reader\'s output')

    # 5. man pages
    man1 = os.path.join(under(dest, prefix, mandir), 'man1')
    for page in MAN_PAGES:
        ck.check(os.path.isfile(os.path.join(man1, page)), 'man page %s in %s' % (page, man1))
    man3 = os.path.join(under(dest, prefix, mandir), 'man3')
    ck.check(os.path.isfile(os.path.join(man3, 'cygprof_memdump.3')),
             'man page cygprof_memdump.3 in %s' % man3)
    # 5. the shell completions, where bash-completion and zsh's compinit look
    share = under(dest, prefix, datadir)
    for rel in ('bash-completion/completions/cygprof', 'zsh/site-functions/_cygprof'):
        ck.check(os.path.isfile(os.path.join(share, rel)), 'completion %s in %s' % (rel, share))


SANITIZE = 'none'


def main():
    global VERBOSE
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--build', required=True, help='the meson build directory')
    ap.add_argument('--meson', help='the meson command (default: meson in PATH)')
    ap.add_argument('--example', help='the calls example (default BUILD/tests/example-calls-O2)')
    ap.add_argument('--sanitize', default='none',
                    help="meson's b_sanitize: the installed library is built with it, "
                         "so the reader program must be too")
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('-v', '--verbose', action='store_true')
    args = ap.parse_args()
    global SANITIZE
    SANITIZE = args.sanitize
    VERBOSE = args.verbose or bool(os.environ.get('CYGPROF_E2E_VERBOSE'))
    args.build = os.path.abspath(args.build)
    args.example = os.path.abspath(args.example or
                                   os.path.join(args.build, 'tests', 'example-calls-O2'))
    if args.meson:
        meson = [args.meson]
    elif shutil.which('meson'):
        meson = [shutil.which('meson')]
    else:
        print('SKIP install: no meson command')
        return SKIP
    if not os.access(args.example, os.X_OK):
        print('FAIL install: example %s is not an executable file' % args.example)
        return 1

    ck = Checker()
    tmp = tempfile.mkdtemp(prefix='cygprof-install-')
    try:
        test(ck, args, meson, tmp)
    except Failure as e:
        ck.failures.append(str(e))
        print('FAIL: ' + str(e))
    finally:
        if args.keep or (ck.failures and os.environ.get('CYGPROF_E2E_KEEP')):
            print('kept %s' % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    if ck.failures:
        print('FAIL install: %d of %d checks failed' % (len(ck.failures), max(ck.count, 1)))
        return 1
    print('PASS install: %d checks' % ck.count)
    return 0


if __name__ == '__main__':
    sys.exit(main())
