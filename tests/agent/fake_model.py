#!/usr/bin/env python3
"""fake_model.py: a scripted stand-in for a language model's HTTP endpoint, for temper's agent
tests. This is the only stand-in in those tests (no language model can run on the test machine):
everything else (the harness, PoCL, the store) is real. It serves OpenAI's chat completions
(POST .../chat/completions) and Anthropic's Messages API (POST .../v1/messages) on a free
loopback port, with Python's standard library only, and replays a script of replies.

The script is a JSON object {"roles": {"planner": [...], "coder": [...], ...}, "defaults": {...},
"require_completion_tokens": bool, "reject_temperature": bool} (the last two answer 400 to a
request with max_tokens, or with a temperature, as OpenAI's reasoning models do). The role of a request is read from its system prompt ("You
are the planner ..."); each request takes the next entry of its role's list (the default when
the list is spent). An entry is an object:
  content       the reply's text
  reasoning     reasoning text: OpenAI's reasoning_content, or an Anthropic thinking block
  finish        "stop" (default) or "length" (cut off: Anthropic's stop_reason max_tokens)
  status        an HTTP status other than 200, answered with an error body
  error         that body's error message (and type, e.g. insufficient_quota)
  retry_after   a Retry-After header's seconds
  delay         seconds to wait before answering (past the client's timeout, for a retry)
  raw           a body sent as it is with status 200 (not the API's answer: a proxy's page)
Each request is logged as one JSON line: time, path, role, headers that matter, body, answer.
The port is written to --port-file once the server listens."""
import argparse
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ROLES = ("planner", "coder", "debugger", "judge")


class State:
    def __init__(self, script, log_path):
        self.script = script
        self.next = {r: 0 for r in ROLES}
        self.lock = threading.Lock()
        self.log = open(log_path, "a", buffering=1)

    def take(self, role):
        with self.lock:
            entries = self.script.get("roles", {}).get(role, [])
            i = self.next.get(role, 0)
            if i < len(entries):
                self.next[role] = i + 1
                return entries[i]
            return self.script.get("defaults", {}).get(role, {"content": "nothing more to say"})


def role_of(body, anthropic):
    text = body.get("system", "") if anthropic else ""
    if not anthropic:
        for m in body.get("messages", []):
            if m.get("role") == "system":
                text += m.get("content", "")
    for r in ROLES:
        if "You are the " + r in text:
            return r
    return "unknown"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, obj, headers=None):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        state = self.server.state
        n = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(n)
        anthropic = self.path.endswith("/v1/messages")
        if not anthropic and not self.path.endswith("/chat/completions"):
            self.answer(404, {"error": {"message": "no such path " + self.path}})
            return
        body = json.loads(raw)
        role = role_of(body, anthropic)
        record = {"time": time.time(), "path": self.path, "role": role, "body": body,
                  "authorization": self.headers.get("Authorization"),
                  "x_api_key": self.headers.get("x-api-key"),
                  "anthropic_version": self.headers.get("anthropic-version")}
        if (not anthropic and state.script.get("require_completion_tokens") and "max_tokens" in body):
            record["answer"] = 400
            state.log.write(json.dumps(record) + "\n")
            self.answer(400, {"error": {"message": "Unsupported parameter: 'max_tokens' is not supported with "
                                        "this model. Use 'max_completion_tokens' instead.",
                                        "type": "invalid_request_error", "param": "max_tokens"}})
            return
        if state.script.get("reject_temperature") and "temperature" in body:
            record["answer"] = 400
            state.log.write(json.dumps(record) + "\n")
            self.answer(400, {"error": {"message": "Unsupported value: 'temperature' does not support 0.7 with this "
                                        "model. Only the default (1) value is supported.",
                                        "type": "invalid_request_error", "param": "temperature"}})
            return
        e = state.take(role)
        record["answer"] = e.get("status", 200)
        record["entry"] = {k: v for k, v in e.items() if k != "content"}
        state.log.write(json.dumps(record) + "\n")
        if e.get("delay"):
            time.sleep(e["delay"])
        try:
            if e.get("status", 200) != 200:
                headers = {"Retry-After": str(e["retry_after"])} if "retry_after" in e else {}
                err = {"message": e.get("error", "scripted failure"), "type": e.get("type", "server_error")}
                if e.get("code"):
                    err["code"] = e["code"]
                self.answer(e["status"], {"type": "error", "error": err}, headers)
                return
            if "raw" in e:
                data = e["raw"].encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            content = e.get("content", "")
            cut = e.get("finish") == "length"
            if anthropic:
                blocks = []
                if e.get("reasoning"):
                    blocks.append({"type": "thinking", "thinking": e["reasoning"], "signature": "x"})
                blocks.append({"type": "text", "text": content})
                self.answer(200, {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                                  "content": blocks, "stop_reason": "max_tokens" if cut else "end_turn",
                                  "usage": {"input_tokens": len(raw) // 4, "output_tokens": len(content) // 4 + 1}})
            else:
                msg = {"role": "assistant", "content": content}
                if e.get("reasoning"):
                    msg["reasoning_content"] = e["reasoning"]
                self.answer(200, {"id": "chatcmpl-1", "object": "chat.completion", "model": body.get("model"),
                                  "choices": [{"index": 0, "message": msg, "finish_reason": "length" if cut else "stop"}],
                                  "usage": {"prompt_tokens": len(raw) // 4, "completion_tokens": len(content) // 4 + 1,
                                            "total_tokens": len(raw) // 4 + len(content) // 4 + 1}})
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up waiting (a scripted delay past its timeout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--script", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()
    with open(a.script) as f:
        script = json.load(f)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(script, a.log)
    with open(a.port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(a.port_file + ".tmp", a.port_file)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
