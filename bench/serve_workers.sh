#!/usr/bin/env bash
# serve_workers.sh: distinct softmax candidates per minute through the gym on Redis (`temper serve
# --redis` with one `temper worker` per GPU), with one worker and then two, against `temper eval`
# of the same number of candidates directly on one GPU, in one call of a GPU machine. Not a test.
#
#   bench/serve_workers.sh prepare   here (Debian 12): Release build; temper, temper-worker,
#                                    redis-server and the shared libraries they need into
#                                    .bench-serve/ (ignored through .git/info/exclude)
#   bench/serve_workers.sh run       there: the table, and $OUT/serve_workers.json
#
# The GPU machine has no redis-server, hiredis or libmicrohttpd: carry .bench-serve. Paths can be
# given instead: TEMPER_BIN, TEMPER_WORKER, REDIS_SERVER, and LD_LIBRARY_PATH for the libraries.
# CANDIDATES (default 96) per row; GPUS (default: nvidia-smi -L) caps the workers; IN_FLIGHT
# (default 32) jobs per worker. BACKEND=opencl runs the same on OpenCL devices (the .cl variants;
# GPUS=N devices) to try the script on a machine without a GPU (PoCL).
#
# Candidates are knob variants of tasks/L1/softmax/{block,fast,naive}.cu, each knob fixed in its
# source, and each made distinct (a comment naming the row and its number), so that no row takes
# anything from another's build cache or result cache. Each row first evaluates a few warm-up
# candidates of its own (calibration, CUDA contexts), untimed.
set -u
cd "$(dirname "$0")/.."
. bench/carry_libs.sh
dir=${BENCH_SERVE_DIR:-.bench-serve} # BENCH_SERVE_DIR=.gpu: the binaries and libraries of bench/gpu.sh prepare
case "${1:-}" in
prepare)
    set -e
    cmake -S . -B build-bench -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build build-bench -j"$(nproc)" >/dev/null
    rm -rf "$dir"
    mkdir -p "$dir/lib"
    cp build-bench/temper build-bench/temper-worker "$dir/"
    cp "$(readlink -f "$(command -v redis-server)")" "$dir/redis-server"
    carry_libs_collect "$dir/lib" "$dir/temper" "$dir/temper-worker" "$dir/redis-server"
    exclude=$(git rev-parse --git-path info/exclude)
    grep -qx "/$dir/" "$exclude" 2>/dev/null || echo "/$dir/" >>"$exclude"
    "$dir/temper" worker --help >/dev/null || { echo "the build has no worker command (hiredis missing?)" >&2; exit 1; }
    "$dir/temper" serve --help >/dev/null || { echo "the build has no serve command" >&2; exit 1; }
    du -sh "$dir"
    ls "$dir" "$dir/lib"
    exit 0
    ;;
run) ;;
*)
    echo "usage: bench/serve_workers.sh prepare|run" >&2
    exit 2
    ;;
esac

export TEMPER_BIN=${TEMPER_BIN:-$PWD/$dir/temper}
export TEMPER_WORKER=${TEMPER_WORKER:-$PWD/$dir/temper-worker}
export REDIS_SERVER=${REDIS_SERVER:-$PWD/$dir/redis-server}
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks}
# Link in only the carried libraries this machine lacks (its own stay first).
carry_libs_link "$dir/lib" "$TEMPER_BIN" "$TEMPER_WORKER" "$REDIS_SERVER" || exit 1
export OUT=${OUT:-/tmp/temper-serve-bench}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
exec python3 - <<'EOF'
import itertools, json, os, re, signal, socket, subprocess, sys, tempfile, time, urllib.request

TEMPER, REDIS = os.environ["TEMPER_BIN"], os.environ["REDIS_SERVER"]
M = int(os.environ.get("CANDIDATES", "96"))
IN_FLIGHT = os.environ.get("IN_FLIGHT", "32")
out_dir = os.environ["OUT"]
work = tempfile.mkdtemp(prefix="serve-bench-")
try:
    gpus = len(subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout.strip().splitlines())
except OSError:
    gpus = 0
gpus = int(os.environ.get("GPUS", gpus))
BACKEND = os.environ.get("BACKEND", "cuda")
EXT, FILES = (".cl", ("fast.cl", "block.cl", "naive.cl", "rows.cl")) if BACKEND == "opencl" else (".cu", ("fast.cu", "block.cu", "naive.cu"))
if gpus < 1:
    sys.exit("no GPU (nvidia-smi -L lists none; GPUS=N to say otherwise)")

def variants(path):
    """Every knob setting of a candidate its requires allow, as sources with the knobs fixed."""
    text = open(path).read()
    params = re.findall(r"^// @temper param (\w+) (.+)$", text, re.M)
    requires = re.findall(r"^// @temper require (.+)$", text, re.M)
    names = [p[0] for p in params]
    for values in itertools.product(*[p[1].split() for p in params]):
        env = {n: int(v) for n, v in zip(names, values)}
        ok = all(eval(r.replace("&&", " and ").replace("||", " or "), {}, env) for r in requires)
        if ok:
            src = text
            for n, v in zip(names, values):
                src = re.sub(r"^// @temper param %s .+$" % n, "// @temper param %s %s" % (n, v), src, flags=re.M)
            yield "%s[%s]" % (os.path.basename(path), ",".join("%s=%s" % kv for kv in zip(names, values))), src

pools = [list(variants(os.path.join(os.environ["TEMPER_TASKS"], "L1/softmax", f))) for f in FILES]
mixed = [v for group in itertools.zip_longest(*pools) for v in group if v]  # round robin over the files

def candidates(row, n, offset=0):
    """n distinct candidates for a row: (id, label, source)."""
    out = []
    for i in range(n):
        label, src = mixed[(offset + i) % len(mixed)]
        out.append(("%s-%d" % (row, offset + i), label, "// serve_workers bench: row %s, candidate %d\n%s" % (row, offset + i, src)))
    return out

def verdicts(results):
    counts = {}
    for r in results:
        counts[r] = counts.get(r, 0) + 1
    return counts

rows = []

# 1. temper eval, directly, on one GPU
def direct():
    home = os.path.join(work, "home-direct")
    env = dict(os.environ, TEMPER_HOME=home)
    d = os.path.join(work, "direct")
    os.makedirs(d)
    def files(cands):
        paths = []
        for cid, _, src in cands:
            p = os.path.join(d, cid + EXT)
            open(p, "w").write(src)
            paths.append(p)
        return paths
    warm = files(candidates("direct-warm", 2))
    subprocess.run([TEMPER, "eval", "--device", BACKEND + ":0", "--json"] + warm, env=env, capture_output=True)
    paths = files(candidates("direct", M))
    t0 = time.time()
    p = subprocess.run([TEMPER, "eval", "--device", BACKEND + ":0", "--json"] + paths, env=env, capture_output=True, text=True)
    t = time.time() - t0
    got = [json.loads(l).get("verdict") for l in p.stdout.splitlines() if l.startswith("{")]
    return {"setup": "temper eval", "gpus": 1, "candidates": M, "seconds": t, "verdicts": verdicts(got),
            "failed": M - len(got)}

def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def http(port, method, path, body=None):
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method,
                                 data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return r.status, json.loads(r.read().decode())

def run_jobs(port, cands):
    """Submits the candidates and waits for every outcome: (seconds, verdicts, failed)."""
    t0 = time.time()
    for k in range(0, len(cands), 500):
        items = [{"id": cid, "source": src, "lang": BACKEND} for cid, _, src in cands[k:k + 500]]
        http(port, "POST", "/v1/evaluations", {"items": items})
    pending, done = [c[0] for c in cands], {}
    while pending:
        _, reply = http(port, "POST", "/v1/evaluations:get", {"ids": pending[:500], "wait_s": 30})
        for v in reply["items"]:
            if v["status"] in ("done", "failed", "cancelled"):
                done[v["id"]] = v
        pending = [i for i in pending if i not in done]
    t = time.time() - t0
    got = [v["result"]["verdict"] for v in done.values() if v["status"] == "done"]
    return t, verdicts(got), len(cands) - len(got)

def service(redis_port, n):
    url = "redis://127.0.0.1:%d/0?prefix=bench%d" % (redis_port, n)
    procs = []
    log = open(os.path.join(work, "serve%d.log" % n), "w+")
    serve = subprocess.Popen([TEMPER, "serve", "--listen", "127.0.0.1:0", "--redis", url], stderr=log,
                             env=dict(os.environ, TEMPER_HOME=os.path.join(work, "home-serve")))
    port = None
    for _ in range(600):
        log.seek(0)
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", log.read())
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.1)
    if port is None:
        serve.kill()
        sys.exit("temper serve did not start: " + open(log.name).read())
    for g in range(n):
        procs.append(subprocess.Popen([TEMPER, "worker", "--redis", url, "--device", "%s:%d" % (BACKEND, g), "--in-flight", IN_FLIGHT],
                                      stderr=open(os.path.join(work, "worker%d-%d.log" % (n, g)), "w"),
                                      env=dict(os.environ, TEMPER_HOME=os.path.join(work, "home-gpu%d" % g))))
    try:
        run_jobs(port, candidates("warm%d" % n, 2 * n))
        t, v, failed = run_jobs(port, candidates("service%d" % n, M))
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            p.wait()
        serve.send_signal(signal.SIGTERM)
        serve.wait()
    return {"setup": "service, %d worker%s" % (n, "" if n == 1 else "s"), "gpus": n, "candidates": M, "seconds": t,
            "verdicts": v, "failed": failed}

rows.append(direct())
redis_port = free_port()
redis = subprocess.Popen([REDIS, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                          "--dir", work], stdout=subprocess.DEVNULL)
time.sleep(1)
try:
    for n in (1, 2):
        if n <= gpus:
            rows.append(service(redis_port, n))
finally:
    redis.terminate()
    redis.wait()

direct_rate = rows[0]["candidates"] / rows[0]["seconds"] * 60
one = next((r for r in rows if r["setup"] == "service, 1 worker"), None)
print("\n%-20s %4s %10s %9s %10s %10s %12s  %s" % ("setup", "GPUs", "candidates", "seconds", "cand/min", "vs direct",
                                                 "vs 1 worker", "verdicts (failed)"))
for r in rows:
    r["per_minute"] = r["candidates"] / r["seconds"] * 60
    r["vs_direct"] = r["per_minute"] / direct_rate
    r["vs_one_worker"] = r["per_minute"] / (one["candidates"] / one["seconds"] * 60) if one and r["gpus"] else None
    print("%-20s %4d %10d %9.1f %10.1f %9.2fx %12s  %s (%d)" % (
        r["setup"], r["gpus"], r["candidates"], r["seconds"], r["per_minute"], r["vs_direct"],
        "%.2fx" % r["vs_one_worker"] if r["vs_one_worker"] and r["setup"] != "temper eval" else "-",
        " ".join("%s=%d" % kv for kv in sorted(r["verdicts"].items(), key=lambda kv: str(kv[0]))), r["failed"]))
json.dump({"rows": rows, "candidates": M, "in_flight": IN_FLIGHT, "gpus": gpus}, open(os.path.join(out_dir, "serve_workers.json"), "w"), indent=2)
print("\nthe goals: service with 1 worker >= 0.90x direct; 2 workers >= 1.80x 1 worker")
EOF
