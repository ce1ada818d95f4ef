#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""cygprof record --send to cygprof receive over loopback (docs/remote.md):
the capture received reads exactly as a local `record -o` of the same
example (report, info, memory, replay, counters, samples: counts, call
paths, records; times, pids and what perf sampled differ from run to run);
record --send writes nothing where it runs; a wrong token or no listener is
refused in one line before the program starts; a receiver killed mid-run
makes record say so in one line while the program runs on to exit 0; a
sender killed mid-run leaves an incomplete capture that info and report
read; --max-bytes cuts the stream.
TAP output.  usage: send.py CYGPROF --example CALLS --threads THREADS
  --longrun LONGRUN --mem MEMPROG"""
import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument('cygprof')
ap.add_argument('--example', required=True)
ap.add_argument('--threads', required=True)
ap.add_argument('--longrun', required=True)
ap.add_argument('--mem', required=True)
A = ap.parse_args()
for k in ('cygprof', 'example', 'threads', 'longrun', 'mem'):
    setattr(A, k, os.path.abspath(getattr(A, k)))  # record runs in other directories
CYG = A.cygprof
TOKEN = b'0123456789abcdef-secret'
results = []
# generous: the machine running the suite may be loaded
WAIT = 120


def ok(cond, name, detail=''):
    results.append(cond)
    print('%s %d - %s' % ('ok' if cond else 'not ok', len(results), name))
    if not cond and detail:
        for line in str(detail).splitlines()[:60]:
            print('# ' + line)
    sys.stdout.flush()


def write_token(name, token):
    path = os.path.join(TMP, name)
    with open(path, 'wb') as f:
        f.write(token + b'\n')
    os.chmod(path, 0o600)
    return path


def start_receiver(out, extra=()):
    """cygprof receive on 127.0.0.1, port 0: returns (process, port, first line)."""
    p = subprocess.Popen([CYG, 'receive', '--listen', '127.0.0.1:0', '--token-file', TOK,
                          '-o', out, '-f'] + list(extra),
                         stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    line = p.stderr.readline()
    if not line.startswith('receive: listening on port '):
        p.kill()
        p.wait()
        return p, None, line
    return p, int(line.split()[-1]), line


def finish(p):
    try:
        err = p.stderr.read()
        p.wait(timeout=WAIT)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return -1, 'timed out'
    return p.returncode, err


def run(args, cwd=None, env=None):
    return subprocess.run(args, capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=WAIT)


def one_line(err):
    return len(err.strip().splitlines()) == 1


# ---- comparing a received capture with a local one -----------------------

# what differs between two local runs too: times, pids, the order in which
# threads are found (idx), the heap over time, the clock's pairings and
# what differs between two local runs too: times, pids, the order in which
# threads are found (idx), the heap over time, the clock's pairings and
# rate, the capture's name and size, the CPU samples and context switches
# of a run (record --cpu-freq), the calibration's outlier rounds and tries
# and the call paths its compensation clamped
DROP = ('start_time', 'pid', 'ppid', 'tid', 'share', 'idx', 'heap', 'clock_start',
        'clock_end', 'tsc_hz', 'file', 'size', 'samples', 'cpu_samples', 'overhead_samples',
        'unplaced_samples', 'switches', 'switches_lost', 'rounds_kept', 'tries',
        'compensation_clamped',
        # latency paths are numbered in the order the tree met them, which
        # two runs need not share
        'id', 'parent')


def norm(x, drop=()):
    """The figures of a JSON result that do not depend on time or pids (nor
    on the keys in drop), lists sorted (the order of functions of equal
    time may differ)."""
    if isinstance(x, dict):
        return {k: norm(v, drop) for k, v in x.items()
                if not k.endswith('_ns') and k not in DROP and k not in drop}
    if isinstance(x, list):
        return sorted((norm(v, drop) for v in x), key=lambda v: json.dumps(v, sort_keys=True))
    return x


def counters_shape(doc):
    """The counters of a counters --format=json: name, process or system,
    unit, and whether it has samples (their times and values are the run's)."""
    return sorted((c['name'], c['pid'] is None, c['unit'], len(c['samples']) > 0)
                  for c in doc['counters'])


def samples_shape(doc):
    """What the perf samples of two runs of a program share (how many and
    where differ): each is placed in a named thread, each frame is named,
    there are some."""
    return all(s['thread'] for s in doc['samples']), \
        all(f['name'] for s in doc['samples'] for f in s['frames']), len(doc['samples']) > 0


SHAPE = {'counters': counters_shape, 'samples': samples_shape}


def json_of(cmd, path, drop=()):
    cp = run([CYG, cmd, '--format=json', path])
    if cp.returncode:
        return None, cp.stderr
    try:
        doc = json.loads(cp.stdout)
        return SHAPE[cmd](doc) if cmd in SHAPE else norm(doc, drop), ''
    except (ValueError, KeyError, TypeError) as e:
        return None, str(e)


def replay_of(path):
    """The call trace without durations and thread ids."""
    cp = run([CYG, 'replay', path])
    if cp.returncode:
        return None
    return [ln.split('|', 1)[1] for ln in cp.stdout.splitlines() if '|' in ln]


def send(name, rec_args, prog, out=None, env=None):
    """record --send PROG to a fresh receiver, from an empty directory.
    Returns (receiver rc, receiver stderr, record result, files left where
    record ran)."""
    out = out or os.path.join(TMP, name + '.recv')
    p, port, line = start_receiver(out)
    if port is None:
        return None, line, None, None
    cwd = os.path.join(TMP, name + '.cwd')
    os.mkdir(cwd)
    rec = run([CYG, 'record', '--send', '127.0.0.1:%d' % port, '--token-file', TOK] +
              rec_args + ['--'] + prog, cwd=cwd, env=env)
    rc, err = finish(p)
    return rc, err, rec, os.listdir(cwd)


def test_equal(name, rec_args, prog, cmds=('report', 'info'), replay=False, drop=()):
    local = os.path.join(TMP, name + '.local')
    loc = run([CYG, 'record', '-q', '-o', local] + rec_args + ['--'] + prog)
    rc, err, rec, left = send(name, rec_args, prog)
    if rec is None:
        ok(False, '%s: receiver started' % name, err)
        return
    ok(rec.returncode == 0 and rc == 0 and loc.returncode == 0,
       '%s: record --send and receive exit 0' % name,
       'record: %s\nreceive: %s\nlocal: %s' % (rec.stderr, err, loc.stderr))
    ok('sent to 127.0.0.1:' in rec.stderr, '%s: record says where it sent' % name, rec.stderr)
    ok(left == [], '%s: record --send writes no file where it runs' % name, left)
    ok(rec.stdout == loc.stdout, '%s: the program ran as it does locally' % name,
       rec.stdout + '\n---\n' + loc.stdout)
    recv = os.path.join(TMP, name + '.recv')
    for cmd in cmds:
        a, ea = json_of(cmd, recv, drop)
        b, eb = json_of(cmd, local, drop)
        ok(a is not None and a == b, '%s: %s --format=json equals the local capture\'s' %
           (name, cmd), ea + eb + '\n' + json.dumps(a)[:1500] + '\n---\n' +
           json.dumps(b)[:1500])
    rc, text, e = info(recv)
    ok(rc == 0 and complete(text) is True, '%s: the received capture is complete' % name,
       text + e)
    if replay:
        a, b = replay_of(recv), replay_of(local)
        ok(a is not None and a == b and len(a) > 10,
           '%s: replay shows the same calls as the local capture' % name,
           '\n'.join((a or [])[:30]) + '\n---\n' + '\n'.join((b or [])[:30]))


def info(path):
    cp = run([CYG, 'info', '--format=json', path])
    return cp.returncode, cp.stdout, cp.stderr


def complete(text):
    try:
        return json.loads(text)['limits']['complete']
    except (ValueError, KeyError, TypeError):
        return None


def meta(text, key):
    try:
        return json.loads(text)['meta'].get(key)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def calls_of(path):
    cp = run([CYG, 'report', '--format=json', path])
    try:
        return {f['name']: f['calls'] for f in json.loads(cp.stdout)['functions']}
    except (ValueError, KeyError, TypeError):
        return None


def wait_file(path, secs=WAIT):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if os.path.exists(path) and os.path.getsize(path):
            return True
        time.sleep(0.05)
    return False


def wait_gone(pid, secs=WAIT):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def sampling():
    """Whether record --sample gets samples here (perf may be forbidden)."""
    path = os.path.join(TMP, 'probe.data')
    cp = run([CYG, 'record', '-q', '--sample', '-o', path, '--', A.threads])
    if cp.returncode:
        return False
    doc, _ = json_of('samples', path)
    return bool(doc and doc[2])


# ---- refusals --------------------------------------------------------------

def test_usage():
    cp = run([CYG, 'record', '--send', '127.0.0.1:1', '--', A.example])
    ok(cp.returncode == 2 and '--token-file' in cp.stderr and one_line(cp.stderr),
       'usage: --send without --token-file, exit 2', cp.stderr)
    cp = run([CYG, 'record', '--send', '127.0.0.1:1', '--token-file', TOK, '-o',
              os.path.join(TMP, 'x.data'), '--', A.example])
    ok(cp.returncode == 2 and one_line(cp.stderr), 'usage: --send with -o, exit 2', cp.stderr)
    cp = run([CYG, 'record', '--token-file', TOK, '--', A.example])
    ok(cp.returncode == 2 and one_line(cp.stderr), 'usage: --token-file without --send, exit 2',
       cp.stderr)
    cp = run([CYG, 'record', '--send', 'nowhere', '--token-file', TOK, '--', A.example])
    ok(cp.returncode == 2 and 'ADDR:PORT' in cp.stderr and one_line(cp.stderr),
       'usage: --send without a port, exit 2', cp.stderr)


def test_no_listener():
    s = socket.socket()
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    pidf = os.path.join(TMP, 'nolisten.pid')
    cp = run([CYG, 'record', '--send', '127.0.0.1:%d' % port, '--token-file', TOK, '--',
              A.longrun, pidf, '1', '1'])
    ok(cp.returncode == 1 and 'refused' in cp.stderr and one_line(cp.stderr),
       'no listener: one line, exit 1', cp.stderr)
    ok(not os.path.exists(pidf), 'no listener: the program was not started')


def test_wrong_token():
    out = os.path.join(TMP, 'wrong.recv')
    bad = write_token('bad-token', b'not-the-token-at-all')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'wrong token: receiver started', line)
        return
    pidf = os.path.join(TMP, 'wrong.pid')
    cp = run([CYG, 'record', '--send', '127.0.0.1:%d' % port, '--token-file', bad, '--',
              A.longrun, pidf, '1', '1'])
    refusal = p.stderr.readline()
    # receive goes on listening (tests/remote/stray.py): stop it
    p.terminate()
    rc, err = finish(p)
    ok(cp.returncode == 1 and 'refused the token' in cp.stderr and one_line(cp.stderr),
       'wrong token: record refused in one line, exit 1', cp.stderr)
    ok(not os.path.exists(pidf), 'wrong token: the program was not started')
    ok(refusal.startswith('receive: refused 127.0.0.1:') and
       refusal.endswith(': wrong token\n') and err == '' and rc == -signal.SIGTERM,
       'wrong token: receive refuses in one line and goes on listening', refusal + err)
    ok(not os.path.exists(out), 'wrong token: the receiver wrote nothing')


# ---- cut connections -------------------------------------------------------

def test_receiver_killed():
    out = os.path.join(TMP, 'rkill.recv')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'receiver killed: receiver started', line)
        return
    pidf = os.path.join(TMP, 'rkill.pid')
    rec = subprocess.Popen([CYG, 'record', '--send', '127.0.0.1:%d' % port, '--token-file',
                            TOK, '--', A.longrun, pidf, '20', '2000'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = rec.stdout.readline()  # round 1 done: the stream is under way
    p.kill()
    p.wait()
    try:
        out_rest, err = rec.communicate(timeout=WAIT)
    except subprocess.TimeoutExpired:
        rec.kill()
        out_rest, err = rec.communicate()
    ok(first.startswith('longrun: round='), 'receiver killed: the program was running', first)
    ok(rec.returncode == 1 and 'lost' in err and one_line(err),
       'receiver killed: record says so in one line, exit 1', err)
    ok('exit status 0' in err, 'receiver killed: the program\'s exit status is reported', err)
    ok('longrun: done rounds=20 work=40000' in out_rest,
       'receiver killed: the program ran on to its end', out_rest[-500:])


def test_sender_killed():
    out = os.path.join(TMP, 'skill.recv')
    p, port, line = start_receiver(out)
    if port is None:
        ok(False, 'sender killed: receiver started', line)
        return
    pidf = os.path.join(TMP, 'skill.pid')
    env = dict(os.environ, CYGPROF_CHECKPOINT_MS='50')
    rec = subprocess.Popen([CYG, 'record', '--send', '127.0.0.1:%d' % port, '--token-file',
                            TOK, '--', A.longrun, pidf, '30', '2000'],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    # kill it once the receiver has a checkpoint with rounds in it (the
    # receiver's file is readable while it grows)
    lines = [rec.stdout.readline()]
    end = time.monotonic() + WAIT
    while time.monotonic() < end and rec.poll() is None:
        calls = calls_of(out) if os.path.exists(out) else None
        if calls and calls.get('round_', 0) >= 1 and calls.get('work', 0) >= 1:
            break
        time.sleep(0.1)
    rec.send_signal(signal.SIGKILL)
    rec.communicate()
    rc, err = finish(p)
    ok(all(ln.startswith('longrun: round=') for ln in lines), 'sender killed: it was running',
       ''.join(lines))
    ok(rc == 1 and 'connection lost' in err and 'incomplete' in err and one_line(err),
       'sender killed: receive says so in one line, exit 1', err)
    irc, text, e = info(out)
    ok(irc == 0 and complete(text) is False, 'sender killed: info reads it, incomplete',
       text + e)
    ok((meta(text, 'remote_error') or '').startswith('connection lost'),
       'sender killed: info shows remote_error', text)
    calls = calls_of(out)
    ok(calls is not None and calls.get('main') == 1 and calls.get('round_', 0) >= 1 and
       calls.get('work', 0) >= 1, 'sender killed: report reads what arrived', calls)
    # the orphaned program finishes on its own
    pid = None
    try:
        with open(pidf) as f:
            pid = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        pass
    ok(pid is not None and wait_gone(pid), 'sender killed: the program ran to its end')


def test_max_bytes():
    out = os.path.join(TMP, 'max.recv')
    p, port, line = start_receiver(out, ['--max-bytes', '1K'])
    if port is None:
        ok(False, 'max-bytes: receiver started', line)
        return
    rec = run([CYG, 'record', '--send', '127.0.0.1:%d' % port, '--token-file', TOK,
               '--timeline', '--', A.longrun, os.path.join(TMP, 'max.pid'), '10', '200'])
    rc, err = finish(p)
    ok(rc == 1 and '--max-bytes' in err and one_line(err),
       'max-bytes: receive cuts the stream in one line, exit 1', err)
    irc, text, e = info(out)
    ok(irc == 0 and complete(text) is False, 'max-bytes: what came first is kept, incomplete',
       text + e)
    ok(rec.returncode == 1 and 'lost' in rec.stderr and one_line(rec.stderr),
       'max-bytes: record says the connection was lost, exit 1', rec.stderr)
    ok('longrun: done rounds=10 work=2000' in rec.stdout, 'max-bytes: the program ran on',
       rec.stdout[-300:])


with tempfile.TemporaryDirectory() as TMP:
    TOK = write_token('token', TOKEN)
    test_usage()
    test_no_listener()
    test_wrong_token()
    test_equal('calls', [], [A.example], replay=False)
    test_equal('calls-timeline', ['--timeline'], [A.example], replay=True)
    test_equal('threads', ['--timeline'], [A.threads])
    test_equal('memory', ['--memory', '--timeline'], [A.mem],
               cmds=('report', 'info', 'memory'), replay=True)
    test_equal('counters', ['--counters=5ms'],
               [A.longrun, os.path.join(TMP, 'counters.pid'), '3', '20000'],
               cmds=('report', 'info', 'counters'))
    if sampling():
        # what perf sampled differs from run to run: the report's figures
        # of samples are left out (samples_shape() compares the rest)
        test_equal('samples', ['--sample'], [A.threads], cmds=('report', 'info', 'samples'),
                   drop=('samples', 'uninstrumented'))
    else:
        print('# perf sampling is not allowed here: the samples comparison is skipped')
    test_receiver_killed()
    test_sender_killed()
    test_max_bytes()

print('1..%d' % len(results))
sys.exit(0 if all(results) else 1)
