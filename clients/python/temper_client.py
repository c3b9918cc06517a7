"""temper_client.py: a client of `temper serve` (docs/serve.md, docs/openapi.yaml), standard library only.

    from temper_client import Client, AsyncClient, compute_score

    c = Client("http://127.0.0.1:8787")                   # token=... for a server off loopback
    result = c.evaluate(source, lang="cuda")              # the record `temper eval --json` prints
    views = c.evaluate_many([{"source": s, "lang": "cuda"} for s in sources])

    async with AsyncClient("http://127.0.0.1:8787", concurrency=32) as ac:
        results = await asyncio.gather(*(ac.evaluate(s, lang="cuda") for s in sources))

    score = compute_score("kernelbench", llm_output, "softmax", {"lang": "cuda"})   # verl's shape

Requests that fail with 429, 503 or 504, or with a connection error, are retried with exponential
backoff and full jitter, waiting at least what Retry-After says; every submission carries a client
id (one is made when the caller gives none), so a retried submission never queues a job twice.
A candidate's own failure (compile error, crash, wrong answer) is a result with its verdict; a
failure of temper or its machines is raised as TemperFailure (with .kind and .retryable), never
turned into a verdict or a score.
"""
import asyncio
import json
import math
import os
import random
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Client", "AsyncClient", "TemperError", "TemperFailure", "compute_score", "extract_kernel"]

RETRY_STATUSES = (429, 503, 504)


class TemperError(Exception):
    """A request the server refused (4xx), or one that still failed after every retry."""

    def __init__(self, status, kind, message):
        super().__init__("%s (HTTP %s): %s" % (kind, status, message))
        self.status, self.kind, self.message = status, kind, message


class TemperFailure(Exception):
    """temper or its machine could not evaluate a job (status "failed"): not the candidate's fault."""

    def __init__(self, job_id, error):
        super().__init__("evaluation %s failed: %s: %s" % (job_id, error.get("kind"), error.get("message")))
        self.job_id, self.kind = job_id, error.get("kind")
        self.message, self.retryable = error.get("message"), bool(error.get("retryable"))


class Client:
    """A synchronous client; safe to share between threads."""

    def __init__(self, base_url=None, token=None, timeout=120.0, max_retries=8, backoff_s=0.5, max_backoff_s=30.0,
                 concurrency=16, poll_s=30.0):
        self.base_url = (base_url or os.environ.get("TEMPER_URL") or "http://127.0.0.1:8787").rstrip("/")
        self.token = token if token is not None else os.environ.get("TEMPER_TOKEN")
        self.timeout, self.max_retries = timeout, max_retries
        self.backoff_s, self.max_backoff_s = backoff_s, max_backoff_s
        self.concurrency, self.poll_s = concurrency, poll_s
        self._slots = threading.BoundedSemaphore(concurrency)  # requests in flight at once

    # ---- the endpoints ----

    def submit(self, items, batch=None, wait_s=0):
        """POST /v1/evaluations. Items without an "id" get one. Returns the answer's JSON."""
        items = [dict(it) for it in items]
        for it in items:
            it.setdefault("id", "py-" + uuid.uuid4().hex)
        body = {"items": items}
        if batch:
            body["batch"] = batch
        if wait_s:
            body["wait_s"] = wait_s
        return self._request("POST", "/v1/evaluations", body, timeout=self.timeout + wait_s)

    def get(self, job_id, wait_s=0):
        """GET /v1/evaluations/{id}: the job's view (a long poll with wait_s)."""
        q = "?wait_s=%g" % wait_s if wait_s else ""
        return self._request("GET", "/v1/evaluations/%s%s" % (urllib.parse.quote(job_id, safe=""), q),
                             timeout=self.timeout + wait_s)

    def get_many(self, ids, wait_s=0):
        body = {"ids": list(ids)}
        if wait_s:
            body["wait_s"] = wait_s
        return self._request("POST", "/v1/evaluations:get", body, timeout=self.timeout + wait_s)

    def cancel(self, job_id):
        return self._request("DELETE", "/v1/evaluations/%s" % urllib.parse.quote(job_id, safe=""))

    def batch(self, batch_id):
        return self._request("GET", "/v1/batches/%s" % urllib.parse.quote(batch_id, safe=""))

    def tasks(self):
        return self._request("GET", "/v1/tasks")["tasks"]

    def workers(self):
        return self._request("GET", "/v1/workers")["workers"]

    def metrics(self):
        return self._request("GET", "/metrics")

    # ---- evaluations ----

    def wait(self, job_id, timeout_s=None):
        """Long-polls a job until it is finished; returns its view."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            left = self.poll_s if deadline is None else min(self.poll_s, deadline - time.monotonic())
            view = self.get(job_id, wait_s=max(0.0, left))
            if view["status"] not in ("queued", "running"):
                return view
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("evaluation %s is still %s" % (job_id, view["status"]))

    def evaluate_item(self, item, timeout_s=None):
        """Evaluates one item ({"source", "lang", "knobs"?, "options"?, ...}) and returns its result record.
        Raises TemperFailure when temper could not evaluate it, TemperError when it was cancelled."""
        it = dict(item)
        it.setdefault("id", "py-" + uuid.uuid4().hex)
        answer = self.submit([it], wait_s=min(self.poll_s, timeout_s or self.poll_s))
        view = answer["items"][0]
        if view["status"] in ("queued", "running"):
            view = self.wait(it["id"], timeout_s)
        return _result_of(view)

    def evaluate(self, source, lang="cuda", knobs=None, options=None, task=None, timeout_s=None, **extra):
        item = {"source": source, "lang": lang}
        if knobs:
            item["knobs"] = knobs
        if options:
            item["options"] = options
        if task:
            item["task"] = task
        item.update(extra)
        return self.evaluate_item(item, timeout_s)

    def evaluate_many(self, items, timeout_s=None):
        """Evaluates items at most `concurrency` at a time; returns the results in order (a TemperFailure
        in place of a result temper could not produce)."""

        def one(it):
            try:
                return self.evaluate_item(it, timeout_s)
            except TemperFailure as e:
                return e

        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(one, items))

    # ---- transport ----

    def _request(self, method, path, body=None, timeout=None):
        data = json.dumps(body).encode() if body is not None else None
        attempt = 0
        while True:
            req = urllib.request.Request(self.base_url + path, data=data, method=method)
            req.add_header("Accept", "application/json")
            if data is not None:
                req.add_header("Content-Type", "application/json")
            if self.token:
                req.add_header("Authorization", "Bearer " + self.token)
            retry_after, status, error = None, None, None
            with self._slots:
                try:
                    with urllib.request.urlopen(req, timeout=timeout or self.timeout) as r:
                        text = r.read().decode()
                        return json.loads(text) if "json" in (r.headers.get("Content-Type") or "") else text
                except urllib.error.HTTPError as e:
                    status, text = e.code, e.read().decode(errors="replace")
                    retry_after = e.headers.get("Retry-After")
                    try:
                        err = json.loads(text).get("error", {})
                    except ValueError:
                        err = {}
                    error = TemperError(status, err.get("kind", "http_error"), err.get("message", text[:500]))
                    if status not in RETRY_STATUSES:
                        raise error from None
                except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as e:
                    error = TemperError(None, "connection", str(getattr(e, "reason", e)))
            if attempt >= self.max_retries:
                raise error
            time.sleep(self._backoff(attempt, retry_after))
            attempt += 1

    def _backoff(self, attempt, retry_after=None):
        """Full jitter: uniform in [0, min(cap, base * 2^attempt)], and never less than Retry-After."""
        delay = random.uniform(0, min(self.max_backoff_s, self.backoff_s * (2 ** attempt)))
        try:
            floor = float(retry_after) if retry_after is not None else 0.0
        except ValueError:
            floor = 0.0
        return max(delay, floor)


def _result_of(view):
    if view["status"] == "done":
        return view["result"]
    if view["status"] == "failed":
        raise TemperFailure(view["id"], view.get("error") or {})
    raise TemperError(None, view["status"], "evaluation %s was %s" % (view["id"], view["status"]))


class AsyncClient:
    """The asyncio form: each call runs the synchronous client in a thread, at most `concurrency` at
    once (an asyncio semaphore), so that thousands of awaited evaluations share a bounded pool."""

    def __init__(self, base_url=None, token=None, concurrency=16, **kwargs):
        self._sync = Client(base_url, token, concurrency=concurrency, **kwargs)
        self._limit = asyncio.Semaphore(concurrency)
        self._pool = ThreadPoolExecutor(max_workers=concurrency)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    async def close(self):
        self._pool.shutdown(wait=False)

    async def _run(self, fn, *args, **kwargs):
        async with self._limit:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._pool, lambda: fn(*args, **kwargs))

    async def evaluate(self, source, lang="cuda", **kwargs):
        return await self._run(self._sync.evaluate, source, lang, **kwargs)

    async def evaluate_item(self, item, timeout_s=None):
        return await self._run(self._sync.evaluate_item, item, timeout_s)

    async def evaluate_many(self, items, timeout_s=None):
        async def one(it):
            try:
                return await self.evaluate_item(it, timeout_s)
            except TemperFailure as e:
                return e

        return await asyncio.gather(*(one(it) for it in items))

    async def submit(self, items, batch=None, wait_s=0):
        return await self._run(self._sync.submit, items, batch, wait_s)

    async def get(self, job_id, wait_s=0):
        return await self._run(self._sync.get, job_id, wait_s)

    async def cancel(self, job_id):
        return await self._run(self._sync.cancel, job_id)

    async def tasks(self):
        return await self._run(self._sync.tasks)


# ---- verl's reward function ----

_FENCE = re.compile(r"```([A-Za-z0-9_+-]*)[ \t]*\n(.*?)```", re.S)
_LANGS = {"cuda": "cuda", "cu": "cuda", "c++": "cuda", "cpp": "cuda", "opencl": "opencl", "cl": "opencl"}
_default_client = None
_default_lock = threading.Lock()


def source_lang(source):
    """The language a kernel's source is written in, from what only that language has: OpenCL's
    `__kernel`/`kernel void` and work-item functions, CUDA's `__global__`; None when neither shows."""
    opencl = re.search(r"\b(__kernel|kernel\s+void|get_global_id|get_local_id)\b", source or "")
    cuda = re.search(r"__global__\s", source or "")
    if opencl and not cuda:
        return "opencl"
    if cuda and not opencl:
        return "cuda"
    return None


def extract_kernel(text, lang=None):
    """The candidate in a model's answer: the last fenced code block that holds @temper directives
    (else the last fenced block, else the whole text), and its language from the fence's tag
    (```cuda, ```opencl, ```cu, ```cl), else from the source itself (source_lang), else lang.
    Returns (source, lang)."""
    blocks = _FENCE.findall(text or "")
    chosen = [b for b in blocks if "@temper" in b[1]] or blocks
    if not chosen:
        return (text or ""), source_lang(text) or lang
    tag, source = chosen[-1]
    return source, _LANGS.get(tag.lower()) or source_lang(source) or lang


def _utf8(text):
    """Whether text encodes as UTF-8 (a lone surrogate does not, and no JSON parser takes it)."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _client():
    global _default_client
    with _default_lock:
        if _default_client is None:
            _default_client = Client()
        return _default_client


def compute_score(data_source, solution_str, ground_truth, extra_info=None):
    """verl's reward function: 0.0 unless the kernel in solution_str is correct; a correct kernel
    scores 1.0, plus (when timed) half the base-2 log of its speedup over the task's baseline,
    clipped to [-1, 2] (so 0.5 to 2.0). ground_truth is the task's name (the kernel must solve it);
    extra_info may give "lang" (it decides; else the fence's tag, else the source's own marks, else
    "cuda"), "knobs", "options", "id" and "client" (a Client). The server is $TEMPER_URL (default
    http://127.0.0.1:8787) with $TEMPER_TOKEN. temper's own failures raise TemperFailure: they are
    not the policy's, so they must not become a reward; a ground_truth that is not a task name is
    the dataset's error and raises ValueError."""
    extra = extra_info or {}
    if not (isinstance(ground_truth, str) and re.fullmatch(r"[a-z0-9_]{1,63}", ground_truth)):
        raise ValueError("ground_truth must be the task's name ([a-z0-9_], as `temper tasks` lists it), not %r"
                         % (ground_truth,))
    source, lang = extract_kernel(solution_str, None)
    lang = extra.get("lang") or lang or "cuda"
    if not source.strip() or "@temper" not in source:
        return 0.0
    if "\x00" in source or not _utf8(source):
        return 0.0  # JSON cannot carry it to the server: the policy's answer, not temper's failure
    item = {"source": source, "lang": lang}
    if re.search(r"@temper\s+task\s+\S", source):
        item["task"] = ground_truth
    for key in ("knobs", "options", "id"):
        if extra.get(key):
            item[key] = extra[key]
    client = extra.get("client") or _client()
    try:
        result = client.evaluate_item(item)
    except TemperError as e:
        if e.status == 400 and (e.kind in ("unknown_task", "unknown_knob") or
                                (e.kind == "invalid_request" and ".task is" in (e.message or ""))):
            return 0.0  # the answer names another task, or knobs its kernel does not have
        if e.status == 413 and e.kind == "source_too_large":
            return 0.0  # the answer's kernel is over the server's --max-source-bytes
        raise
    if result.get("verdict") != "correct":
        return 0.0
    timings = result.get("timings") or []
    speedup = timings[0].get("speedup") if timings and isinstance(timings[0], dict) else None
    if not speedup or speedup <= 0:
        return 1.0
    return 1.0 + 0.5 * max(-1.0, min(2.0, math.log2(speedup)))
