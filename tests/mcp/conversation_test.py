#!/usr/bin/env python3
"""conversation_test.py: drives `temper mcp` over a pipe through whole conversations in both
protocol eras on OpenCL (PoCL here), with driver.py checking that every byte on stdout is a
JSON-RPC message: the handshake and version negotiation, tools/list, a failing kernel (isError with
its failing shape), a compile error and a passing kernel, a tune with progress notifications, a
request answered in the middle of a tune, a cancel that stops it, a finished tune, batches where
2025-03-26 allows them, and malformed input of every kind (bad JSON, not a request, unknown method
and tool, wrong argument types with their paths, a 5 MB source, a line over 16 MiB, requests
before initialize). The server must never crash: its exit status at end of input is 0.

usage: conversation_test.py --temper BIN --tasks DIR --work DIR [--transcript FILE]
(--transcript writes the legacy and modern conversations to FILE: docs/examples/mcp-transcript.txt)
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from driver import Server  # noqa: E402

MODERN = "2026-07-28"
LEGACY = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
TOOLS = ["list_tasks", "show_task", "evaluate", "tune", "profile", "best_kernel", "history", "search_knowledge"]


def meta(version=MODERN, caps=True, **extra):
    m = {"io.modelcontextprotocol/protocolVersion": version,
         "io.modelcontextprotocol/clientInfo": {"name": "temper-test", "version": "1"}}
    if caps:
        m["io.modelcontextprotocol/clientCapabilities"] = {}
    m.update(extra)
    return m


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def expect_error(resp, code, path=None, words=None):
    check("error" in resp, f"expected error {code}, got {json.dumps(resp)[:400]}")
    check(resp["error"]["code"] == code, f"expected error {code}, got {resp['error']}")
    if path is not None:
        check((resp["error"].get("data") or {}).get("path") == path,
              f"expected the path {path}, got {resp['error']}")
    if words is not None:
        check(words in resp["error"]["message"], f"expected '{words}' in {resp['error']['message']}")


def conforms(value, schema, path="structuredContent"):
    """Checks value against the JSON Schema keywords the tools' output schemas use."""
    types = schema.get("type")
    if types is not None:
        types = types if isinstance(types, list) else [types]
        kinds = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}
        ok = any((t == "integer" and isinstance(value, int) and not isinstance(value, bool)) or
                 (t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool)) or
                 (t in kinds and isinstance(value, kinds[t])) for t in types)
        check(ok, f"{path}: {value!r:.80} is not of type {types}")
    if "enum" in schema:
        check(value in schema["enum"], f"{path}: {value!r:.80} is not one of {schema['enum']}")
    if isinstance(value, dict):
        for key in schema.get("required", []):
            check(key in value, f"{path}: {key} is required")
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                conforms(value[key], sub, f"{path}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, v in enumerate(value):
            conforms(v, schema["items"], f"{path}[{i}]")


def text_of(result):
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


class Test:
    def __init__(self, args):
        self.args = args
        self.env = dict(os.environ, TEMPER_HOME=os.path.join(args.work, "home"),
                        TEMPER_CACHE=os.path.join(args.work, "cache"), TEMPER_TASKS=args.tasks,
                        TEMPER_KNOWLEDGE=os.path.join(os.path.dirname(os.path.abspath(args.tasks)), "knowledge"))
        self.stderr = os.path.join(args.work, "mcp.stderr")
        folder = os.path.join(args.tasks, "L1", "transpose")
        self.good = open(os.path.join(folder, "naive.cl")).read()
        self.tunable = open(os.path.join(folder, "fast.cl")).read()
        line = "y[(size_t)col * R + row] = x[(size_t)row * C + col];"
        check(line in self.good, "the transpose baseline changed: update the test's failing kernel")
        # one element wrong at every shape with at least 4 rows and 6 columns
        self.bad = self.good.replace(line, "y[(size_t)col * R + row] = (row == 3 && col == 5) ? 1.0f : "
                                           "x[(size_t)row * C + col];")
        self.broken = self.good.replace(line, "y[col * R + row] = x[row * C + col]  /* no semicolon */")
        self.transcript = [] if args.transcript else None
        self.output_schemas = {}  # tool name -> its outputSchema, from tools/list

    def server(self, *extra, transcript=False):
        if transcript and self.transcript is not None:
            self.transcript.append(f"# a new process: temper mcp {' '.join(extra)}".rstrip())
        return Server([self.args.temper, "mcp", *extra], self.env, self.stderr,
                      self.transcript if transcript else None)

    def tool(self, s, name, arguments, meta=None, timeout=120, keep=None):
        """Calls a tool; a result that is not an error must conform to the tool's outputSchema."""
        r = s.call("tools/call", {"name": name, "arguments": arguments}, meta=meta, timeout=timeout, keep=keep)
        if "result" in r and not r["result"].get("isError") and "structuredContent" in r["result"]:
            conforms(r["result"]["structuredContent"], self.output_schemas[name])
        return r

    def stderr_has(self, words, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with open(self.stderr, errors="replace") as f:
                if words in f.read():
                    return True
            time.sleep(0.2)
        return False

    def close(self, s):
        rc, rest = s.close()
        check(rc == 0, f"the server's exit status at end of input is {rc}, not 0 (stderr: {self.stderr})")
        return rest

    # ---- version negotiation and a machine without the device ----
    def negotiation(self):
        for asked, got in [(v, v) for v in LEGACY] + [("1999-01-01", "2025-11-25"), (MODERN, "2025-11-25")]:
            s = self.server()
            r = s.call("initialize", {"protocolVersion": asked, "capabilities": {},
                                      "clientInfo": {"name": "t", "version": "1"}})
            check(r["result"]["protocolVersion"] == got, f"initialize {asked}: answered {r['result']}")
            check(r["result"]["capabilities"].get("tools") is not None, "no tools capability")
            check(r["result"]["serverInfo"]["name"] == "temper", "serverInfo")
            check("resultType" not in r["result"], "a legacy result has no resultType")
            self.close(s)
        # the protocol's descriptors are its own: fd 1 is standard error, fd 0 /dev/null
        s = self.server()
        check(s.call("ping")["result"] == {}, "ping")
        fds = {fd: os.readlink(f"/proc/{s.proc.pid}/fd/{fd}") for fd in (0, 1, 2)}
        check(fds[1] == fds[2] and fds[0] == "/dev/null", f"the server's descriptors 0, 1, 2: {fds}")
        self.close(s)
        # no such device: the handshake and the list still work; a tool that needs it says why
        s = self.server("--device", "opencl:99")
        s.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})
        s.notify("notifications/initialized")
        check(len(s.call("tools/list")["result"]["tools"]) == len(TOOLS), "tools/list without a device")
        r = s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good, "lang": "opencl"}})
        check(r["result"].get("isError") is True, "evaluate without a device is an error result")
        check("no usable device" in text_of(r["result"]) and "opencl:99" in text_of(r["result"]),
              f"the missing device is named: {text_of(r['result'])}")
        check(s.call("tools/call", {"name": "list_tasks"})["result"].get("isError") is not True,
              "list_tasks needs no device")
        self.close(s)

    # ---- the legacy era: handshake, tools, verdicts, malformed input, a tune cancelled mid-way ----
    def legacy(self):
        s = self.server(transcript=True)
        check(s.call("ping")["result"] == {}, "ping before initialize is answered")
        expect_error(s.call("tools/list"), -32602, words="not initialized")
        r = s.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "temper-test", "version": "1"}})
        check(r["result"]["protocolVersion"] == "2025-11-25", "negotiated 2025-11-25")
        s.notify("notifications/initialized")
        tools = s.call("tools/list")["result"]["tools"]
        check([t["name"] for t in tools] == TOOLS, f"tools: {[t['name'] for t in tools]}")
        for t in tools:
            check(t["inputSchema"]["type"] == "object" and t["outputSchema"]["type"] == "object",
                  f"{t['name']}: input and output schemas")
            self.output_schemas[t["name"]] = t["outputSchema"]
        expect_error(s.call("tools/list", {"cursor": "page-2"}), -32602, "params.cursor")

        r = self.tool(s, "list_tasks", {})["result"]
        names = [t["name"] for t in r["structuredContent"]["tasks"]]
        check("transpose" in names and "naive.cl" in
              next(t for t in r["structuredContent"]["tasks"] if t["name"] == "transpose")["candidates"],
              "list_tasks lists transpose and its candidates")
        r = self.tool(s, "show_task", {"task": "transpose"})["result"]
        check([a["name"] for a in r["structuredContent"]["arguments"]] == ["y", "x", "R", "C"],
              "show_task gives the arguments in kernel order")
        check("transpose" in r["structuredContent"]["baseline_sources"]["opencl"], "the baseline's source")
        r = s.call("tools/call", {"name": "show_task", "arguments": {"task": "no_such_task"}})["result"]
        check(r.get("isError") is True and "no_such_task" in text_of(r), "an unknown task is an error result")

        # a failing kernel: isError, with the verdict, the failing shape and element in the text
        r = s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.bad, "lang": "opencl",
                                                                    "timing": False}})["result"]
        sc = r["structuredContent"]
        check(r.get("isError") is True and sc["verdict"] == "incorrect", f"the failing kernel: {text_of(r)[:500]}")
        failed = next(c for c in sc["checks"] if not c["passed"])
        check(failed["first_mismatch"]["position"] == "[5, 3]", f"the wrong element: {failed['first_mismatch']}")
        check("verdict: incorrect" in text_of(r) and f"shape {failed['shape']}" in text_of(r) and
              "y[5, 3]" in text_of(r), f"the evidence in the text: {text_of(r)[:600]}")
        # a compile error: the log in the text
        r = s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.broken, "lang": "opencl",
                                                                    "timing": False}})["result"]
        check(r.get("isError") is True and r["structuredContent"]["verdict"] == "compile_error" and
              "compile log" in text_of(r) and "error" in text_of(r), f"the compile error: {text_of(r)[:500]}")
        # a knob the candidate does not have: not evaluated, said plainly
        r = s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good, "lang": "opencl",
                                                                    "knobs": {"TILE": 4}, "timing": False}})
        check(r["result"].get("isError") is True and "TILE" in text_of(r["result"]), "an unknown knob")
        # a passing kernel
        r = self.tool(s, "evaluate", {"source": self.good, "lang": "opencl", "timing": False})["result"]
        check(r.get("isError") is not True and r["structuredContent"]["verdict"] == "correct" and
              "verdict: correct" in text_of(r), f"the passing kernel: {text_of(r)[:300]}")

        # one server serves one device
        r = s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good, "lang": "opencl",
                                                                    "device": "opencl:1"}})["result"]
        check(r.get("isError") is True and "runs on opencl:0" in text_of(r), f"another device: {text_of(r)}")

        self.malformed(s)

        # a tune: progress per evaluation; a request in the middle is answered; a cancel stops it
        seen = []
        tune = s.request("tools/call", {"name": "tune", "arguments": {
            "source": self.tunable, "lang": "opencl", "budget": 40, "compiler_knobs": False,
            "screen_budget_s": 0.02, "full_budget_s": 0.02, "retime": 1},
            "_meta": {"progressToken": "tune-1"}})
        first = s.wait_for(lambda m: m.get("method") == "notifications/progress", 180, seen)
        check(first["params"]["progressToken"] == "tune-1" and first["params"]["progress"] >= 1 and
              "evaluation" in first["params"]["message"], f"a progress notification: {first}")
        middle = s.request("tools/call", {"name": "evaluate", "arguments": {
            "source": self.good, "lang": "opencl", "timing": False}})
        r = s.answer(middle, 120, seen)
        check(r["result"]["structuredContent"]["verdict"] == "correct", "the call made during the tune")
        check(not any(m.get("id") == tune for m in s.all), "the tune was still running")
        # a request of any method that reuses the running tune's id is refused, not answered as if new
        s.request("ping", id=tune)
        dup = s.answer(tune, 60, seen)
        check("error" in dup and dup["error"]["code"] == -32600 and "in progress" in dup["error"]["message"],
              f"a ping reusing the running tune's id: -32600, {dup}")
        s.notify("notifications/cancelled", {"requestId": tune, "reason": "the test cancels it"})
        check(self.stderr_has("tune cancelled; not answered", 120), "the cancelled tune stopped")
        check(s.call("ping")["result"] == {}, "the server still answers")
        progress = [m["params"]["progress"] for m in s.all if m.get("method") == "notifications/progress"]
        check(progress == sorted(progress), f"progress increases: {progress}")
        rest = self.close(s)
        check(not any(m.get("id") == tune and "result" in m for m in s.all + rest), "a cancelled request is not answered")

    def malformed(self, s):
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good, "lang": 5}}),
                     -32602, "arguments.lang")
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good,
                                                                             "lang": "opencl",
                                                                             "knobs": {"TILE": [32]}}}),
                     -32602, "arguments.knobs.TILE")
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good, "lang": "opencl",
                                                                             "timing": "yes"}}),
                     -32602, "arguments.timing")
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": {"lang": "opencl"}}),
                     -32602, "arguments.source")
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good, "lang": "rust"}}),
                     -32602, "arguments.lang")
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.good, "lang": "opencl",
                                                                             "colour": "red"}}),
                     -32602, "arguments.colour")
        expect_error(s.call("tools/call", {"name": "tune", "arguments": {"source": self.good, "lang": "opencl",
                                                                         "budget": 0}}),
                     -32602, "arguments.budget")
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": "source"}), -32602, "params.arguments")
        expect_error(s.call("tools/call", {"name": "compile"}), -32602, "params.name", "unknown tool")
        expect_error(s.call("tools/call", {}), -32602, "params.name")
        # a 5 MB source: over the 1 MiB limit, named with the limit
        big = "// @temper task transpose\n" + "/" * (5 << 20)
        expect_error(s.call("tools/call", {"name": "evaluate", "arguments": {"source": big, "lang": "opencl"}}),
                     -32602, "arguments.source", "the limit is 1048576 bytes")
        expect_error(s.call("resources/list"), -32601)
        # bad JSON, not an object, not a request: id null
        for raw, code in [(b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", -32700), (b"\xff\xfe", -32700),
                          (b"42", -32600), (b"\"ping\"", -32600),
                          (b"[{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}]", -32600),
                          (b"{\"jsonrpc\":\"1.0\",\"id\":7,\"method\":\"ping\"}", -32600),
                          (b"{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", -32600),
                          (b"{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", -32600),
                          (b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":17}", -32600),
                          (b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"params\":3}", -32600),
                          (b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/list\",\"params\":[1]}", -32602)]:
            s.send_raw(raw + b"\n")
            r = s.next_message(60)
            expect_error(r, code)
            check(r["id"] == (7 if b"\"id\":7" in raw else 8 if b"\"id\":8" in raw else None),
                  f"the id of the answer to {raw!r}: {r}")
        # a line over 16 MiB: answered once, skipped, and the next line is read
        s.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"x\":\"" + b"a" * (17 << 20) +
                   b"\"}}\n")
        expect_error(s.next_message(60), -32600)
        # nothing answers a notification or a response, even a malformed one
        s.notify("notifications/no_such_thing", {"x": 1})
        s.send(({"jsonrpc": "2.0", "id": 99, "result": {}}))
        s.send(({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}}))
        pid = s.request("ping")
        check(s.next_message(60).get("id") == pid, "notifications and responses get no answer")

    # ---- batches: 2025-03-26 only ----
    def batches(self):
        s = self.server()
        s.call("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})
        s.notify("notifications/initialized")
        batch = [{"jsonrpc": "2.0", "id": "a", "method": "ping"},
                 {"jsonrpc": "2.0", "method": "notifications/initialized"},
                 {"jsonrpc": "2.0", "id": "b", "method": "tools/list"},
                 7,
                 {"jsonrpc": "2.0", "id": "c", "method": "nope"},
                 {"jsonrpc": "2.0", "id": "d", "method": "tools/call", "params": {"name": "list_tasks"}}]
        s.send(batch)
        answers = s.next_message(60)
        check(isinstance(answers, list) and len(answers) == 5, f"one array of five answers: {answers!r:.300}")
        by_id = {a["id"]: a for a in answers}
        check(by_id["a"]["result"] == {} and by_id["c"]["error"]["code"] == -32601 and
              by_id[None]["error"]["code"] == -32600, "the batch's answers")
        check(all("outputSchema" not in t for t in by_id["b"]["result"]["tools"]),
              "2025-03-26 has no outputSchema")
        check("structuredContent" not in by_id["d"]["result"] and
              "transpose" in text_of(by_id["d"]["result"]), "2025-03-26 has no structuredContent")
        s.send([])
        expect_error(s.next_message(60), -32600)
        self.close(s)

    # ---- the end of the input stops a tune, which answers with what it has ----
    def eof(self):
        s = self.server()
        s.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})
        tune = s.request("tools/call", {"name": "tune", "arguments": {
            "source": self.tunable, "lang": "opencl", "budget": 40, "compiler_knobs": False,
            "screen_budget_s": 0.02, "full_budget_s": 0.02, "retime": 1}, "_meta": {"progressToken": 1}})
        s.wait_for(lambda m: m.get("method") == "notifications/progress", 180)
        self.close(s)
        answers = [m for m in s.all if m.get("id") == tune]  # s.all holds rest too
        check(len(answers) == 1, f"the tune is answered once at the end of the input: {answers!r:.300}")
        sc = answers[0]["result"]["structuredContent"]
        check(sc["interrupted"] is True and sc["evaluations"] < 40 and "interrupted" in text_of(answers[0]["result"]),
              f"an interrupted tune's summary: {text_of(answers[0]['result'])[:300]}")

    # ---- the modern era: per-request _meta, server/discover, resultType ----
    def modern(self):
        s = self.server(transcript=True)
        expect_error(s.call("server/discover"), -32602)
        r = s.call("server/discover", meta=meta())["result"]
        check(r["resultType"] == "complete" and MODERN in r["supportedVersions"] and
              set(LEGACY) <= set(r["supportedVersions"]) and "tools" in r["capabilities"] and
              r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "temper" and r["ttlMs"] >= 0,
              f"server/discover: {r}")
        r = s.call("tools/list", meta=meta("1900-01-01"))
        expect_error(r, -32022)
        check(r["error"]["data"]["requested"] == "1900-01-01" and MODERN in r["error"]["data"]["supported"],
              "the unsupported version's data")
        expect_error(s.call("tools/list", meta=meta(caps=False)), -32602,
                     "params._meta.io.modelcontextprotocol/clientCapabilities")
        expect_error(s.call("tools/list", meta={"io.modelcontextprotocol/protocolVersion": 2026}), -32602)
        r = s.call("tools/list", meta=meta())["result"]
        check(r["resultType"] == "complete" and [t["name"] for t in r["tools"]] == TOOLS and
              all("outputSchema" in t for t in r["tools"]) and r["cacheScope"] in ("public", "private"),
              "tools/list, modern")
        r = s.call("tools/call", {"name": "evaluate", "arguments": {"source": self.bad, "lang": "opencl",
                                                                    "timing": False}}, meta=meta())["result"]
        check(r["resultType"] == "complete" and r.get("isError") is True and
              r["structuredContent"]["verdict"] == "incorrect", "a failing kernel, modern")
        # a whole tune, small, with progress
        seen = []
        r = self.tool(s, "tune", {
            "source": self.tunable, "lang": "opencl", "budget": 2, "compiler_knobs": False,
            "screen_budget_s": 0.02, "full_budget_s": 0.02, "retime": 1},
            meta=meta(progressToken=7), timeout=300, keep=seen)["result"]
        progress = [m for m in seen if m.get("method") == "notifications/progress"]
        check(len(progress) >= 2 and all(p["params"]["progressToken"] == 7 for p in progress),
              f"progress notifications: {progress}")
        sc = r["structuredContent"]
        check(r["resultType"] == "complete" and sc["evaluations"] >= 2 and sc["best"] is not None and
              "knobs fixed" in sc["best_source"] and
              all(f"@temper param {k} {v}\n" in sc["best_source"] for k, v in sc["best"]["knobs"].items()),
              f"the tune's summary: {text_of(r)[:400]}")
        # a tune in which nothing compiles: each progress line and the answer say why
        seen = []
        broken = self.tunable.replace("__kernel", "__kernel undeclared_word", 1)
        r = self.tool(s, "tune", {
            "source": broken, "lang": "opencl", "budget": 2, "compiler_knobs": False,
            "screen_budget_s": 0.02, "full_budget_s": 0.02},
            meta=meta(progressToken=8), timeout=300, keep=seen)["result"]
        progress = [m["params"]["message"] for m in seen if m.get("method") == "notifications/progress"]
        check(progress and all("compile_error (" in p for p in progress),
              f"a failed configuration's progress says why: {progress}")
        check(r["structuredContent"].get("best") is None and r["structuredContent"]["failures"] and
              "failed: compile_error (" in text_of(r) and "compiler log (first lines):" in text_of(r),
              f"the answer lists the failures: {text_of(r)[:400]}")
        # profile on OpenCL: no hardware counters, said plainly; the bottleneck from the roofline
        r = self.tool(s, "profile", {"source": self.good, "lang": "opencl"},
                   meta=meta(), timeout=300)["result"]
        sc = r["structuredContent"]
        check(r.get("isError") is not True and sc["counters"] == "none" and sc["metrics"] is None and
              "no hardware performance counters" in sc["note"] and "roofline" in sc["bottleneck"] and
              sc["bound"] in ("memory", "compute") and "bottleneck:" in text_of(r), f"profile: {text_of(r)}")
        # the best kernel the store holds for the task, on this device
        r = self.tool(s, "best_kernel", {"task": "transpose", "device": "opencl:0"},
                   meta=meta())["result"]
        check(r.get("isError") is not True and r["structuredContent"]["result"]["verdict"] == "correct" and
              "@temper task transpose" in r["structuredContent"]["source"], f"best_kernel: {text_of(r)[:300]}")
        r = s.call("tools/call", {"name": "best_kernel", "arguments": {"task": "gelu"}}, meta=meta())["result"]
        check(r.get("isError") is True, f"best_kernel without results: {text_of(r)[:300]}")
        # the task's history: this conversation's evaluations, newest first, each with its verdict
        r = self.tool(s, "history", {"task": "transpose", "limit": 200}, meta=meta())["result"]
        rows = r["structuredContent"]["history"] if r.get("isError") is not True else []
        evals = [x for x in rows if x.get("kind") == "evaluation"]
        check(evals and all(x.get("task", "transpose") == "transpose" for x in evals) and
              {"correct", "incorrect"} <= {x.get("verdict") for x in evals} and
              [x["id"] for x in evals] == sorted((x["id"] for x in evals), reverse=True),
              f"history: {text_of(r)[:300]}")
        r = s.call("tools/call", {"name": "history", "arguments": {"task": "no_such_task"}}, meta=meta())["result"]
        check(r.get("isError") is True and "no_such_task" in text_of(r), f"history of no task: {text_of(r)[:300]}")
        # the knowledge base: a guide on coalescing, and the store's best transpose kernel for a
        # query about transposes (the evaluations above put one there)
        r = self.tool(s, "search_knowledge", {"query": "coalesced memory access"}, meta=meta())["result"]
        hits = r["structuredContent"]["hits"] if r.get("isError") is not True else []
        check(any(h["kind"] == "guide" and "coalesc" in h["text"].lower() for h in hits),
              f"search_knowledge, a guide: {text_of(r)[:300]}")
        r = self.tool(s, "search_knowledge", {"query": "transpose", "task": "transpose", "lang": "opencl"},
                      meta=meta())["result"]
        hits = r["structuredContent"]["hits"] if r.get("isError") is not True else []
        check(any(h["kind"] == "kernel" and "@temper task transpose" in h["text"] for h in hits),
              f"search_knowledge, a kernel from the store: {text_of(r)[:300]}")
        expect_error(s.call("tools/call", {"name": "search_knowledge", "arguments": {"query": 3}}, meta=meta()),
                     -32602, "arguments.query")
        # a legacy initialize on the same process is served too (a dual-era server)
        r = s.call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                  "clientInfo": {"name": "t", "version": "1"}})
        check(r["result"]["protocolVersion"] == "2025-06-18", "dual era")
        self.close(s)
        # a server that finds no guides says so, rather than answer as if the guides held nothing
        env, self.env = self.env, dict(self.env, TEMPER_KNOWLEDGE=os.path.join(self.args.work, "no-guides"))
        s = self.server()
        self.env = env
        r = self.tool(s, "search_knowledge", {"query": "coalesced memory access"}, meta=meta())["result"]
        check(r.get("isError") is not True and "no guides folder at " in text_of(r) and
              "no-guides" in r["structuredContent"].get("note", ""),
              f"search_knowledge without guides says so: {text_of(r)[:300]}")
        self.close(s)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--temper", required=True)
    p.add_argument("--tasks", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--transcript")
    args = p.parse_args()
    t = Test(args)
    start = time.monotonic()
    for part in (t.negotiation, t.legacy, t.batches, t.eof, t.modern):
        part_start = time.monotonic()
        part()
        print(f"mcp: {part.__name__} passed ({time.monotonic() - part_start:.1f} s)", flush=True)
    if args.transcript:
        with open(args.transcript, "w") as f:
            f.write("# A conversation with `temper mcp` (-> client to server, <- server to client), written by\n"
                    "# tests/mcp/conversation_test.py; regenerate with, from the repository's root:\n"
                    "#   python3 tests/mcp/conversation_test.py --temper build/temper --tasks tasks \\\n"
                    "#       --work $(mktemp -d) --transcript docs/examples/mcp-transcript.txt\n"
                    "# Long lines are cut where marked. The first part is the legacy era (initialize), the\n"
                    "# second the 2026-07-28 era (the version in each request's _meta).\n")
            f.write("\n".join(t.transcript) + "\n")
    print(f"mcp: every conversation passed in {time.monotonic() - start:.1f} s")


if __name__ == "__main__":
    main()
