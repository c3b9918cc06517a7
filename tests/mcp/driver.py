"""driver.py: a Model Context Protocol client for tests: starts `temper mcp` on a pipe, sends
newline-delimited JSON-RPC, and checks every byte the server writes on its standard output: each
line must be one JSON-RPC 2.0 message (or, in a batch, an array of them) and nothing else. The
conversation, both ways, can be kept as a transcript (docs/examples/). Standard library only."""

import json
import queue
import subprocess
import threading
import time


class ProtocolViolation(AssertionError):
    """The server wrote something on stdout that is not a JSON-RPC message."""


def check_message(m, where):
    """Raises ProtocolViolation unless m is one JSON-RPC 2.0 response or notification."""
    if not isinstance(m, dict):
        raise ProtocolViolation(f"{where}: not a JSON object: {m!r:.200}")
    if m.get("jsonrpc") != "2.0":
        raise ProtocolViolation(f"{where}: jsonrpc is not \"2.0\": {m!r:.200}")
    if "method" in m:
        if "id" in m:
            raise ProtocolViolation(f"{where}: the server sent a request: {m!r:.200}")
        if not isinstance(m["method"], str):
            raise ProtocolViolation(f"{where}: method is not a string")
        return
    if "id" not in m or not (isinstance(m["id"], (str, int)) or m["id"] is None):
        raise ProtocolViolation(f"{where}: a response without a valid id: {m!r:.200}")
    if ("result" in m) == ("error" in m):
        raise ProtocolViolation(f"{where}: a response needs exactly one of result and error: {m!r:.200}")
    if "error" in m:
        e = m["error"]
        if not isinstance(e, dict) or not isinstance(e.get("code"), int) or not isinstance(e.get("message"), str):
            raise ProtocolViolation(f"{where}: a malformed error object: {e!r:.200}")


class Server:
    """`temper mcp` on a pipe. Messages it writes are queued; notifications are kept apart."""

    def __init__(self, argv, env, stderr_path, transcript=None):
        self.stderr = open(stderr_path, "ab")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr,
                                     env=env)
        self.messages = queue.Queue()
        self.transcript = transcript
        self.lock = threading.Lock()
        self.violation = None
        self.trailing = b""
        self.all = []  # every message received, in order
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 1

    def _log(self, direction, text):
        if self.transcript is not None:
            with self.lock:
                self.transcript.append(f"{direction} {text}")

    def _read(self):
        buf = b""
        while True:
            chunk = self.proc.stdout.read1(1 << 20)
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                try:
                    text = line.decode("utf-8")
                    m = json.loads(text)
                    for one in (m if isinstance(m, list) else [m]):
                        check_message(one, "stdout")
                    if isinstance(m, list) and not m:
                        raise ProtocolViolation("stdout: an empty batch answer")
                except (UnicodeDecodeError, ValueError, ProtocolViolation) as e:
                    self.violation = f"{e} in line {line[:300]!r}"
                    self.messages.put(None)
                    continue
                self._log("<-", text if len(text) < 4000 else text[:4000] + " [... cut here]")
                self.all.append(m)
                self.messages.put(m)
        self.trailing = buf
        self.messages.put(None)

    def send_raw(self, data):
        """Writes bytes as they are (the caller adds the newline)."""
        shown = data.decode("utf-8", "backslashreplace").rstrip("\n")
        self._log("->", shown if len(shown) < 4000 else shown[:300] + f" [... {len(shown)} bytes]")
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj):
        self.send_raw(json.dumps(obj).encode() + b"\n")

    def request(self, method, params=None, id=None, meta=None):
        """Sends a request; returns its id."""
        if id is None:
            id = self.next_id
            self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": id, "method": method}
        if params is not None or meta is not None:
            msg["params"] = dict(params or {})
            if meta is not None:
                msg["params"]["_meta"] = meta
        self.send(msg)
        return id

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)

    def next_message(self, timeout):
        try:
            m = self.messages.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no message from the server in {timeout} s")
        if m is None:
            if self.violation:
                raise ProtocolViolation(self.violation)
            raise AssertionError("the server closed its output")
        return m

    def wait_for(self, pred, timeout=120, keep=None):
        """The first message for which pred holds; others go to keep (a list) if given."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0:
                raise AssertionError(f"the expected message did not come in {timeout} s")
            m = self.next_message(left)
            if pred(m):
                return m
            if keep is not None:
                keep.append(m)

    def answer(self, id, timeout=120, keep=None):
        """The response to request id (notifications and other answers seen meanwhile go to keep)."""
        return self.wait_for(lambda m: isinstance(m, dict) and "method" not in m and m.get("id") == id, timeout,
                             keep)

    def call(self, method, params=None, meta=None, timeout=120, keep=None):
        return self.answer(self.request(method, params, meta=meta), timeout, keep)

    def close(self, timeout=120):
        """Closes stdin and waits: the exit status, after checking that nothing but JSON-RPC came."""
        self.proc.stdin.close()
        rc = self.proc.wait(timeout)
        self.reader.join(timeout)
        self.stderr.close()
        if self.violation:
            raise ProtocolViolation(self.violation)
        if self.trailing:
            raise ProtocolViolation(f"stdout ended inside a line: {self.trailing[:200]!r}")
        rest = []
        while not self.messages.empty():
            m = self.messages.get()
            if m is not None:
                rest.append(m)
        return rc, rest
