#!/usr/bin/env python3
"""client_test.py: the Python client (clients/python/temper_client.py). Its retries against a
scripted HTTP server (429 and 503 with Retry-After are retried and Retry-After is waited; a 400 is
not retried; a refused connection is retried, then raised), then against a real `temper serve` on
PoCL: evaluate, evaluate_many, the asyncio client, compute_score for a correct kernel, a compile
error, another task, no kernel at all, a kernel the server cannot take (too large, a NUL, a lone
surrogate), and the RL-loop example.

usage: client_test.py TEMPER_BINARY SOURCE_DIR
"""
import asyncio
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

TEMPER, SRC = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SRC, "clients", "python"))
import temper_client as tc  # noqa: E402

WORK = tempfile.mkdtemp(prefix="temper-client-test-")
failures = []


def check(cond, what, detail=""):
    print(("ok   " if cond else "FAIL ") + what + ("" if cond or not detail else ": " + str(detail)[:500]))
    if not cond:
        failures.append(what)


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each request with the next (status, headers, body) of the class's script."""
    script, seen = [], []

    def handle_one(self):
        n = int(self.headers.get("Content-Length") or 0)
        Scripted.seen.append((self.command, self.path, self.rfile.read(n)))
        status, headers, body = Scripted.script.pop(0)
        data = json.dumps(body).encode()
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = handle_one

    def log_message(self, *args):
        pass


def retries():
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = "http://127.0.0.1:%d" % srv.server_address[1]
    c = tc.Client(url, max_retries=4, backoff_s=0.01, max_backoff_s=0.05)
    busy = {"error": {"kind": "queue_full", "message": "full"}}
    Scripted.script = [(429, {"Retry-After": "1"}, busy), (503, {"Retry-After": "1"}, busy),
                       (202, {}, {"batch": "b", "items": [{"id": "x", "status": "queued"}]})]
    Scripted.seen = []
    t = time.monotonic()
    answer = c.submit([{"source": "s", "lang": "opencl"}])
    took = time.monotonic() - t
    check(answer["items"][0]["status"] == "queued" and len(Scripted.seen) == 3, "429 and 503 are retried", Scripted.seen)
    check(took >= 2.0, "Retry-After is waited (2 s at least)", took)
    ids = {json.loads(b)["items"][0]["id"] for _, _, b in Scripted.seen}
    check(len(ids) == 1 and next(iter(ids)).startswith("py-"), "a retried submission keeps its client id", ids)
    Scripted.script = [(400, {}, {"error": {"kind": "invalid_request", "message": "bad"}})]
    Scripted.seen = []
    try:
        c.get("x")
        check(False, "a 400 raises")
    except tc.TemperError as e:
        check(e.status == 400 and e.kind == "invalid_request" and len(Scripted.seen) == 1, "a 400 is not retried", e)
    failed = {"id": "x", "status": "failed", "error": {"kind": "no_device", "message": "m", "retryable": True}}
    Scripted.script = [(200, {}, {"batch": "b", "items": [failed]})]
    try:
        c.evaluate_item({"id": "x", "source": "s", "lang": "cuda"})
        check(False, "a failed job raises TemperFailure")
    except tc.TemperFailure as e:
        check(e.kind == "no_device" and e.retryable, "a failed job raises TemperFailure, not a verdict", e)
    srv.shutdown()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = tc.Client("http://127.0.0.1:%d" % port, max_retries=2, backoff_s=0.01, max_backoff_s=0.02)
    try:
        c.tasks()
        check(False, "a refused connection raises")
    except tc.TemperError as e:
        check(e.kind == "connection", "a refused connection is retried, then raised", e)
    check(tc.Client(backoff_s=1, max_backoff_s=4)._backoff(10, "7") == 7.0, "the backoff is at least Retry-After")
    d = [tc.Client(backoff_s=1, max_backoff_s=4)._backoff(10) for _ in range(200)]
    check(all(0 <= x <= 4 for x in d) and max(d) - min(d) > 1, "the backoff is full jitter under its cap", d[:5])


def real_server():
    env = dict(os.environ, TEMPER_HOME=os.path.join(WORK, "home"), TEMPER_TASKS=os.path.join(SRC, "tasks"))
    os.makedirs(env["TEMPER_HOME"])
    log = open(os.path.join(WORK, "serve.log"), "w+")
    p = subprocess.Popen([TEMPER, "serve", "--listen", "127.0.0.1:0", "--store", os.path.join(WORK, "s.db"),
                          "--device", "opencl:0"],
                         stdout=log, stderr=subprocess.STDOUT, env=env)
    port = None
    for _ in range(300):
        log.seek(0)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.2)
    if not port:
        log.seek(0)
        raise SystemExit("FAIL the server did not start: " + log.read())
    try:
        url = "http://127.0.0.1:%d" % port
        c = tc.Client(url, poll_s=20)
        naive = open(os.path.join(SRC, "tasks/L1/vector_add/naive.cl")).read()
        broken = open(os.path.join(SRC, "tests/cases/opencl/compile_error.cl")).read()
        r = c.evaluate(naive, lang="opencl", options={"timing": False})
        check(r["verdict"] == "correct" and r["task"] == "vector_add", "evaluate returns the result record", r.get("verdict"))
        rs = c.evaluate_many([{"source": naive, "lang": "opencl", "options": {"timing": False}},
                              {"source": broken, "lang": "opencl", "options": {"timing": False}}])
        check([x["verdict"] for x in rs] == ["correct", "compile_error"], "evaluate_many keeps the order", rs)

        async def run_async():
            async with tc.AsyncClient(url, concurrency=4) as ac:
                return await ac.evaluate_many([{"source": naive + "\n// %d\n" % i, "lang": "opencl",
                                                "options": {"timing": False}} for i in range(3)])

        rs = asyncio.run(run_async())
        check([x["verdict"] for x in rs] == ["correct"] * 3, "the asyncio client evaluates concurrently", rs)
        os.environ["TEMPER_URL"] = url
        answer = "My kernel:\n```opencl\n%s```\nDone." % naive
        timed = tc.compute_score("temper", answer, "vector_add", {"lang": "opencl"})
        check(0.5 <= timed <= 2.0, "compute_score of a correct, timed kernel is 1 +- its speedup's share", timed)
        check(tc.compute_score("temper", answer, "vector_add", {"lang": "opencl", "options": {"timing": False}}) == 1.0,
              "compute_score of a correct kernel without timing is 1")
        check(tc.compute_score("temper", "```opencl\n%s```" % broken, "vector_add", {"lang": "opencl"}) == 0.0,
              "compute_score of a compile error is 0")
        check(tc.compute_score("temper", answer, "softmax", {"lang": "opencl"}) == 0.0,
              "compute_score of a kernel for another task is 0")
        check(tc.compute_score("temper", "I could not write it.", "vector_add", {"lang": "opencl"}) == 0.0,
              "compute_score of an answer without a kernel is 0")
        # an answer the server cannot take is the policy's failure (a reward of 0), not an exception
        huge = "```opencl\n%s// %s\n```" % (naive, "x" * (1 << 20))
        check(tc.compute_score("temper", huge, "vector_add", {"lang": "opencl"}) == 0.0,
              "compute_score of a kernel over the server's source limit is 0")
        for what, junk in (("a NUL", "\x00"), ("a lone surrogate", "\ud800")):
            check(tc.compute_score("temper", "```opencl\n%s// %s\n```" % (naive, junk), "vector_add",
                                   {"lang": "opencl"}) == 0.0, "compute_score of a kernel holding %s is 0" % what)
        # the language from the kernel itself when the fence does not say it (```c) and no lang is given
        check(tc.compute_score("temper", "```c\n%s```" % naive, "vector_add", {"options": {"timing": False}}) == 1.0,
              "compute_score of an OpenCL kernel in a ```c fence, no lang given, is 1")
        try:
            tc.compute_score("temper", answer, "Vector Add!", {"lang": "opencl"})
            check(False, "a ground truth that is not a task name raises ValueError")
        except ValueError:
            check(True, "a ground truth that is not a task name raises ValueError")
        ex = subprocess.run([sys.executable, os.path.join(SRC, "clients/python/example_rl_loop.py"), "--steps", "2",
                             "--rollouts", "3"], env=dict(os.environ, TEMPER_URL=url), capture_output=True, text=True,
                            timeout=300)
        check(ex.returncode == 0 and ex.stdout.count("rewards:") == 2, "the RL-loop example runs",
              ex.stdout + ex.stderr)
        check(ex.stdout.count("'1.00'") >= 3, "the RL-loop example's correct variants score 1 (its grid follows its block)",
              ex.stdout)
    finally:
        p.send_signal(signal.SIGTERM)
        check(p.wait(timeout=120) == 0, "the server stops with status 0")


try:
    retries()
    real_server()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
