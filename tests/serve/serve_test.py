#!/usr/bin/env python3
"""serve_test.py: `temper serve` as a client meets it, with real processes on PoCL (standard
library only). A batch returns every result with the verdict each candidate file expects; a
resubmitted client id returns the existing job (and is refused with another item); a repeated kernel comes from the cache at
submission; a long poll returns when the job is done; cancel; `kill -9` of the server in the middle
of a batch and a restart lose nothing; bad JSON, oversized sources and bodies, too many items,
unknown tasks and knobs, path-like ids, a full queue (429 with Retry-After), missing and wrong
tokens each get their 4xx; a job for a task whose baseline is wrong fails as the task's error and
stores nothing; a non-loopback address without a token is refused at start; a kernel that kills
the server (TEMPER_TEST_WORKER_DIE_ON) takes none of the honest jobs beside it to the dead letters:
they are re-run alone and answered, and it alone is dead-lettered.

usage: serve_test.py TEMPER_BINARY SOURCE_DIR
"""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

TEMPER, SRC = sys.argv[1], sys.argv[2]
WORK = tempfile.mkdtemp(prefix="temper-serve-test-")
ENV = dict(os.environ, TEMPER_HOME=os.path.join(WORK, "home"), TEMPER_TASKS=os.path.join(SRC, "tasks"))
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

    def __init__(self, *args, store="store.db", expect_ready=True, env=None):
        self.log = open(os.path.join(WORK, "serve-%d.log" % time.time_ns()), "w+")
        cmd = [TEMPER, "serve", "--listen", "127.0.0.1:0", "--store", os.path.join(WORK, store),
               "--in-flight", "2", "--launch-timeout", "20", "--device", "opencl:0"] + list(args)
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env or ENV)
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
        while expect_ready and time.time() < deadline:
            if self.call("GET", "/readyz")[0] == 200:
                break
            time.sleep(0.2)

    def call(self, method, path, body=None, token=None, raw=None, timeout=120):
        """(status, parsed JSON or text, headers)"""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        req = urllib.request.Request("http://127.0.0.1:%d%s" % (self.port, path), data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if token:
            req.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, text, headers = r.status, r.read().decode(), r.headers
        except urllib.error.HTTPError as e:
            status, text, headers = e.code, e.read().decode(), e.headers
        try:
            return status, json.loads(text), headers
        except ValueError:
            return status, text, headers

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=120)


def source(path):
    with open(os.path.join(SRC, path)) as f:
        return f.read()


def expected(text):
    m = re.search(r"@expect (\w+)", text)
    return m.group(1) if m else "correct"


def item(path, id=None, salt="", **extra):
    text = source(path) + salt
    it = {"source": text, "lang": "opencl", "options": {"timing": False}}
    if id:
        it["id"] = id
    it.update(extra)
    return it


def broken_task(root, name, good, bad):
    """A copy of vector_add named name under root/L1 whose OpenCL baseline has good replaced by bad;
    returns a correct candidate for it (the suite's naive.cl, naming the task)."""
    folder = os.path.join(root, "L1", name)
    os.makedirs(folder)
    for f in ("reference.c", "naive.cu"):
        shutil.copy(os.path.join(SRC, "tasks/L1/vector_add", f), folder)
    with open(os.path.join(folder, "task.json"), "w") as f:
        f.write(source("tasks/L1/vector_add/task.json").replace('"name": "vector_add"', '"name": "%s"' % name))
    naive = source("tasks/L1/vector_add/naive.cl")
    with open(os.path.join(folder, "naive.cl"), "w") as f:
        f.write(naive.replace(good, bad))
    return naive.replace("@temper task vector_add", "@temper task " + name)


def wait_batch(s, batch, n, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        st, body, _ = s.call("GET", "/v1/batches/" + batch)
        if st == 200 and body["counts"]["queued"] + body["counts"]["running"] == 0 and len(body["items"]) == n:
            return body
        time.sleep(0.3)
    return s.call("GET", "/v1/batches/" + batch)[1]


def main():
    files = ["tasks/L1/vector_add/naive.cl", "tasks/L1/vector_add/fast.cl", "tests/cases/opencl/partial_write.cl",
             "tests/cases/opencl/compile_error.cl", "tests/cases/opencl/malformed_directive.cl",
             "tests/cases/opencl/runtime_crash.cl"]
    s = Server()

    # a batch returns every result, each with its file's verdict, as `temper eval --json` prints it
    items = [item(f, id="f%d" % i) for i, f in enumerate(files)]
    st, body, _ = s.call("POST", "/v1/evaluations", {"items": items, "batch": "first"})
    check(st == 202 and [x["id"] for x in body["items"]] == ["f%d" % i for i in range(len(files))],
          "a batch is accepted with 202 and every id", body)
    done = wait_batch(s, "first", len(files))
    check(done["counts"]["done"] == len(files), "every job of the batch is done", done.get("counts"))
    for i, f in enumerate(files):
        v = done["items"][i]
        want = expected(source(f))
        got = v.get("result", {}).get("verdict")
        check(v["id"] == "f%d" % i and got == want, "%s: verdict %s" % (os.path.basename(f), want), v)
    r0 = done["items"][0]["result"]
    check("store_id" in r0 and "checks" in r0 and r0.get("task") == "vector_add",
          "a result is the record of temper eval --json", sorted(r0)[:20])

    # a resubmitted client id with the same item returns the existing job, unchanged; with another
    # item it is refused, never answered with the first item's result
    st, body, _ = s.call("POST", "/v1/evaluations", {"items": [item(files[0], id="f0")], "wait_s": 5})
    check(st == 200 and body["items"][0]["result"]["verdict"] == "correct", "a resubmitted id returns the existing job",
          body)
    st, body, _ = s.call("POST", "/v1/evaluations", {"items": [item(files[2], id="f0")], "wait_s": 5})
    check(st == 409 and body["error"]["kind"] == "id_conflict", "an id resubmitted with another item is refused (409)",
          body)

    # a repeated kernel under a new id comes from the cache at submission
    st, body, _ = s.call("POST", "/v1/evaluations", {"items": [item(files[0], id="again")]})
    check(st == 202 and body["items"][0]["status"] == "done", "a repeated kernel is done at submission", body)
    st, m, _ = s.call("GET", "/metrics")
    check(st == 200 and re.search(r'temper_serve_cache_hits_total\{where="submission"\} [1-9]', m),
          "/metrics counts the cache hit", m[:300])
    for name in ["temper_serve_submitted_total 7", 'temper_serve_completed_total{verdict="compile_error"} 1',
                 "temper_serve_phase_seconds_bucket{phase=\"evaluate\"", "temper_serve_queue_depth{state=\"queued\"}",
                 'temper_serve_workers{device="opencl:0",state="idle"}', "temper_serve_dead_letters_total 0"]:
        check(name in m, "/metrics has " + name, m[:2000])
    st, ws, _ = s.call("GET", "/v1/workers")
    check(st == 200 and len(ws["workers"]) == 1 and ws["workers"][0]["device"] == "opencl:0", "/v1/workers", ws)
    st, ts, _ = s.call("GET", "/v1/tasks")
    check(st == 200 and any(t["name"] == "vector_add" for t in ts["tasks"]), "/v1/tasks lists vector_add")
    st, many, _ = s.call("POST", "/v1/evaluations:get", {"ids": ["f1", "again", "nobody"]})
    check(st == 200 and [x["id"] for x in many["items"]] == ["f1", "again"] and many["not_found"] == ["nobody"],
          "evaluations:get answers known ids and names the unknown", many)

    # long poll: returns the result once done, not after the full wait
    st, body, _ = s.call("POST", "/v1/evaluations", {"items": [item(files[0], id="lp", salt="\n// long poll\n")]})
    st, v, _ = s.call("GET", "/v1/evaluations/lp?wait_s=60")
    check(st == 200 and v["status"] == "done" and v["result"]["verdict"] == "correct", "a long poll returns the result", v)

    # cancel: a job cancelled before its outcome stays cancelled
    its = [item(files[0], id="c%d" % i, salt="\n// cancel %d\n" % i) for i in range(3)]
    s.call("POST", "/v1/evaluations", {"items": its, "batch": "cancels"})
    st, v, _ = s.call("DELETE", "/v1/evaluations/c2")
    check(st == 200 and v["status"] == "cancelled", "DELETE cancels a job", v)
    done = wait_batch(s, "cancels", 3)
    check([x["status"] for x in done["items"]][2] == "cancelled", "a cancelled job stays cancelled", done.get("counts"))
    check(s.call("DELETE", "/v1/evaluations/nobody")[0] == 404, "DELETE of an unknown id is 404")

    # kill -9 in the middle of a batch; a restart loses nothing
    its = [item(files[0], id="k%d" % i, salt="\n// kill %d\n" % i) for i in range(4)]
    st, body, _ = s.call("POST", "/v1/evaluations", {"items": its, "batch": "killed"})
    check(st == 202, "the batch to be interrupted is queued", body)
    time.sleep(1.0)
    s.stop(signal.SIGKILL)
    db = sqlite3.connect(os.path.join(WORK, "store.db"))
    left = dict(db.execute("SELECT state, count(*) FROM serve_jobs WHERE batch = 'killed' GROUP BY state").fetchall())
    queued = db.execute("SELECT item FROM serve_jobs WHERE id = 'k0'").fetchone()
    db.close()
    check(queued and json.loads(queued[0]).get("task") == "vector_add",
          "the queued item names the candidate's task (for a dead letter's result)", queued)
    print("     at the kill: %s" % left)
    s = Server("--max-source-bytes", "100000", "--max-body-bytes", "300000", "--max-items", "50")
    st, v, _ = s.call("GET", "/v1/evaluations/f3")
    check(st == 200 and v["result"]["verdict"] == "compile_error", "a result finished before the kill is still there", v)
    done = wait_batch(s, "killed", 4, timeout=300)
    check(done["counts"]["done"] == 4 and all(x["result"]["verdict"] == "correct" for x in done["items"]),
          "every job of the interrupted batch is done after the restart", done)
    if left.get("running"):
        m = s.call("GET", "/metrics")[1]
        check(re.search(r"temper_serve_redeliveries_total [1-9]", m), "the jobs running at the kill were handed over again",
              m[:400])

    # refusals, each a 4xx with {"error": {"kind", "message"}}
    def refused(status, kind, what, method, path, body=None, raw=None, token=None):
        st, b, h = s.call(method, path, body, raw=raw, token=token)
        ok = st == status and isinstance(b, dict) and b.get("error", {}).get("kind") == kind and b["error"]["message"]
        check(ok, "%s: %d %s" % (what, status, kind), (st, b))
        return h

    refused(400, "invalid_json", "bad JSON", "POST", "/v1/evaluations", raw=b'{"items": [')
    refused(400, "invalid_request", "no items", "POST", "/v1/evaluations", {"items": []})
    refused(400, "invalid_request", "an unknown field", "POST", "/v1/evaluations", {"items": [item(files[0])], "x": 1})
    refused(400, "invalid_request", "a bad language", "POST", "/v1/evaluations",
            {"items": [dict(item(files[0]), lang="fortran")]})
    refused(413, "source_too_large", "an oversized source", "POST", "/v1/evaluations",
            {"items": [item(files[0], salt="//" + "x" * 150000)]})
    refused(413, "payload_too_large", "an oversized body", "POST", "/v1/evaluations",
            raw=json.dumps({"items": [item(files[0], salt="//" + "x" * 90000)] * 4}).encode())
    refused(400, "too_many_items", "too many items", "POST", "/v1/evaluations", {"items": [item(files[0])] * 51})
    unknown = source(files[0]).replace("@temper task vector_add", "@temper task no_such_task")
    refused(400, "unknown_task", "an unknown task", "POST", "/v1/evaluations",
            {"items": [{"source": unknown, "lang": "opencl"}]})
    st, b, _ = s.call("POST", "/v1/evaluations", {"items": [dict(item(files[0]), knobs={"NO_SUCH_KNOB": 4})]})
    check(st == 400 and b.get("error", {}).get("kind") == "unknown_knob" and "--set" not in b["error"]["message"]
          and "NO_SUCH_KNOB" in b["error"]["message"], "an unknown knob: 400 unknown_knob, said in the API's words", b)
    for knobs, named in (({"BLOCK": 4.5}, "items[0].knobs.BLOCK"), ({"BLOCK": True}, "items[0].knobs.BLOCK"),
                         ({"2X": 1}, "'2X'")):
        st, b, _ = s.call("POST", "/v1/evaluations", {"items": [dict(item(files[0]), knobs=knobs)]})
        check(st == 400 and b.get("error", {}).get("kind") == "invalid_request" and named in b["error"]["message"],
              "a malformed knob %s: 400 naming it (%s)" % (json.dumps(knobs), named), b)
    refused(400, "invalid_id", "a path-like item id", "POST", "/v1/evaluations",
            {"items": [item(files[0], id="../../etc/passwd")]})
    refused(400, "invalid_id", "a path-like batch", "POST", "/v1/evaluations", {"items": [item(files[0])], "batch": "a/b"})
    refused(400, "invalid_id", "a path-like id in the URL", "GET", "/v1/evaluations/..%2F..%2Fetc%2Fpasswd")
    refused(400, "invalid_id", "a dots-only id", "GET", "/v1/evaluations/..")
    refused(400, "invalid_id", "an id of bytes that are not UTF-8", "GET", "/v1/evaluations/%FF%FE")
    refused(404, "not_found", "a path of bytes that are not UTF-8", "GET", "/%C3")
    refused(400, "invalid_id", "a path-like batch in the URL", "GET", "/v1/batches/a%2F..%2Fb")
    refused(404, "not_found", "an unknown id", "GET", "/v1/evaluations/nobody")
    refused(404, "not_found", "an unknown batch", "GET", "/v1/batches/nobody")
    refused(404, "not_found", "an unknown endpoint", "GET", "/v2/evaluations")
    refused(400, "invalid_request", "a bad wait_s", "GET", "/v1/evaluations/f1?wait_s=-1")
    h = refused(405, "method_not_allowed", "a wrong method", "PUT", "/v1/evaluations/f1", raw=b"")
    check(h.get("Allow") == "GET, DELETE", "405 says what is allowed", dict(h))
    check(s.stop() == 0, "SIGTERM stops the server with status 0")

    # a full queue: 429 with Retry-After; tokens
    tok = os.path.join(WORK, "token")
    with open(tok, "w") as f:
        f.write("s3cret-token-0123456789\n")
    s = Server("--token-file", tok, "--max-depth", "2", store="store2.db", expect_ready=False)
    refused(401, "unauthorized", "no token", "GET", "/v1/workers")
    refused(401, "unauthorized", "a wrong token", "GET", "/v1/workers", token="s3cret-token-0123456788")
    refused(401, "unauthorized", "a token prefix", "GET", "/v1/workers", token="s3cret-token")
    check(s.call("GET", "/v1/workers", token="s3cret-token-0123456789")[0] == 200, "the right token is let in")
    check(s.call("GET", "/healthz")[0] == 200, "/healthz needs no token")
    h = refused(429, "queue_full", "a submission past the queue's depth", "POST", "/v1/evaluations",
                {"items": [item(files[0], salt="\n// %d\n" % i) for i in range(3)]}, token="s3cret-token-0123456789")
    check(h.get("Retry-After", "").isdigit(), "429 carries Retry-After", dict(h))
    r = subprocess.run([TEMPER, "serve", "--listen", "127.0.0.1:%d" % s.port, "--store", os.path.join(WORK, "s4.db"),
                        "--device", "opencl:0"],
                       env=ENV, capture_output=True, text=True, timeout=60)
    check(r.returncode != 0 and "cannot listen on 127.0.0.1:%d: Address already in use" % s.port in r.stderr
          and "port 0" not in r.stderr, "a port in use is refused, naming it and why", r.stderr)
    check(s.stop() == 0, "the token server stops with status 0")

    # a task whose baseline is wrong (c = a - b): a correct candidate's job fails with the task's
    # error, naming the task and the baseline, never a verdict, and nothing is stored for it
    broken = os.path.join(WORK, "broken")
    cand = broken_task(broken, "wrong_baseline", "c[i] = a[i] + b[i]", "c[i] = a[i] - b[i]")
    s = Server("--tasks", broken, store="store6.db")
    st, body, _ = s.call("POST", "/v1/evaluations",
                         {"items": [{"id": "wb", "source": cand, "lang": "opencl", "options": {"timing": False}}]})
    check(st == 202, "a job for the task with a wrong baseline is queued", body)
    st, v, _ = s.call("GET", "/v1/evaluations/wb?wait_s=120")
    err = v.get("error") or {} if isinstance(v, dict) else {}
    msg = err.get("message") or ""
    check(st == 200 and v.get("status") == "failed" and err.get("kind") == "task_error" and not err.get("retryable")
          and not v.get("result") and "of task wrong_baseline is wrong" in msg and "wrong_baseline/naive.cl" in msg,
          "a wrong baseline fails the job as the task's error (task_error), not a verdict", v)
    check(s.stop() == 0, "the server of the broken task stops with status 0")
    db = sqlite3.connect(os.path.join(WORK, "store6.db"))
    n = db.execute("SELECT count(*) FROM evaluations").fetchone()[0]
    db.close()
    check(n == 0, "nothing is stored for the candidate judged against a wrong baseline", n)

    r = subprocess.run([TEMPER, "serve", "--listen", "0.0.0.0:0", "--store", os.path.join(WORK, "s3.db"),
                        "--device", "opencl:0"], env=ENV,
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 2 and "token" in r.stderr, "a non-loopback address without a token is refused", r.stderr)
    r = subprocess.run([TEMPER, "serve", "--token-file", os.path.join(WORK, "missing")], env=ENV, capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 2 and "--token-file: " in r.stderr and "missing" in r.stderr,
          "a missing token file is bad usage, said of the option", r.stderr)
    # a Redis URL nothing listens at: refused with a message (2: a build without Redis; 4: no queue)
    r = subprocess.run([TEMPER, "serve", "--listen", "127.0.0.1:0", "--redis", "redis://127.0.0.1:1"], env=ENV,
                       capture_output=True, text=True, timeout=60)
    check(r.returncode in (2, 4) and "redis" in r.stderr.lower(), "an unusable Redis URL is refused, not served",
          (r.returncode, r.stderr))
    # a task path without tasks would refuse (or, on a worker, judge `invalid`) every candidate for the
    # operator's mistake: the server does not start
    r = subprocess.run([TEMPER, "serve", "--listen", "127.0.0.1:0", "--store", os.path.join(WORK, "s5.db"), "--tasks",
                        os.path.join(WORK, "no-tasks-here")], env=ENV, capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "no tasks under " + os.path.join(WORK, "no-tasks-here") in r.stderr,
          "a task path without tasks is bad usage, naming it", (r.returncode, r.stderr))
    # Without --device the gym serves only devices whose kernels run apart from its process: on a
    # machine whose only devices run kernels inside it (PoCL on the CPU), it does not start and
    # says which device to name.
    devs = json.loads(subprocess.run([TEMPER, "devices", "--json"], env=ENV, capture_output=True, text=True,
                                     timeout=120).stdout)["devices"]
    apart = [d for d in devs if "error" not in d and "in_process" not in d.get("caps", [])]
    inside = [d["id"] for d in devs if "error" not in d and "in_process" in d.get("caps", [])]
    if not apart and inside:
        r = subprocess.run([TEMPER, "serve", "--listen", "127.0.0.1:0", "--store", os.path.join(WORK, "s7.db")],
                           env=ENV, capture_output=True, text=True, timeout=120)
        check(r.returncode == 3 and "--device " + inside[0] in r.stderr and "inside" in r.stderr,
              "without --device, an in-process device is not served by default, and the message names it",
              (r.returncode, r.stderr))
    r = subprocess.run([TEMPER, "serve", "--bogus"], env=ENV, capture_output=True, text=True, timeout=60)
    check(r.returncode == 2 and "usage: temper serve" in r.stderr, "an unknown option is bad usage", r.stderr)



def killer_batch():
    """A kernel that kills the server, beside three honest jobs in flight, under a supervisor that
    starts the server again each time it dies."""
    marker = "TEMPER_TEST_KILLS_THE_SERVER"
    env = dict(ENV, TEMPER_TEST_WORKER_DIE_ON=marker)
    slow = source("tasks/L1/vector_add/naive.cl").replace(
        "int i = get_global_id(0);",
        "int i = get_global_id(0);\n    if (i == 0) { volatile int spins = 0; for (int k = 0; k < 100000000; k++) spins++; }")
    check("spins" in slow, "the slow candidate is made")
    its = [{"id": "h%d" % i, "source": slow + "\n// neighbour %d\n" % i, "lang": "opencl", "options": {"timing": False}}
           for i in range(3)]
    its.append({"id": "killer", "source": "// " + marker + "\n" + source("tasks/L1/vector_add/naive.cl"),
                "lang": "opencl", "options": {"timing": False}})
    def start():  # None when it died before it answered
        try:
            return Server("--in-flight", "4", store="killer.db", env=env)
        except (SystemExit, OSError, urllib.error.URLError):
            return None

    # The killer may run, and take the server down, before the submission is answered (a free
    # worker starts it at once): then the server is started again and the same items are sent
    # again, which returns the jobs already queued (docs/serve.md, Ids) or queues them.
    s, st, body, deaths = start(), None, None, 0
    for _ in range(10):
        try:
            st, body, _ = s.call("POST", "/v1/evaluations", {"items": its, "batch": "killer"}) if s else (None,) * 3
            if st is not None:
                break
        except (OSError, urllib.error.URLError):
            pass
        if s is not None:
            s.proc.wait(timeout=60)
            deaths += 1
        s = start()
    check(st == 202, "three slow jobs and a kernel that kills the server are queued", body)
    done = None
    deadline = time.time() + 400
    while time.time() < deadline:
        if s is None or s.proc.poll() is not None:  # it died: started again, as a service manager would
            deaths += 1
            s = start()
            continue
        try:
            st, body, _ = s.call("GET", "/v1/batches/killer", timeout=30)
        except (OSError, urllib.error.URLError):
            continue
        if st == 200 and body["counts"]["queued"] + body["counts"]["running"] == 0:
            done = body
            break
        time.sleep(0.5)
    check(done is not None, "the batch is done after the server died %d times" % deaths)
    if done:
        verdicts = [(x["id"], x.get("result", {}).get("verdict")) for x in done["items"]]
        check(verdicts == [("h0", "correct"), ("h1", "correct"), ("h2", "correct"), ("killer", "runtime_error")],
              "the honest jobs beside the killer are answered, the killer is dead-lettered", verdicts)
        check("dead letters" in done["items"][3]["result"]["message"], "the killer's result says why",
              done["items"][3]["result"]["message"])
    if s is not None:
        s.stop()


try:
    main()
    killer_batch()
finally:
    shutil.rmtree(WORK, ignore_errors=True)
print("%d failed" % len(failures))
sys.exit(1 if failures else 0)
