#!/usr/bin/env bash
# serve_load.sh: requests per second and latency percentiles of `temper serve` for cached results,
# under a bounded load from a second process on loopback (a Python standard-library load generator:
# N keep-alive connections, each sending its next request when the last is answered). Not a test.
#
#   bench/serve_load.sh [TEMPER_BINARY] [SECONDS] [CONNECTIONS]     (defaults: build/temper 10 8)
#
# It starts its own server (a fresh store in a temporary folder, the device $SERVE_DEVICE, default
# opencl:0: it serves the candidate below, which is OpenCL), evaluates
# one candidate (tasks/L1/vector_add/naive.cl, no timing) once, then measures three loads in turn:
#   get     GET /v1/evaluations/{id} of that finished job
#   submit  POST /v1/evaluations of the same kernel under a new id each time: answered from the cache
#           at submission (a new job recorded done, 202)
#   wait    the same with wait_s 10: the results themselves in the answer (200)
# and prints one line per load: requests, requests per second, latency p50 p90 p99 max (ms), errors.
set -u
cd "$(dirname "$0")/.."
temper=${1:-build/temper}
seconds=${2:-10}
conns=${3:-8}
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks}
work=$(mktemp -d /tmp/temper-serve-load-XXXXXX)
export TEMPER_HOME=$work/home
mkdir -p "$TEMPER_HOME"
"$temper" serve --listen 127.0.0.1:0 --device "${SERVE_DEVICE:-opencl:0}" --store "$work/store.db" --max-depth 100000000 >"$work/serve.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
port=
for _ in $(seq 1 300); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/serve.log" | sed 's/.*://')
    [ -n "$port" ] && break
    sleep 0.2
done
[ -n "$port" ] || { echo "the server did not start:"; cat "$work/serve.log"; exit 1; }
python3 - "$port" "$seconds" "$conns" "$PWD/tasks/L1/vector_add/naive.cl" <<'EOF'
import http.client, json, os, sys, threading, time
port, seconds, conns, path = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
source = open(path).read()

def call(c, method, url, body=None):
    c.request(method, url, body=json.dumps(body) if body is not None else None,
              headers={"Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read()

c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
for _ in range(300):
    if call(c, "GET", "/readyz")[0] == 200:
        break
    time.sleep(0.2)
item = {"id": "seed", "source": source, "lang": "opencl", "options": {"timing": False}}
t = time.time()
st, body = call(c, "POST", "/v1/evaluations", {"items": [item], "wait_s": 600})
verdict = json.loads(body)["items"][0]["result"]["verdict"] if st == 200 else "?"
print("first evaluation: HTTP %d, %s, %.2f s (a device's first job calibrates it)" % (st, verdict, time.time() - t))

def load(name, make):
    lat, errors, lock, stop = [], [0], threading.Lock(), time.time() + seconds
    def worker(k):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        n, mine, bad = 0, [], 0
        while time.time() < stop:
            method, url, body, want = make(k, n)
            t0 = time.perf_counter()
            try:
                st, _ = call(c, method, url, body)
            except OSError:
                st = 0
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            mine.append(time.perf_counter() - t0)
            bad += st != want
            n += 1
        with lock:
            lat.extend(mine)
            errors[0] += bad
    t0 = time.time()
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(conns)]
    [x.start() for x in ts]
    [x.join() for x in ts]
    took = time.time() - t0
    lat.sort()
    q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000
    print("%-7s %9d %9.0f %8.2f %8.2f %8.2f %8.2f %7d" % (name, len(lat), len(lat) / took, q(0.5), q(0.9), q(0.99),
                                                           lat[-1] * 1000, errors[0]))

print("%d connections, %g s per load, loopback, load generator: Python threads in a second process" % (conns, seconds))
print("%-7s %9s %9s %8s %8s %8s %8s %7s" % ("load", "requests", "req/s", "p50 ms", "p90 ms", "p99 ms", "max ms", "errors"))
load("get", lambda k, n: ("GET", "/v1/evaluations/seed", None, 200))
mk = lambda wait: lambda k, n: ("POST", "/v1/evaluations",
                                dict({"items": [dict(item, id="%s-%d-%d-%d" % ("w" if wait else "s", os.getpid(), k, n))]},
                                     **({"wait_s": 10} if wait else {})), 200 if wait else 202)
load("submit", mk(False))
load("wait", mk(True))
EOF
