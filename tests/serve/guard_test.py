#!/usr/bin/env python3
"""guard_test.py: `temper serve` against hostile clients, with real servers on loopback (standard
library only; floods bounded in count and time, on 127.0.0.1 and 127.0.0.2 only):
  - the token is checked before a body is read: a 16 MiB upload without it is answered 401 before
    its body is sent, and 16 of them at once do not grow the server (its peak memory); a body
    over the limit is refused (413) from its Content-Length;
  - 300 connections from one address sending a byte a second take neither /healthz nor an
    authorised client's place (connections per client address), and each is cut once its request
    has not arrived whole within --request-timeout, bytes or not;
  - an id with %00 is refused, not looked up (or cancelled) cut short at the NUL;
  - an origin with control characters is refused, and `temper history` shows stored text with
    escapes as \\xNN, never raw;
  - an id taken by another item is refused (409), never answered with that item's result, on the
    store's queue and on Redis;
  - a refused submission queues nothing: a store file that cannot grow (RLIMIT_FSIZE) or a Redis
    at its maxmemory answers 503, and none of that request's items is queued.
Redis's parts run when redis-server is there ($REDIS_SERVER, else PATH).

usage: guard_test.py TEMPER_BINARY SOURCE_DIR
"""
import json
import os
import re
import resource
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

TEMPER, SRC = sys.argv[1], sys.argv[2]
WORK = tempfile.mkdtemp(prefix="temper-guard-test-")
ENV = dict(os.environ, TEMPER_HOME=os.path.join(WORK, "home"), TEMPER_TASKS=os.path.join(SRC, "tasks"))
TOKEN = "guard-token-0123456789"
failures = []


def check(cond, what, detail=""):
    if cond:
        print("ok   " + what)
    else:
        print("FAIL " + what + (": " + str(detail)[:600] if detail else ""))
        failures.append(what)
    return cond


class Server:
    """A `temper serve` process on a free loopback port."""

    def __init__(self, *args, store="store.db", ready=True, fsize=None):
        self.log = open(os.path.join(WORK, "serve-%d.log" % time.time_ns()), "w+")
        cmd = [TEMPER, "serve", "--listen", "127.0.0.1:0"] + list(args)
        if not any(a == "--redis" for a in args):
            cmd += ["--store", os.path.join(WORK, store), "--device", "opencl:0"]

        def limit():  # a file that cannot grow past fsize bytes, as on a full disk
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=ENV,
                                     preexec_fn=limit if fsize else None)
        self.port = None
        deadline = time.time() + 60
        while time.time() < deadline and self.proc.poll() is None:
            self.log.seek(0)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.log.read())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.1)
        if self.port is None:
            self.log.seek(0)
            raise SystemExit("FAIL the server did not start: " + self.log.read())
        while ready and time.time() < deadline and self.call("GET", "/readyz", token=TOKEN)[0] != 200:
            time.sleep(0.2)

    def call(self, method, path, body=None, token=None, timeout=120, source=None):
        """(status, parsed JSON or text); status 0 when the connection failed or timed out"""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        except (OSError, urllib.error.URLError) as e:
            return 0, str(e)
        try:
            return status, json.loads(text)
        except ValueError:
            return status, text

    def peak_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))

    def stop(self, sig=signal.SIGTERM):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout=120)


def source(path, salt=""):
    with open(os.path.join(SRC, path)) as f:
        return f.read() + salt


def item(path, id=None, salt="", **extra):
    it = {"source": source(path, salt), "lang": "opencl", "options": {"timing": False}}
    if id:
        it["id"] = id
    it.update(extra)
    return it


GOOD, BAD = "tasks/L1/vector_add/naive.cl", "tests/cases/opencl/partial_write.cl"


def raw_request(port, head, body_bytes=0, src_addr="127.0.0.1", timeout=30):
    """Sends a request's head (and body_bytes of body, if any); returns the first bytes answered
    (b"" when the server closed without a word, None when nothing came within timeout)."""
    s = socket.socket()
    s.bind((src_addr, 0))
    s.settimeout(timeout)
    try:
        s.connect(("127.0.0.1", port))
        s.sendall(head)
        chunk = b"x" * (1 << 20)
        sent = 0
        while sent < body_bytes:
            s.sendall(chunk[:min(len(chunk), body_bytes - sent)])
            sent += len(chunk)
        return s.recv(200)
    except socket.timeout:
        return None
    except OSError:
        try:
            return s.recv(200)
        except OSError:
            return b""
    finally:
        s.close()


def token_before_body():
    tok = os.path.join(WORK, "token")
    with open(tok, "w") as f:
        f.write(TOKEN + "\n")
    s = Server("--token-file", tok, "--in-flight", "2")  # the default body limit: 16 MiB
    head = (b"POST /v1/evaluations HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n")
    got = raw_request(s.port, head % (16 << 20), timeout=30)
    check(got is not None and got.startswith(b"HTTP/1.1 401"),
          "a 16 MiB upload without the token is answered 401 before its body is sent", got)
    got = raw_request(s.port, (head[:-2] + b"Authorization: Bearer " + TOKEN.encode() + b"\r\n\r\n") % (17 << 20),
                      timeout=30)
    check(got is not None and got.startswith(b"HTTP/1.1 413"),
          "a body over --max-body-bytes (16 MiB) is refused (413) from its Content-Length, before it is read", got)
    # 16 unauthenticated 16 MiB uploads at once, whole bodies sent: the server buffers none of them
    before = s.peak_kib()
    threads = [threading.Thread(target=raw_request, args=(s.port, head % (16 << 20), 16 << 20)) for _ in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    grown = (s.peak_kib() - before) // 1024
    check(grown < 64, "16 unauthenticated 16 MiB uploads at once grow the server's peak memory by %d MiB (< 64)" % grown)
    check(s.call("GET", "/v1/workers", token=TOKEN)[0] == 200, "the right token is still let in")
    return s


def slow_flood(s):
    """300 connections from 127.0.0.2, each sending one byte a second; s runs with
    --request-timeout 5 and a token."""
    socks, refused = [], 0
    for _ in range(300):
        c = socket.socket()
        c.bind(("127.0.0.2", 0))
        c.settimeout(5)
        try:
            c.connect(("127.0.0.1", s.port))
            c.sendall(b"G")
            socks.append(c)
        except OSError:
            refused += 1
            c.close()
    print("     flood: %d connections open, %d refused at once" % (len(socks), refused))
    line = b"ET /v1/workers HTTP/1.1\r\nX-Slow: " + b"a" * 200
    started = time.time()
    st, _ = s.call("GET", "/healthz", timeout=30)
    check(st == 200, "/healthz is answered during a slow flood from another address", st)
    st, _ = s.call("GET", "/v1/workers", token=TOKEN, timeout=30)
    check(st == 200, "an authorised client is answered during a slow flood from another address", st)
    i = 0
    while time.time() - started < 14:  # the deadline is 5 s: every one is cut well before the end
        for c in socks:
            try:
                c.send(line[i % len(line):i % len(line) + 1])
            except OSError:
                pass
        i += 1
        time.sleep(1)
    still = 0
    for c in socks:
        c.setblocking(False)
        try:
            still += c.recv(1) != b""  # b"": closed by the server
        except BlockingIOError:
            still += 1
        except OSError:
            pass
        c.close()
    check(still == 0, "every slow connection is cut once its request has not arrived within --request-timeout "
          "(%d of %d still open after 14 s, a byte a second)" % (still, len(socks)))


def ids_and_origin(s):
    st, body = s.call("POST", "/v1/evaluations", {"items": [item(GOOD, id="nul-1")]}, token=TOKEN)
    check(st == 202, "a job to look up is queued", (st, body))
    for method, path in (("GET", "/v1/evaluations/nul-1%00zzz"), ("DELETE", "/v1/evaluations/nul-1%00zzz"),
                         ("GET", "/v1/batches/b%00"), ("GET", "/v1/evaluations/nul-1?wait_s=1%00")):
        st, body = s.call(method, path, token=TOKEN)
        check(st == 400 and body["error"]["kind"] in ("invalid_id", "invalid_request"),
              "%s %s is refused (400), not cut at the NUL" % (method, path), (st, body))
    st, body = s.call("GET", "/v1/evaluations/nul-1", token=TOKEN)
    check(st == 200 and body["status"] != "cancelled", "nul-1 was not cancelled by the id with %00", body)
    evil = "rl\u001b]0;pwned\u0007\u001b[2J\u009b31m"
    st, body = s.call("POST", "/v1/evaluations", {"items": [item(GOOD, id="o-1", salt="\n// o\n", origin=evil)]},
                      token=TOKEN)
    check(st == 400 and "origin" in body["error"]["message"], "an origin with control characters is refused", (st, body))


def id_conflict(s, token=None, wait=True):
    """One id, two items: the second is refused, never answered with the first's result."""
    st, body = s.call("POST", "/v1/evaluations", {"items": [item(GOOD, id="shared-1")], "wait_s": 60 if wait else 0},
                      token=token)
    check(st in (200, 202), "the first client's job is queued", (st, body))
    st, body = s.call("POST", "/v1/evaluations", {"items": [item(BAD, id="shared-1")], "wait_s": 60 if wait else 0},
                      token=token)
    check(st == 409 and body["error"]["kind"] == "id_conflict" and "items[0]" in body["error"]["message"],
          "another item under a taken id is refused (409 id_conflict), not answered with the first's result",
          (st, body))
    lineage = item(GOOD, id="shared-1", origin="rl-worker-2")
    st, body = s.call("POST", "/v1/evaluations", {"items": [lineage]}, token=token)
    check(st == 409, "the same source under a taken id but another origin is refused too", (st, body))
    st, body = s.call("POST", "/v1/evaluations", {"items": [item(GOOD, id="shared-1")], "wait_s": 60 if wait else 0},
                      token=token)
    check(st in (200, 202) and body["items"][0]["id"] == "shared-1", "the same item again is the existing job (a retry)",
          (st, body))
    if wait:
        check(st == 200 and body["items"][0]["result"]["verdict"] == "correct", "the retry gets its own result", body)
    st, body = s.call("POST", "/v1/evaluations", {"items": [item(GOOD, id="fresh-2", salt="\n// 2\n"),
                                                            item(BAD, id="shared-1")]}, token=token)
    check(st == 409 and "items[1]" in body["error"]["message"], "a request holding a taken id is refused whole", (st, body))
    check(s.call("GET", "/v1/evaluations/fresh-2", token=token)[0] == 404, "... and its other items are not queued")


def fill_until_refused(s, prefix, token=None, requests=40, items=40):
    """Submits requests of big items until one is answered 503; returns (its ids, ids queued before)."""
    queued = []
    for r in range(requests):
        ids = ["%s-%d-%d" % (prefix, r, i) for i in range(items)]
        its = [item(GOOD, id=x, salt="\n// %s %s\n" % (x, "p" * 15000)) for x in ids]
        st, body = s.call("POST", "/v1/evaluations", {"items": its}, token=token, timeout=60)
        if st == 503:
            print("     request %d answered 503: %s" % (r, str(body)[:300]))
            return ids, queued
        if st != 202:
            print("     request %d answered %s: %s" % (r, st, str(body)[:300]))
            return None, queued
        queued += ids
    return None, queued


def full_store():
    """The store's queue on a disk that fills: a 503 queues nothing of its request."""
    # the server's only worker holds a job that spins (one work-item) until the server is killed, so
    # that it takes none of the filling jobs
    spin = source(GOOD).replace("int i = get_global_id(0);",
                                "int i = get_global_id(0);\n    if (i == 0) { volatile int s = 0; while (a[0] == a[0]) s++; }")
    check("while (a[0] == a[0])" in spin, "the spinning candidate is made")
    s = Server("--in-flight", "1", "--launch-timeout", "600", store="full.db", fsize=3 << 20)
    st, _ = s.call("POST", "/v1/evaluations", {"items": [{"id": "spin", "source": spin, "lang": "opencl"}]})
    deadline = time.time() + 120
    while time.time() < deadline and s.call("GET", "/v1/evaluations/spin")[1].get("status") == "queued":
        time.sleep(0.2)
    refused, queued = fill_until_refused(s, "full")
    s.stop(signal.SIGKILL)
    check(refused is not None, "the store that cannot grow answers 503", s.log.name)
    if refused:
        db = sqlite3.connect(os.path.join(WORK, "full.db"))
        have = {r[0] for r in db.execute("SELECT id FROM serve_jobs")}
        db.close()
        check(not have & set(refused), "nothing of the refused request is queued (%d of %d there)"
              % (len(have & set(refused)), len(refused)))
        check(set(queued) <= have, "every item of the accepted requests is there")


def history_escapes(s):
    """A stored text with escapes (here a candidate file's name) is shown as \\xNN by temper history."""
    env = dict(ENV, TEMPER_HOME=os.path.join(WORK, "hist"))
    path = os.path.join(WORK, "odd\x1b]0;pwned\x07\x1b[2Jname.cl")
    shutil.copy(os.path.join(SRC, GOOD), path)
    subprocess.run([TEMPER, "eval", "--no-timing", path], env=env, capture_output=True, timeout=300)
    r = subprocess.run([TEMPER, "history"], env=env, capture_output=True, timeout=60)
    check(r.returncode == 0 and b"\x1b" not in r.stdout and b"\x07" not in r.stdout and b"\\x1b]0;pwned" in r.stdout,
          "temper history shows control characters as \\xNN, never raw", r.stdout[-400:])


def redis_parts():
    redis = os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
    if not redis:
        print("skip: no redis-server (the Redis parts)")
        return
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    rdir = os.path.join(WORK, "redis")
    os.makedirs(rdir)
    rp = subprocess.Popen([redis, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                           "--dir", rdir, "--maxmemory", "3mb", "--maxmemory-policy", "noeviction"],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        s = Server("--redis", "redis://127.0.0.1:%d/0?prefix=guard" % port, ready=False)
        id_conflict(s, wait=False)
        refused, queued = fill_until_refused(s, "oom")
        check(refused is not None, "a Redis at its maxmemory answers 503")
        if refused:
            there = [x for x in refused if s.call("GET", "/v1/evaluations/" + x)[0] != 404]
            check(not there, "nothing of the refused request is queued on Redis (%d of %d there)"
                  % (len(there), len(refused)))
            missing = [x for x in queued[:5] + queued[-5:] if s.call("GET", "/v1/evaluations/" + x)[0] != 200]
            check(not missing, "the accepted requests' items are there", missing)
        s.stop()
    finally:
        rp.terminate()
        rp.wait(timeout=30)


def main():
    s = token_before_body()
    s.stop()
    tok = os.path.join(WORK, "token")
    s = Server("--token-file", tok, "--request-timeout", "5", "--in-flight", "2", store="flood.db")
    slow_flood(s)
    ids_and_origin(s)
    id_conflict(s, token=TOKEN)
    s.stop()
    history_escapes(s)
    full_store()
    redis_parts()


try:
    main()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
