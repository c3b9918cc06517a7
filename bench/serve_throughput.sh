#!/usr/bin/env bash
# serve_throughput.sh: distinct candidates per minute through `temper serve` against `temper eval`
# directly, on the same devices in the same call (the issue's goal on an H200: the service at least
# 90 % of direct; with two devices, the service at least 1.8x one). Not a test.
#
#   bench/serve_throughput.sh [-n N] [-l cuda|opencl] [-b BASE] [--no-timing] [-t TEMPER] DEVICE...
#
# Makes N distinct candidates from tasks/L1/softmax/BASE (default block.cu for cuda, rows.cl for
# opencl) by a comment with a number at the end (a distinct source: nothing comes from a cache),
# then times, each on a fresh store:
#   direct   temper eval --device D (N files in one run) on the first device
#   serve    temper serve --device D (the first device): one batch of the N, until all are done
#   serveN   temper serve with every DEVICE given (only with two or more)
# and prints candidates per minute for each, and serve / direct (and serveN / serve).
set -u
cd "$(dirname "$0")/.."
n=32 lang=cuda base= timing=1 temper=build/temper
devices=()
while [ $# -gt 0 ]; do
    case $1 in
    -n) n=$2; shift 2 ;;
    -l) lang=$2; shift 2 ;;
    -b) base=$2; shift 2 ;;
    -t) temper=$2; shift 2 ;;
    --no-timing) timing=0; shift ;;
    *) devices+=("$1"); shift ;;
    esac
done
[ ${#devices[@]} -gt 0 ] || devices=("$lang:0")
[ -n "$base" ] || base=$([ "$lang" = cuda ] && echo block.cu || echo rows.cl)
export TEMPER_TASKS=${TEMPER_TASKS:-$PWD/tasks}
work=$(mktemp -d /tmp/temper-serve-tp-XXXXXX)
trap 'rm -rf "$work"' EXIT
ext=${base##*.}
for i in $(seq 1 "$n"); do
    { cat "tasks/L1/softmax/$base"; printf '\n// candidate %d of a throughput run\n' "$i"; } >"$work/c$i.$ext"
done
notiming=$([ "$timing" = 1 ] || echo --no-timing)

# direct: temper eval on the first device, every file in one run; the device calibrated first
export TEMPER_HOME=$work/direct
mkdir -p "$TEMPER_HOME"
"$temper" calibrate --device "${devices[0]}" >/dev/null 2>&1
t0=$(date +%s.%N)
"$temper" eval --device "${devices[0]}" $notiming --json "$work"/c*."$ext" >"$work/direct.jsonl" 2>"$work/direct.err"
t1=$(date +%s.%N)
direct=$(python3 -c "print($n * 60 / ($t1 - $t0))")

# serve: one batch of the N through the service on the given devices
serve_run() { # DEVICES...: prints candidates per minute
    local home=$work/serve-$#
    mkdir -p "$home"
    local args=()
    for d in "$@"; do args+=(--device "$d"); done
    for d in "$@"; do TEMPER_HOME=$home "$temper" calibrate --device "$d" >/dev/null 2>&1; done
    TEMPER_HOME=$home "$temper" serve --listen 127.0.0.1:0 --store "$home/temper.db" "${args[@]}" >"$home/serve.log" 2>&1 &
    local pid=$! port=
    for _ in $(seq 1 600); do
        port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$home/serve.log" | sed 's/.*://')
        [ -n "$port" ] && break
        sleep 0.2
    done
    python3 - "$port" "$timing" "$lang" "$work" "$ext" "$n" <<'EOF'
import glob, json, sys, time, urllib.request
port, timing, lang, work, ext, n = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6])
url = "http://127.0.0.1:%d" % port
def call(method, path, body=None):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode() if body else None, method=method)
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.loads(r.read())
for _ in range(600):
    try:
        if call("GET", "/readyz")["status"] == "ready":
            break
    except Exception:
        time.sleep(0.2)
files = sorted(glob.glob("%s/c*.%s" % (work, ext)))
items = [{"id": "tp%d" % i, "source": open(f).read(), "lang": lang, "options": {"timing": timing}} for i, f in enumerate(files)]
t0 = time.time()
call("POST", "/v1/evaluations", {"items": items, "batch": "tp"})
while True:
    b = call("GET", "/v1/batches/tp")
    if b["counts"]["queued"] + b["counts"]["running"] == 0:
        break
    time.sleep(0.05)
took = time.time() - t0
bad = [x for x in b["items"] if x["status"] != "done"]
if bad:
    print("not done: %s" % bad[:2], file=sys.stderr)
print("%.2f" % (n * 60 / took))
EOF
    kill "$pid"
    wait "$pid" 2>/dev/null
}
serve1=$(serve_run "${devices[0]}")
printf '%-8s %-28s %14s %8s\n' run devices "candidates/min" ratio
printf '%-8s %-28s %14.1f %8s\n' direct "${devices[0]}" "$direct" ""
printf '%-8s %-28s %14.1f %8.2f\n' serve "${devices[0]}" "$serve1" "$(python3 -c "print($serve1 / $direct)")"
if [ ${#devices[@]} -gt 1 ]; then
    serven=$(serve_run "${devices[@]}")
    printf '%-8s %-28s %14.1f %8.2f\n' "serve${#devices[@]}" "${devices[*]}" "$serven" "$(python3 -c "print($serven / $serve1)")"
fi
echo "(N=$n distinct $lang candidates from tasks/L1/softmax/$base, timing $([ "$timing" = 1 ] && echo on || echo off);" \
    "ratio: serve / direct, and serve${#devices[@]} / serve)"
