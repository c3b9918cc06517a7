#!/usr/bin/env python3
"""peers.py: what a user would pick instead of temper's kernels, timed beside them.

For every L1 and L2 task, at its GPU bench shape (task.json), with inputs drawn from the task's own
distributions: PyTorch eager, torch.compile (Inductor, default mode) and, where Triton has a
tutorial kernel for the task (softmax, layernorm, hgemm's matmul), a kernel written here after that
tutorial; for the GEMMs also torch.matmul through cuBLASLt and torch.matmul after an idle GPU. Timing follows temper's protocol: before every call a buffer larger than the L2 is
written, each call is bracketed by CUDA events, the median of the samples counts, and the peers of
a task are interleaved round-robin so that clock drift reaches them alike. temper's numbers (its
tuned best and the vendor-library expert) are read from `temper best TASK --json` and from a
`temper eval --json` of the baselines made in the same call (bench/gpu.sh peers). Prints one table,
with each of issue 14's goals judged from the numbers (met, not met, or cannot: the faster peer is
too near copy bandwidth for any kernel to reach the ratio; the copy bandwidth from `temper
calibrate --json` of the same call), and, given --expert-run files, the cuBLAS experts beside
torch.matmul.

The GEMMs are compute-bound, and a compute-bound kernel's time moves by 10-15 % with the GPU's
clock and power state (bench/clock_ramp.py: a rested H200 runs a bf16 GEMM 15 % faster for its
first 30-60 ms). So their goals are judged, where --interleaved files are given, on temper's best
timed launch by launch against the cuBLAS call torch.matmul makes (TEMPER_EXPERT_PICK=cublas, on
PyTorch's own cuBLAS), in rounds, not on times taken at different moments; the experts' table
shows that call's time beside torch.matmul's.

Each PyTorch function computes what the task's reference.c computes, from the same argument layout
(row-major, the task's dtypes); the comments at PEERS say how. The parts that need no torch (task
parsing, shapes, distributions, the table) are tested by tests/peers_test.py in CI.

  python3 bench/peers.py [--tasks DIR] [--temper PATH] [--suite FILE.jsonl] [--reps N] [--json OUT]
                         [--only NAME,...] [--no-compile] [--no-triton] [--measure | --report]
                         [--calibrate FILE.json] [--expert-run PICK=FILE.jsonl ...]
                         [--interleaved FILE.jsonl ...]
  python3 bench/peers.py --tune-order FILE... [--suite FILE.jsonl]   (the stage's tune order)

--measure times the peers and writes their rows to --json; --report (no torch needed) adds temper's
numbers to those rows and prints the table; neither does both. A SIGTERM (timeout's) while timing
keeps the rows measured so far.
"""
import argparse
import ast
import glob
import json
import math
import signal
import os
import re
import statistics
import subprocess
import sys
import time

# ---- the parts that need no torch ----


def eval_expr(expr, env):
    """An integer expression of task.json (docs/task.md, Expressions) over the size parameters in
    env: + - * / % (/ truncates toward zero), comparisons, && || !, min, max, ceil_div."""
    if isinstance(expr, int):
        return expr
    text = str(expr).replace("&&", " and ").replace("||", " or ")
    text = re.sub(r"!(?!=)", " not ", text)
    tree = ast.parse(text, mode="eval")

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, int):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in env:
                raise ValueError("unknown name %r in %r" % (node.id, expr))
            return int(env[node.id])
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return v
            if isinstance(node.op, ast.Not):
                return int(not v)
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
                if b == 0:
                    raise ValueError("division by zero in %r" % expr)
                q = abs(a) // abs(b) * (1 if (a >= 0) == (b >= 0) else -1)
                return q if not isinstance(node.op, ast.Mod) else a - q * b
        if isinstance(node, ast.BoolOp):
            vals = [ev(v) for v in node.values]
            return int(all(vals)) if isinstance(node.op, ast.And) else int(any(vals))
        if isinstance(node, ast.Compare) and len(node.ops) == 1:
            a, b, op = ev(node.left), ev(node.comparators[0]), node.ops[0]
            table = {ast.Lt: a < b, ast.LtE: a <= b, ast.Gt: a > b, ast.GtE: a >= b, ast.Eq: a == b, ast.NotEq: a != b}
            return int(table[type(op)])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 2:
            a, b = ev(node.args[0]), ev(node.args[1])
            if node.func.id == "min":
                return min(a, b)
            if node.func.id == "max":
                return max(a, b)
            if node.func.id == "ceil_div":
                if b == 0:
                    raise ValueError("division by zero in %r" % expr)
                return -((-a) // b)
        raise ValueError("unsupported expression %r" % expr)

    return ev(tree)


def parse_init(text, dtype):
    """(kind, a, b) of an init: normal(MEAN,STD), uniform(LO,HI) or randint(LO,HI); the task
    format's default (normal(0,1), randint(-100,100) for integers) when text is None."""
    if text is None:
        return ("randint", -100, 100) if dtype[0] in "iu" else ("normal", 0.0, 1.0)
    m = re.fullmatch(r"\s*(normal|uniform|randint)\(\s*([-+0-9.eE]+)\s*,\s*([-+0-9.eE]+)\s*\)\s*", text)
    if not m:
        raise ValueError("init %r is not normal(M,S), uniform(L,H) or randint(L,H)" % text)
    kind = m.group(1)
    conv = int if kind == "randint" else float
    return kind, conv(m.group(2)), conv(m.group(3))


def load_task(path):
    """task.json as a dict, with its folder under "dir"."""
    with open(path) as f:
        task = json.load(f)
    task["dir"] = os.path.dirname(os.path.abspath(path))
    return task


def bench_args(task, device_class="gpu", index=0):
    """The bench shape's size parameters and every argument at it: a list of dicts (name, role,
    dtype, shape as a tuple of ints, init as (kind, a, b)), in task order, and the sizes."""
    shape = task["shapes"]["bench"][device_class][index]
    sizes = {k: v for k, v in shape.items() if k != "init"}
    overrides = shape.get("init", {})
    args = []
    for a in task["args"]:
        spec = {"name": a["name"], "role": a["role"], "dtype": a["dtype"]}
        if a["role"] == "scalar":
            if a["name"] not in sizes:
                raise ValueError("%s: the bench shape gives no value for scalar %s" % (task["name"], a["name"]))
            spec["value"] = int(sizes[a["name"]])
        else:
            spec["shape"] = tuple(eval_expr(d, sizes) for d in a["shape"])
            if a["role"] == "input":
                spec["init"] = parse_init(overrides.get(a["name"], a.get("init")), a["dtype"])
        args.append(spec)
    return args, sizes


def tasks_in(root, levels=("L1", "L2")):
    """Every task.json of the given levels under root, sorted by level and name."""
    out = []
    for level in levels:
        out += sorted(glob.glob(os.path.join(root, level, "*", "task.json")))
    return out


def median(xs):
    return statistics.median(xs) if xs else None


def jsonl(path):
    """Every JSON object in a file: one per line, or one pretty-printed."""
    rows, dec, i = [], json.JSONDecoder(), 0
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return rows
    while i < len(text):
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            break
        try:
            obj, i = dec.raw_decode(text, i)
            rows.append(obj)
        except ValueError:
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl + 1
    return rows


def temper_numbers(suite_rows, best):
    """{task: {"tuned_ms", "tuned_by", "expert_ms", "expert", "baseline_ms"}} from the suite's
    results (baselines and kernels, each timed with its expert) and `temper best` records ({task:
    record}), which win over the suite's fastest correct kernel."""
    out = {}
    for r in suite_rows:
        t = (r.get("timings") or [None])[0]
        if not r.get("task") or not t:
            continue
        e = out.setdefault(r["task"], {})
        e["baseline_ms"] = t.get("baseline_median_ms", t.get("median_ms"))
        ms = t.get("median_ms")
        if r.get("verdict", "correct") == "correct" and ms is not None and ms < e.get("tuned_ms", float("inf")):
            # the fastest correct kernel of the suite, where `temper best` gives none
            e["tuned_ms"] = ms
            e["tuned_by"] = " ".join([os.path.basename(r.get("candidate") or "?")] + ([r["options"]] if r.get("options")
                                                                                       else []) + ["(in the suite)"])
        if t.get("expert_median_ms") is not None:
            e["expert_ms"], e["expert"] = t["expert_median_ms"], t.get("expert")
    for name, r in best.items():
        t = (r.get("timings") or [None])[0]
        if not t:
            continue
        e = out.setdefault(name, {})
        e["tuned_ms"] = t.get("median_ms")
        e["tuned_by"] = "%s %s" % (os.path.basename(r.get("candidate") or "?"), r.get("options") or "")
        if t.get("expert_median_ms") is not None:  # the expert timed beside the best, in its worker
            e["expert_ms"], e["expert"] = t["expert_median_ms"], t.get("expert")
    return out


def fmt(v, digits=4):
    return "-" if v is None else ("%.*g" % (digits, v))


# ---- issue 14's goals, judged from the measured numbers ----

# The peers a row may hold: PyTorch eager, torch.compile, the Triton tutorial kernel, and for the
# GEMMs torch.matmul through cuBLASLt (PyTorch's TORCH_BLAS_PREFER_CUBLASLT path) and torch.matmul
# timed after the GPU idled (no sustained load before the call).
PEER_KEYS = ("eager", "compile", "triton", "eager_lt", "eager_idle")
MATMUL_KEYS = ("eager", "eager_lt", "eager_idle")  # torch.matmul, however timed

# The fused L2 tasks of issue 14 (each goal: 1.2x the faster peer and 90 % of copy bandwidth).
FUSED_L2 = ("add_layernorm", "swiglu", "rmsnorm_rope", "cross_entropy", "attention_decode")


def roofline(task, calib, device_class="gpu"):
    """The task's bytes and flops at its bench shape, and from the calibration (`temper calibrate
    --json`: copy_gbs and the compute ceilings) the copy-bound time of those bytes in ms, the
    compute-bound time, and which of the two bounds it ("memory" or "compute") as temper's
    roofline decides it; times None without a calibration."""
    sizes = {k: v for k, v in task["shapes"]["bench"][device_class][0].items() if k != "init"}
    nbytes, flops = eval_expr(task["bytes"], sizes), eval_expr(task["flops"], sizes)
    out = {"bytes": nbytes, "flops": flops, "copy_ms": None, "compute_ms": None, "bound": None}
    copy = (calib or {}).get("copy_gbs") or 0
    fma, bf16 = (calib or {}).get("fma_gflops") or 0, (calib or {}).get("tensor_bf16_gflops") or 0
    ceiling = task.get("compute_ceiling", "fma_gflops")
    gflops = fma if bf16 <= 0 or ceiling == "fma_gflops" else (2 * bf16 if ceiling == "tensor_int8" else bf16)
    if copy > 0:
        out["copy_ms"] = nbytes / (copy * 1e9) * 1e3
    if gflops > 0:
        out["compute_ms"] = flops / (gflops * 1e9) * 1e3
    if out["copy_ms"] is not None and out["compute_ms"] is not None:
        out["bound"] = "memory" if out["copy_ms"] >= out["compute_ms"] else "compute"
    return out


def goal_of(task, bound):
    """Issue 14's goal for a task: a dict with "ref" (what temper's best is held against: "peer",
    "expert" or "matmul"), "ratio" (the least reference time over temper's best) and "copy" (the
    least share of copy bandwidth, or None), or None for a task without one."""
    name, level = task["name"], task.get("level", os.path.basename(os.path.dirname(task.get("dir", ""))))
    if name == "sgemm":
        return {"ref": "expert", "ratio": 0.95, "copy": None, "text": ">= 0.95x cuBLAS FP32"}
    if name == "hgemm":
        return {"ref": "matmul", "ratio": 1.0, "copy": None, "text": ">= 1.0x torch.matmul"}
    if name in FUSED_L2:
        return {"ref": "peer", "ratio": 1.2, "copy": 0.90, "text": ">= 1.2x peer, >= 90 % copy"}
    if str(level) in ("1", "L1") and bound == "memory":
        return {"ref": "peer", "ratio": 1.05, "copy": None, "text": ">= 1.05x peer"}
    if str(level) in ("1", "L1") and bound is None:  # memory-bound or not: the calibration says
        return {"ref": None, "ratio": 1.05, "copy": None, "text": ">= 1.05x peer if memory-bound"}
    return None


def faster_peer(row, keys=PEER_KEYS):
    """(name, ms) of the fastest of the row's peers among keys, or (None, None)."""
    have = [(row[k], k) for k in keys if row.get(k) is not None]
    if not have:
        return None, None
    ms, name = min(have)
    return name, ms


def at_most_text(at_most, goal_ratio):
    """at_most as Y.YY, or with three decimals where two would round up to the goal or past it."""
    text = "%.2f" % at_most
    return text if float(text) < goal_ratio or at_most >= goal_ratio else "%.3f" % at_most


def judge(goal, tuned, ref_ms, peer_ms, copy_ms):
    """The outcome of one goal, measured: "met", "not met: ..." or "cannot: the faster peer is at X %
    of copy, so at most Y.YYx" (no kernel moving the task's bytes at copy bandwidth could reach the
    ratio), or "unknown: ..." where a number is missing. goal from goal_of; tuned: temper's best
    ms; ref_ms: the reference's ms (the faster peer, the expert, or torch.matmul's fastest);
    peer_ms: the faster peer's ms; copy_ms: the copy-bound time of the task's bytes."""
    if goal is None:
        return "no goal"
    if goal["ref"] is None:
        return "unknown: no calibration to tell memory-bound from compute-bound"
    if ref_ms is None:
        return "unknown: no %s time" % {"peer": "peer", "expert": "expert", "matmul": "torch.matmul"}[goal["ref"]]
    if not tuned:
        return "unknown: no temper best"
    ratio = ref_ms / tuned
    short = []
    if ratio < goal["ratio"]:
        short.append("%.3fx (goal %gx)" % (ratio, goal["ratio"]))
    if goal["copy"] is not None:
        if copy_ms is None:
            return "unknown: no copy bandwidth measured"
        share = copy_ms / tuned
        if share < goal["copy"]:
            short.append("%.0f %% of copy (goal %.0f %%)" % (100 * share, 100 * goal["copy"]))
    if not short:
        return "met"
    if goal["ref"] == "peer" and ratio < goal["ratio"] and peer_ms is not None and copy_ms:
        at_most = peer_ms / copy_ms
        if at_most < goal["ratio"]:
            rest = [t for t in short[1:]]
            return "cannot: the faster peer is at %.0f %% of copy, so at most %sx%s" % (
                100 * copy_ms / peer_ms, at_most_text(at_most, goal["ratio"]),
                "; and " + ", ".join(rest) if rest else "")
    return "not met: " + ", ".join(short)


def outcome(task, row, calib):
    """The columns of a task's row beyond the times: the faster peer, temper's best and the faster
    peer as shares of copy bandwidth for the task's bytes, the largest ratio any kernel could reach
    over the faster peer (its time over the copy-bound time), the goal's ratio and its outcome.

    A GEMM goal (ref "expert" or "matmul") with interleaved rounds in the row (il_ratio, il_ms:
    interleaved_runs) is judged on them: temper's best and the expert with torch.matmul's own cuBLAS
    call, launch by launch in one worker, so that both meet the GPU in the same clock and power
    state. Times taken apart (the tune's re-timing, PyTorch's own measurement) move by 10-15 % with
    that state for a compute-bound kernel; their ratio stays in "apart_ratio"."""
    roof = roofline(task, calib)
    goal = goal_of(task, roof["bound"])
    pname, pms = faster_peer(row)
    tuned, copy_ms = row.get("tuned"), roof["copy_ms"]
    shown = copy_ms if roof["bound"] == "memory" else None  # shares of copy say nothing of a compute-bound task
    ref = {"peer": pms, "expert": row.get("expert"), "matmul": faster_peer(row, MATMUL_KEYS)[1]}
    ref_ms = ref[goal["ref"]] if goal and goal["ref"] else None
    apart = ref_ms / tuned if goal and ref_ms and tuned else None
    judged_ms = tuned
    if goal and goal["ref"] in ("expert", "matmul") and row.get("il_ratio") and row.get("il_ms"):
        judged_ms, ref_ms = row["il_ms"], row["il_ms"] * row["il_ratio"]
    return {"bound": roof["bound"], "copy_ms": copy_ms, "peer": pname, "peer_ms": pms,
            "tuned_copy": shown / tuned if shown and tuned else None,
            "peer_copy": shown / pms if shown and pms else None,
            "at_most": pms / shown if shown and pms else None,
            "goal": goal["text"] if goal else "-",
            "goal_ratio": ref_ms / judged_ms if goal and ref_ms and judged_ms else None,
            "apart_ratio": apart,
            "verdict": judge(goal, judged_ms, ref_ms, pms, copy_ms)}


def pct(v):
    return "-" if v is None else "%.0f %%" % (100 * v)


def table(rows):
    """The Markdown table: one row per task (dicts with the times and outcome()'s keys)."""
    head = ["task", "temper best ms", "expert ms", "eager ms", "compile ms", "triton ms", "faster peer",
            "temper % of copy", "peer % of copy", "at most", "goal", "ratio", "outcome", "notes"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] + ["---:"] * 9 + ["---", "---:", "---", "---"]) + " |"]
    for r in rows:
        peer = "-" if not r.get("peer") else "%s %s" % (r["peer"], fmt(r.get("peer_ms")))
        lines.append("| " + " | ".join([
            r["task"], fmt(r.get("tuned")), fmt(r.get("expert")), fmt(r.get("eager")), fmt(r.get("compile")),
            fmt(r.get("triton")), peer, pct(r.get("tuned_copy")), pct(r.get("peer_copy")),
            "-" if r.get("at_most") is None else "%.2fx" % r["at_most"], r.get("goal", "-"),
            "-" if r.get("goal_ratio") is None else "%.3f" % r["goal_ratio"], r.get("verdict", "-"),
            r.get("notes", "")]) + " |")
    return "\n".join(lines)


# ---- the order of the stage's tunes ----

# The tasks whose goals were open after session 10, first (bench/gpu.sh peers tunes in this order
# while its time lasts); every other task with a tunable candidate follows.
TUNE_PRIORITY = ("sgemm", "rmsnorm_rope", "attention_decode", "transpose", "layernorm", "softmax", "hgemm",
                 "add_layernorm", "swiglu", "cross_entropy", "gemv", "cumsum", "gelu", "rmsnorm", "reduce_sum",
                 "vector_add")


def tune_order(files, suite_rows, priority=TUNE_PRIORITY):
    """The tunable candidates in the order to tune them: tasks in priority's order, then the rest by
    level and name; first each task's kernel that ran fastest at its default knobs in the suite
    (suite_rows: temper eval --json results; a candidate without a correct timed result after
    those with one, by name), then, in a second pass over the tasks, their other kernels."""
    def task_of(f):
        return os.path.basename(os.path.dirname(os.path.abspath(f)))

    def level_of(f):
        return os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(f))))

    best = {}
    for r in suite_rows:
        t = (r.get("timings") or [None])[0]
        if r.get("verdict") == "correct" and t and t.get("median_ms") is not None and r.get("candidate"):
            key = os.path.abspath(r["candidate"])
            best[key] = min(best.get(key, float("inf")), t["median_ms"])
    tasks = {}
    for f in files:
        tasks.setdefault(task_of(f), []).append(f)
    rank = {name: i for i, name in enumerate(priority)}
    order = sorted(tasks, key=lambda n: (rank.get(n, len(rank)), level_of(tasks[n][0]), n))
    for n in order:
        tasks[n].sort(key=lambda f: (best.get(os.path.abspath(f), float("inf")), os.path.basename(f)))
    return [tasks[n][0] for n in order] + [f for n in order for f in tasks[n][1:]]


# ---- the cuBLAS experts beside torch.matmul (issue 14, item 1) ----

PICKS = ("cublas", "first", "fastest")  # TEMPER_EXPERT_PICK's values (src/device/cuda_blas.h)


def expert_runs(specs):
    """{task: {pick: [expert ms, ...]}} from "PICK=FILE" specs, each FILE a `temper eval --json`
    output run with TEMPER_EXPERT_PICK=PICK; a PICK given more than once (rounds) collects every
    run's time."""
    out = {}
    for spec in specs:
        pick, _, path = spec.partition("=")
        if pick not in PICKS or not path:
            raise ValueError("--expert-run %r: expected PICK=FILE with PICK one of %s" % (spec, ", ".join(PICKS)))
        for r in jsonl(path):
            t = (r.get("timings") or [None])[0]
            if r.get("task") and t and t.get("expert_median_ms") is not None:
                out.setdefault(r["task"], {}).setdefault(pick, []).append(t["expert_median_ms"])
    return out


def interleaved_runs(paths):
    """{task: [(temper ms, expert ms, expert), ...]} from `temper eval --json` outputs of each GEMM
    task's tuned best (`temper best TASK --out`) run with TEMPER_EXPERT_PICK=cublas, one line a
    round: the kernel and the expert timed interleaved in one worker. A result that is not correct
    or has no expert time is left out, and said so on stderr."""
    out = {}
    for path in paths:
        for r in jsonl(path):
            t = (r.get("timings") or [None])[0]
            if r.get("verdict") != "correct" or not t or t.get("median_ms") is None or t.get("expert_median_ms") is None:
                print("peers.py: %s: a round of %s left out: %s" % (path, r.get("task") or "?", r.get("verdict") if
                      r.get("verdict") != "correct" else "no kernel and expert times"), file=sys.stderr)
                continue
            out.setdefault(r["task"], []).append((t["median_ms"], t["expert_median_ms"], t.get("expert")))
    return out


def add_interleaved(row, rounds):
    """Puts a task's interleaved rounds into its row: il_ratio, the median of the rounds' ratios
    (expert over kernel: above 1, temper is faster); il_ms and il_expert_ms, the medians of the
    times; il_ratios, every round's ratio; il_expert, the expert's name."""
    if not rounds:
        return
    row["il_ratios"] = [e / m for m, e, _ in rounds]
    row["il_ratio"] = median(row["il_ratios"])
    row["il_ms"] = median([m for m, _, _ in rounds])
    row["il_expert_ms"] = median([e for _, e, _ in rounds])
    row["il_expert"] = rounds[0][2]


def il_note(row):
    """The notes of a row judged on interleaved rounds: the rounds' ratios, and the ratio of the
    times taken apart."""
    if not row.get("il_ratios"):
        return ""
    text = "judged interleaved with the cuBLAS call torch.matmul makes (%s), %d round%s: %s" % (
        row.get("il_expert") or "expert", len(row["il_ratios"]), "" if len(row["il_ratios"]) == 1 else "s",
        ", ".join("%.3f" % x for x in row["il_ratios"]))
    if row.get("apart_ratio"):
        text += "; timed apart: %.3f" % row["apart_ratio"]
    return text


def within(a, b, tol=0.03):
    """'yes' or 'no' (a within tol of b, relatively), '-' without both."""
    if a is None or b is None:
        return "-"
    return "yes" if abs(a / b - 1) <= tol else "no"


def experts_table(rows, runs):
    """The experts beside torch.matmul, one row per GEMM task measured: torch.matmul as PyTorch
    runs it (cuBLAS), through cuBLASLt and after an idle GPU; the expert with the plain cuBLAS call,
    the heuristic's first result, and the fastest of the candidates (medians over rounds); the
    ratios that tell layout, algorithm and protocol apart."""
    head = ["task", "torch.matmul ms", "torch.matmul cuBLASLt ms", "torch.matmul after idle ms", "expert cublas ms",
            "expert first ms", "expert fastest ms", "cublas / torch.matmul", "first / torch cuBLASLt",
            "fastest / first", "torch idle / torch"]
    lines = ["| " + " | ".join(head) + " |", "| " + " | ".join(["---"] + ["---:"] * (len(head) - 1)) + " |"]
    for r in rows:
        name = r["task"]
        if name not in runs and r.get("eager_lt") is None:
            continue
        e = {p: median(runs.get(name, {}).get(p, [])) for p in PICKS}

        def ratio(a, b):
            return "-" if a is None or b is None else "%.3f (%s)" % (a / b, "within 3 %" if within(a, b) == "yes" else
                                                                     "outside 3 %")
        lines.append("| " + " | ".join([
            name, fmt(r.get("eager")), fmt(r.get("eager_lt")), fmt(r.get("eager_idle")), fmt(e["cublas"]),
            fmt(e["first"]), fmt(e["fastest"]), ratio(e["cublas"], r.get("eager")), ratio(e["first"], r.get("eager_lt")),
            "-" if e["fastest"] is None or e["first"] is None else "%.3f" % (e["fastest"] / e["first"]),
            "-" if r.get("eager_idle") is None or r.get("eager") is None else "%.3f" % (r["eager_idle"] / r["eager"]),
        ]) + " |")
    return "\n".join(lines) if len(lines) > 2 else ""


# ---- the PyTorch side ----


def torch_side():
    """Imports torch (required here) and gives the module's triton (None when it is missing)."""
    import torch
    return torch, triton, tl


TORCH_DTYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "i8": "int8", "u8": "uint8", "i32": "int32",
                "i64": "int64"}


def make_inputs(torch, args, gen, device="cuda"):
    """Tensors on device for every input (outputs: each peer makes its own), drawn from their
    distributions (in fp32 or int64, then rounded to the element type as temper does); scalars as
    ints."""
    t = {}
    for a in args:
        if a["role"] == "scalar":
            t[a["name"]] = a["value"]
            continue
        dtype = getattr(torch, TORCH_DTYPES[a["dtype"]])
        if a["role"] == "output":
            continue  # each peer makes its own
        kind, lo, hi = a["init"]
        if kind == "randint":
            v = torch.randint(int(lo), int(hi) + 1, a["shape"], generator=gen, device=device, dtype=torch.int64)
        elif kind == "uniform":
            v = torch.rand(a["shape"], generator=gen, device=device, dtype=torch.float32) * (hi - lo) + lo
        else:
            v = torch.randn(a["shape"], generator=gen, device=device, dtype=torch.float32) * hi + lo
        t[a["name"]] = v.to(dtype)
    return t


# What each PyTorch peer reads: {task: {argument: dtype}}, the layout peers_for assumes (every array
# row-major at its task.json shape). tests/peers_test.py holds every L1 and L2 task to it, so a task
# whose arguments change, or a new task, fails the test until its peer is checked again.
PEERS = {
    "vector_add": {"c": "f32", "a": "f32", "b": "f32", "N": "i32"},
    "gelu": {"y": "bf16", "x": "bf16", "N": "i32"},
    "reduce_sum": {"out": "f32", "x": "f32", "N": "i32"},
    "histogram": {"counts": "i32", "x": "u8", "N": "i32"},
    "softmax": {"y": "f32", "x": "f32", "R": "i32", "C": "i32"},
    "layernorm": {"y": "f32", "x": "f32", "gamma": "f32", "beta": "f32", "R": "i32", "C": "i32"},
    "rmsnorm": {"y": "bf16", "x": "bf16", "w": "bf16", "R": "i32", "C": "i32"},
    "cumsum": {"y": "f32", "x": "f32", "R": "i32", "C": "i32"},
    "transpose": {"y": "f32", "x": "f32", "R": "i32", "C": "i32"},
    "gemv": {"y": "bf16", "W": "bf16", "x": "bf16", "N": "i32", "K": "i32"},
    "sgemm": {"C": "f32", "A": "f32", "B": "f32", "M": "i32", "N": "i32", "K": "i32"},
    "hgemm": {"C": "bf16", "A": "bf16", "B": "bf16", "M": "i32", "N": "i32", "K": "i32"},
    "conv2d": {"y": "f32", "x": "f32", "w": "f32", "N": "i32", "C": "i32", "H": "i32", "W": "i32", "K": "i32"},
    "add_layernorm": {"y": "f32", "h": "f32", "x": "f32", "r": "f32", "gamma": "f32", "beta": "f32", "R": "i32",
                      "C": "i32"},
    "attention_decode": {"out": "bf16", "q": "bf16", "k": "bf16", "v": "bf16", "H": "i32", "S": "i32", "D": "i32"},
    "cross_entropy": {"loss": "f32", "logits": "f32", "label": "i32", "R": "i32", "V": "i32"},
    "gemm_bias_gelu": {"Y": "bf16", "X": "bf16", "W": "bf16", "bias": "bf16", "M": "i32", "N": "i32", "K": "i32"},
    "int8_gemm": {"Y": "f32", "A": "i8", "B": "i8", "M": "i32", "N": "i32", "K": "i32", "SA": "i32", "SB": "i32"},
    "rmsnorm_rope": {"out": "bf16", "q": "bf16", "w": "bf16", "pos": "i32", "T": "i32", "H": "i32", "D": "i32"},
    "softmax_backward": {"dx": "f32", "y": "f32", "dy": "f32", "R": "i32", "C": "i32"},
    "swiglu": {"y": "bf16", "g": "bf16", "u": "bf16", "T": "i32", "F": "i32"},
}

# The argument shapes the peers assume, as in task.json: {task: {argument: [dimension, ...]}}.
PEER_SHAPES = {
    "vector_add": {"c": ["N"], "a": ["N"], "b": ["N"]}, "gelu": {"y": ["N"], "x": ["N"]},
    "reduce_sum": {"out": [1], "x": ["N"]}, "histogram": {"counts": [256], "x": ["N"]},
    "softmax": {"y": ["R", "C"], "x": ["R", "C"]},
    "layernorm": {"y": ["R", "C"], "x": ["R", "C"], "gamma": ["C"], "beta": ["C"]},
    "rmsnorm": {"y": ["R", "C"], "x": ["R", "C"], "w": ["C"]}, "cumsum": {"y": ["R", "C"], "x": ["R", "C"]},
    "transpose": {"y": ["C", "R"], "x": ["R", "C"]}, "gemv": {"y": ["N"], "W": ["N", "K"], "x": ["K"]},
    "sgemm": {"C": ["M", "N"], "A": ["M", "K"], "B": ["K", "N"]},
    "hgemm": {"C": ["M", "N"], "A": ["M", "K"], "B": ["K", "N"]},
    "conv2d": {"y": ["N", "K", "H", "W"], "x": ["N", "C", "H", "W"], "w": ["K", "C", 3, 3]},
    "add_layernorm": {"y": ["R", "C"], "h": ["R", "C"], "x": ["R", "C"], "r": ["R", "C"], "gamma": ["C"],
                      "beta": ["C"]},
    "attention_decode": {"out": ["H", "D"], "q": ["H", "D"], "k": ["H", "S", "D"], "v": ["H", "S", "D"]},
    "cross_entropy": {"loss": ["R"], "logits": ["R", "V"], "label": ["R"]},
    "gemm_bias_gelu": {"Y": ["M", "N"], "X": ["M", "K"], "W": ["K", "N"], "bias": ["N"]},
    "int8_gemm": {"Y": ["M", "N"], "A": ["M", "K"], "B": ["K", "N"]},
    "rmsnorm_rope": {"out": ["T", "H", "D"], "q": ["T", "H", "D"], "w": ["D"], "pos": ["T"]},
    "softmax_backward": {"dx": ["R", "C"], "y": ["R", "C"], "dy": ["R", "C"]},
    "swiglu": {"y": ["T", "F"], "g": ["T", "F"], "u": ["T", "F"]},
}


def check_peer_layout(task):
    """A list of sentences: where task.json's arguments differ from what the task's peer assumes
    (PEERS, PEER_SHAPES); empty when they agree, or the task has no peer (then one sentence)."""
    name = task["name"]
    if name not in PEERS:
        return ["%s: no PyTorch peer is written for this task" % name]
    have = {a["name"]: a for a in task["args"]}
    problems = []
    if list(have) != list(PEERS[name]):
        problems.append("%s: arguments %s, the peer assumes %s" % (name, list(have), list(PEERS[name])))
    for arg, dtype in PEERS[name].items():
        if arg in have and have[arg]["dtype"] != dtype:
            problems.append("%s: %s is %s, the peer assumes %s" % (name, arg, have[arg]["dtype"], dtype))
    for arg, shape in PEER_SHAPES.get(name, {}).items():
        if arg in have and have[arg].get("shape") != shape:
            problems.append("%s: %s has shape %s, the peer assumes %s" % (name, arg, have[arg].get("shape"), shape))
    return problems


def peers_for(torch, name, t):
    """{peer name: a callable of no arguments} for a task, the tensors t prepared (what a model
    keeps ready: int64 labels, a rotary table) outside the timed call. None: no peer known."""
    F = torch.nn.functional
    if name == "vector_add":  # c = a + b, fp32
        return {"eager": lambda: torch.add(t["a"], t["b"])}
    if name == "gelu":  # tanh GELU of bf16 (fp32 math inside, one bf16 rounding)
        return {"eager": lambda: F.gelu(t["x"], approximate="tanh")}
    if name == "reduce_sum":  # the sum of all x, fp32
        return {"eager": lambda: t["x"].sum()}
    if name == "histogram":  # counts of each byte value 0..255
        return {"eager": lambda: torch.bincount(t["x"], minlength=256)}
    if name == "softmax":  # row softmax of fp32 [R,C]
        return {"eager": lambda: torch.softmax(t["x"], dim=-1)}
    if name == "layernorm":  # biased variance, eps 1e-5, gamma and beta [C], fp32
        C = t["C"]
        return {"eager": lambda: F.layer_norm(t["x"], (C,), t["gamma"], t["beta"], 1e-5)}
    if name == "rmsnorm":  # x / sqrt(mean(x^2) + 1e-6) * w, bf16 in and out
        C = t["C"]
        return {"eager": lambda: F.rms_norm(t["x"], (C,), t["w"], 1e-6)}
    if name == "cumsum":  # row-wise inclusive prefix sum, fp32
        return {"eager": lambda: torch.cumsum(t["x"], dim=1)}
    if name == "transpose":  # y[C,R] = x[R,C]^T, materialised
        return {"eager": lambda: t["x"].t().contiguous()}
    if name == "gemv":  # y[N] = W[N,K] x[K], bf16 (cuBLAS, fp32 accumulation)
        return {"eager": lambda: torch.mv(t["W"], t["x"])}
    if name in ("sgemm", "hgemm"):  # row-major C = A @ B (fp32 without TF32; bf16 with fp32 accumulation)
        def matmul_lt():  # PyTorch's cuBLASLt path (TORCH_BLAS_PREFER_CUBLASLT=1): the heuristic's 1 result
            before = torch.backends.cuda.preferred_blas_library()
            torch.backends.cuda.preferred_blas_library("cublaslt")
            try:
                return torch.matmul(t["A"], t["B"])
            finally:
                torch.backends.cuda.preferred_blas_library(before)
        # eager_idle: the same call as eager, timed after the GPU idled (time_peers)
        return {"eager": lambda: torch.matmul(t["A"], t["B"]), "eager_lt": matmul_lt,
                "eager_idle": lambda: torch.matmul(t["A"], t["B"])}
    if name == "conv2d":  # 3x3, stride 1, zero padding 1, NCHW, fp32 without TF32
        return {"eager": lambda: F.conv2d(t["x"], t["w"], padding=1)}
    if name == "add_layernorm":  # h = x + r (stored), y = layer_norm(h), fp32
        C = t["C"]

        def add_ln():
            h = t["x"] + t["r"]
            return F.layer_norm(h, (C,), t["gamma"], t["beta"], 1e-5), h
        return {"eager": add_ln}
    if name == "attention_decode":  # one query per head over S cached keys/values, scale 1/sqrt(D), bf16
        H, S, D = t["H"], t["S"], t["D"]
        q, k, v = t["q"].view(1, H, 1, D), t["k"].view(1, H, S, D), t["v"].view(1, H, S, D)
        return {"eager": lambda: F.scaled_dot_product_attention(q, k, v).view(H, D)}
    if name == "cross_entropy":  # logsumexp(logits[r]) - logits[r, label[r]] per row, fp32
        label = t["label"].long()
        return {"eager": lambda: F.cross_entropy(t["logits"], label, reduction="none")}
    if name == "gemm_bias_gelu":  # gelu_tanh(X @ W + bias), bf16, fp32 accumulation
        return {"eager": lambda: F.gelu(torch.addmm(t["bias"], t["X"], t["W"]), approximate="tanh")}
    if name == "int8_gemm":  # fp32(int32 A @ B) * 2^-(SA+SB)
        scale = 2.0 ** -(t["SA"] + t["SB"])
        return {"eager": lambda: torch._int_mm(t["A"], t["B"]).float() * scale}
    if name == "rmsnorm_rope":  # per-head RMSNorm (eps 1e-5, w over D) then rotate-half RoPE, theta 5e5
        T, H, D = t["T"], t["H"], t["D"]
        half = D // 2
        inv = torch.pow(torch.tensor(500000.0, dtype=torch.float64), -2.0 * torch.arange(half, dtype=torch.float64) / D)
        ang = torch.arange(int(t["pos"].max().item()) + 1, dtype=torch.float64)[:, None] * inv[None, :]
        cos_t, sin_t = ang.cos().float().to(t["q"].device), ang.sin().float().to(t["q"].device)  # a rotary table
        pos = t["pos"].long()

        def rms_rope():
            q = t["q"].float()
            n = q * torch.rsqrt(q.pow(2).mean(-1, keepdim=True) + 1e-5) * t["w"].float()
            c, s = cos_t[pos][:, None, :], sin_t[pos][:, None, :]
            lo, hi = n[..., :half], n[..., half:]
            return torch.cat((lo * c - hi * s, hi * c + lo * s), dim=-1).to(torch.bfloat16)
        return {"eager": rms_rope}
    if name == "softmax_backward":  # dx = y * (dy - sum(dy * y)) per row, fp32 (autograd's kernel)
        return {"eager": lambda: torch._softmax_backward_data(t["dy"], t["y"], -1, torch.float32)}
    if name == "swiglu":  # silu(g) * u, bf16
        return {"eager": lambda: F.silu(t["g"]) * t["u"]}
    return None


# ---- Triton kernels written after Triton's tutorials (triton-lang.org, python/tutorials) ----


try:  # the GPU machine has Triton; CI may not, and needs none of this
    import triton
    import triton.language as tl
except ImportError:
    triton = tl = None

# Triton's tutorial kernels, written here after Triton's tutorials (triton-lang.org, python/tutorials):
# softmax after tutorial 02 (fused softmax: one program per row, the whole row in registers), layer
# norm after tutorial 05 (the forward kernel: one program per row, mean and variance in passes of
# BLOCK columns), matmul after tutorial 03 (blocked, grouped program order for L2 reuse, autotuned
# tile configurations). Defined at module level, where Triton's JIT resolves tl.
if triton is not None:

    @triton.jit
    def softmax_kernel(y_ptr, x_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(x_ptr + row.to(tl.int64) * n_cols + cols, mask=mask, other=-float("inf"))
        x = x - tl.max(x, axis=0)
        e = tl.exp(x)
        tl.store(y_ptr + row.to(tl.int64) * n_cols + cols, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def layernorm_kernel(y_ptr, x_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        x_row = x_ptr + row.to(tl.int64) * n_cols
        y_row = y_ptr + row.to(tl.int64) * n_cols
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            acc += tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n_cols
        acc = tl.zeros([BLOCK], dtype=tl.float32)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            d = tl.where(cols < n_cols, tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32) - mean, 0.0)
            acc += d * d
        rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
        for off in range(0, n_cols, BLOCK):
            cols = off + tl.arange(0, BLOCK)
            m = cols < n_cols
            x = tl.load(x_row + cols, mask=m, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=m)
            b = tl.load(b_ptr + cols, mask=m)
            tl.store(y_row + cols, (x - mean) * rstd * w + b, mask=m)

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk, "GROUP": 8}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8), (128, 128, 64, 4, 4),
                                        (128, 128, 32, 4, 4), (64, 256, 32, 4, 4), (128, 64, 32, 4, 4)]]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def matmul_kernel(c_ptr, a_ptr, b_ptr, M, N, K, IEEE: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, GROUP: tl.constexpr):
        pid = tl.program_id(0)
        n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
        per_group = GROUP * n_n
        first_m = (pid // per_group) * GROUP
        group_m = min(n_m - first_m, GROUP)
        pm = first_m + (pid % per_group) % group_m
        pn = (pid % per_group) // group_m
        rm = (pm * BM + tl.arange(0, BM)) % M
        rn = (pn * BN + tl.arange(0, BN)) % N
        rk = tl.arange(0, BK)
        a_p = a_ptr + rm[:, None].to(tl.int64) * K + rk[None, :]
        b_p = b_ptr + rk[:, None].to(tl.int64) * N + rn[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, tl.cdiv(K, BK)):
            kk = k0 * BK + rk
            a = tl.load(a_p, mask=kk[None, :] < K, other=0.0)
            b = tl.load(b_p, mask=kk[:, None] < K, other=0.0)
            if IEEE:
                acc = tl.dot(a, b, acc, input_precision="ieee")
            else:
                acc = tl.dot(a, b, acc)
            a_p += BK
            b_p += BK * N
        cm = pm * BM + tl.arange(0, BM)
        cn = pn * BN + tl.arange(0, BN)
        c_p = c_ptr + cm[:, None].to(tl.int64) * N + cn[None, :]
        tl.store(c_p, acc.to(c_ptr.dtype.element_ty), mask=(cm[:, None] < M) & (cn[None, :] < N))


def triton_kernels():
    """The three kernels, or None without Triton."""
    return (softmax_kernel, layernorm_kernel, matmul_kernel) if triton is not None else None


def triton_peer(torch, triton, kernels, name, t):
    """The Triton tutorial kernel's callable for a task, or None."""
    softmax_kernel, layernorm_kernel, matmul_kernel = kernels
    if name == "softmax":
        R, C = t["R"], t["C"]
        y = torch.empty_like(t["x"])
        block = triton.next_power_of_2(C)
        warps = 4 if block <= 2048 else (8 if block <= 4096 else 16)

        def softmax():
            softmax_kernel[(R,)](y, t["x"], R, C, BLOCK=block, num_warps=warps)
            return y
        return softmax
    if name == "layernorm":
        R, C = t["R"], t["C"]
        y = torch.empty_like(t["x"])
        block = min(65536 // t["x"].element_size(), triton.next_power_of_2(C))
        warps = min(max(block // 256, 1), 8)

        def layernorm():
            layernorm_kernel[(R,)](y, t["x"], t["gamma"], t["beta"], C, 1e-5, BLOCK=block, num_warps=warps)
            return y
        return layernorm
    if name == "hgemm":  # not sgemm: its IEEE fp32 autotune took 25 s of the stage's time
        M, N, K = t["M"], t["N"], t["K"]
        c = torch.empty((M, N), dtype=t["A"].dtype, device=t["A"].device)

        def grid(meta):
            return (triton.cdiv(M, meta["BM"]) * triton.cdiv(N, meta["BN"]),)

        def matmul():
            matmul_kernel[grid](c, t["A"], t["B"], M, N, K, IEEE=False)
            return c
        return matmul
    return None


def first(out):
    return out[0] if isinstance(out, (tuple, list)) else out


def agree(torch, ref, got):
    """The largest difference of got from ref relative to ref's largest magnitude (outputs of a
    tuple compared in turn); a sanity check that two peers compute the same thing."""
    refs = ref if isinstance(ref, (tuple, list)) else [ref]
    gots = got if isinstance(got, (tuple, list)) else [got]
    worst = 0.0
    for r, g in zip(refs, gots):
        r, g = r.double().reshape(-1), g.double().reshape(-1)
        if r.shape != g.shape:
            return float("inf")
        scale = max(float(r.abs().max()), 1e-30)
        worst = max(worst, float((r - g).abs().max()) / scale)
    return worst


IDLE_S = 0.05  # how long the GPU idles before each call of a peer named *_idle


def time_peers(torch, calls, reps, flush):
    """Median ms of each callable, timed round-robin: for each repetition, each peer in turn gets
    the L2 cleaned (flush written), then an event pair around one call. A peer named *_idle is
    called after the GPU has finished everything queued and idled IDLE_S (no sustained load just
    before it, as between temper's timed launches, which verify each output)."""
    events = {k: [] for k in calls}
    for i in range(reps):
        for k, fn in calls.items():
            if k.endswith("_idle"):
                torch.cuda.synchronize()
                time.sleep(IDLE_S)
            flush.fill_(i)
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn()
            b.record()
            events[k].append((a, b))
    torch.cuda.synchronize()
    return {k: median([a.elapsed_time(b) for a, b in ev]) for k, ev in events.items()}


def run_peers(args, tasks):
    torch, triton, tl = torch_side()
    torch.backends.cuda.matmul.allow_tf32 = False  # sgemm: FP32, no TF32 (the task's semantics)
    torch.backends.cudnn.allow_tf32 = False  # conv2d likewise
    kernels = None if args.no_triton else triton_kernels()
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 0) or 64 << 20
    flush = torch.empty(max(4 * l2, 256 << 20) // 4, dtype=torch.int32, device="cuda")
    probe = torch.ones(64, 64, device="cuda", dtype=torch.bfloat16)
    float((probe @ probe).sum())  # loads cuBLAS, to name the file below
    try:
        blas = sorted({line.split()[-1] for line in open("/proc/self/maps") if "libcublasLt" in line})
    except OSError:
        blas = []
    print("# %s, torch %s (CUDA %s, %s), triton %s, L2 %d MiB, flush %d MiB, %d samples per peer" %
          (props.name, torch.__version__, torch.version.cuda, ", ".join(blas) or "cuBLASLt not seen",
           triton.__version__ if triton else "-", l2 >> 20, flush.numel() * 4 >> 20, args.reps), flush=True)
    gen = torch.Generator(device="cuda")
    gen.manual_seed(14)
    rows = []

    def stop(signum, frame):
        raise TimeoutError("stopped by signal %d" % signum)
    signal.signal(signal.SIGTERM, stop)
    try:
        measure(args, tasks, rows, torch, triton, kernels, flush, gen)
    except TimeoutError as e:  # a timeout's SIGTERM: the rows so far stand
        print("# %s; %d of %d tasks measured" % (e, len(rows), len(tasks)), flush=True)
    return rows


def measure(args, tasks, rows, torch, triton, kernels, flush, gen):
    """Appends one row per task to rows (so that what is measured stays when a signal stops it)."""
    for path in tasks:
        task = load_task(path)
        name = task["name"]
        row = {"task": name}
        notes = []
        start = time.time()
        try:
            spec, _ = bench_args(task)
            t = make_inputs(torch, spec, gen)
            calls = peers_for(torch, name, t)
            if calls is None:
                row["notes"] = "no peer"
                rows.append(row)
                continue
            if not args.no_compile:
                calls["compile"] = torch.compile(calls["eager"], dynamic=False)
            if kernels:
                tp = triton_peer(torch, triton, kernels, name, t)
                if tp:
                    calls["triton"] = tp
            ref = None
            for k in list(calls):
                try:
                    for _ in range(3):  # compile, autotune, lazy loading
                        out = calls[k]()
                    torch.cuda.synchronize()
                    if ref is None:
                        ref = out
                    else:
                        d = agree(torch, ref, out)
                        if d > (2e-2 if first(ref).dtype in (torch.bfloat16, torch.float16) else 1e-3):
                            notes.append("%s differs from eager by %.2g" % (k, d))
                except TimeoutError:
                    raise
                except Exception as e:  # a peer that cannot run is reported, not fatal
                    notes.append("%s failed: %s" % (k, str(e).splitlines()[0][:80] if str(e) else type(e).__name__))
                    del calls[k]
            times = time_peers(torch, calls, args.reps, flush)
            row.update(times)
            del t, calls, ref
        except TimeoutError:
            raise
        except Exception as e:
            notes.append("error: %s" % (str(e).splitlines()[0][:100] if str(e) else type(e).__name__))
        torch.cuda.empty_cache()
        if hasattr(torch, "_dynamo"):
            torch._dynamo.reset()
        notes.append("%.0f s" % (time.time() - start))
        row["notes"] = "; ".join(notes)
        rows.append(row)
        print("# %s: %s" % (name, json.dumps({k: v for k, v in row.items() if k != "task"})), flush=True)
        if args.json:
            json.dump({"rows": rows}, open(args.json, "w"), indent=1)


def main(argv=None):
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tasks", default=os.path.join(here, "..", "tasks"), help="the tasks folder")
    p.add_argument("--temper", default=None, help="temper binary: its tuned bests come from `temper best TASK --json`")
    p.add_argument("--device", default=None, help="the device temper best asks about (default: any; naming one costs"
                   " a device start per task)")
    p.add_argument("--suite", action="append", default=[], help="temper eval --json output of the baselines")
    p.add_argument("--reps", type=int, default=40, help="timed calls of each peer")
    p.add_argument("--only", default="", help="comma-separated task names")
    p.add_argument("--json", default=None, help="write every number here")
    p.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    p.add_argument("--no-triton", action="store_true", help="skip the Triton tutorial kernels")
    p.add_argument("--list", action="store_true", help="print each task's bench arguments and exit (no torch)")
    p.add_argument("--measure", action="store_true", help="time the peers only, into --json")
    p.add_argument("--report", action="store_true", help="no timing: the table from --json's rows and temper's numbers")
    p.add_argument("--tune-order", nargs="+", metavar="FILE", help="print these tunable candidates in the order the"
                   " stage tunes them (--suite: their times at default knobs) and exit (no torch)")
    p.add_argument("--calibrate", default=None, help="temper calibrate --json of the same call: the copy bandwidth")
    p.add_argument("--expert-run", action="append", default=[], help="PICK=FILE: temper eval --json of the GEMMs run"
                   " with TEMPER_EXPERT_PICK=PICK (cublas, first, fastest); repeat for rounds")
    p.add_argument("--interleaved", action="append", default=[], help="FILE: temper eval --json of a GEMM task's"
                   " tuned best run with TEMPER_EXPERT_PICK=cublas, a line a round: its goal is judged on these")
    args = p.parse_args(argv)
    if args.tune_order:
        print("\n".join(tune_order(args.tune_order, [row for s in args.suite for row in jsonl(s)])))
        return 0
    tasks = tasks_in(args.tasks)
    if args.only:
        want = set(args.only.split(","))
        tasks = [t for t in tasks if os.path.basename(os.path.dirname(t)) in want]
    if args.list:
        for path in tasks:
            spec, sizes = bench_args(load_task(path))
            print(os.path.basename(os.path.dirname(path)), sizes,
                  ["%s:%s%s" % (a["name"], a["dtype"], list(a.get("shape", ()))) for a in spec if a["role"] != "scalar"])
        return 0
    if not args.report:
        rows = run_peers(args, tasks)
        if args.measure:
            return 0
    else:
        if not args.json:
            print("peers.py: --report needs --json (the rows of a --measure run, read and rewritten)", file=sys.stderr)
            return 2
        try:
            with open(args.json) as f:
                rows = json.load(f)["rows"]
        except OSError as e:  # the measure did not run or wrote nothing: temper's numbers stand alone
            print("peers.py: no measured peers (%s): the table has temper's numbers alone" % e, file=sys.stderr)
            rows = [{"task": load_task(path)["name"], "notes": "peers not measured"} for path in tasks]
        except (ValueError, KeyError, TypeError) as e:
            print("peers.py: --json %s holds no rows of a --measure run: %s" % (args.json, e), file=sys.stderr)
            return 2
    return report(args, tasks, rows)


def report(args, tasks, rows):
    """Adds temper's numbers and each goal's outcome to the measured rows, prints the table (and
    the experts' one) and writes it all to --json."""
    best = {}
    by_name = {}
    for path in tasks:
        task = load_task(path)
        by_name[task["name"]] = task
        if args.temper:
            r = subprocess.run([args.temper, "best", task["name"], "--json"] + (["--device", args.device] if args.device
                                                                                  else []), capture_output=True, text=True)
            if r.returncode == 0:
                try:
                    best[task["name"]] = json.loads(r.stdout)
                except ValueError:
                    pass
    calib = None
    if args.calibrate:
        try:
            with open(args.calibrate) as f:
                calib = json.load(f)
        except (OSError, ValueError) as e:
            print("peers.py: --calibrate %s: %s (no copy bandwidth: shares and goals on it unknown)" % (args.calibrate, e),
                  file=sys.stderr)
    try:
        runs = expert_runs(args.expert_run)
    except ValueError as e:
        print("peers.py: %s" % e, file=sys.stderr)
        return 2
    suite_rows = [row for s in args.suite for row in jsonl(s)]
    temper = temper_numbers(suite_rows, best)
    il = interleaved_runs(args.interleaved)
    for r in rows:
        r["tuned"] = temper.get(r["task"], {}).get("tuned_ms")
        r["expert"] = temper.get(r["task"], {}).get("expert_ms")
        add_interleaved(r, il.get(r["task"]))
        if r["task"] in by_name:
            r.update(outcome(by_name[r["task"]], r, calib))
            note = il_note(r)
            if note:
                r["notes"] = "; ".join([n for n in (r.get("notes"), note) if n])
    print()
    print(table(rows))
    shares = [(r[k], r["task"], who) for r in rows if r.get("bound") == "memory"
              for k, who in (("tuned_copy", "temper"), ("peer_copy", r.get("peer"))) if r.get(k)]
    top = max(shares) if shares else None
    print("\nms: medians. temper best: the fastest correct kernel in the store (tuned, or a shipped kernel at"
          " its default knobs, or the baseline); faster peer: the fastest of eager, compile, triton and (GEMMs)"
          " torch.matmul through cuBLASLt or after an idle GPU; %% of copy: the time the task's roofline bytes"
          " take at the copy bandwidth (%s) over the kernel's; at most: the faster peer's time over that"
          " copy-bound time, the largest ratio over it a kernel moving the bytes at copy bandwidth reaches%s"
          " (both for memory-bound tasks only);"
          " ratio: the goal's reference time over temper best (above 1: temper is faster); a GEMM with"
          " interleaved rounds (its notes say) is judged on them: temper best against the cuBLAS call torch.matmul"
          " makes, launch by launch in one worker, the median of the rounds' ratios." % (
              "%.0f GB/s, temper calibrate in this call" % calib["copy_gbs"] if calib and calib.get("copy_gbs")
              else "not measured", "" if top is None else " (kernels can pass 100 %%: here %s on %s at %.0f %%)" % (
                  top[2], top[1], 100 * top[0])))
    for r in rows:
        by = temper.get(r["task"], {}).get("tuned_by")
        if by:
            print("temper best of %s: %s" % (r["task"], by))
    text = experts_table(rows, runs)
    if text:
        print("\nThe cuBLAS experts beside torch.matmul (expert: temper's, TEMPER_EXPERT_PICK=cublas: the plain"
              " cuBLAS call, as torch.matmul makes it; first: cuBLASLt's first heuristic result, as torch.matmul"
              " with TORCH_BLAS_PREFER_CUBLASLT=1; fastest: the default, the fastest of both kinds, timed; each"
              " the median of its rounds' medians; within 3 %: the goal of issue 14):\n")
        print(text)
    if args.json:
        try:
            with open(args.json, "w") as f:
                json.dump({"rows": rows, "temper": temper, "experts": runs, "calibrate": calib}, f, indent=1)
        except OSError as e:
            print("peers.py: the numbers were not written to --json: %s" % e, file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
