#!/usr/bin/env python3
"""gpu_tables.py: the short tables bench/gpu.sh prints, from temper's JSON output."""
import json
import statistics
import sys


def jsonl(path):
    """Every JSON object in a file: one per line (several candidates) or one pretty-printed."""
    rows = []
    try:
        text = open(path).read()
    except OSError:
        return rows
    dec, i = json.JSONDecoder(), 0
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


def load(path):
    try:
        return json.load(open(path))
    except (OSError, ValueError) as e:
        return {"error": str(e)}


def suite(path):
    print("%-28s %-9s %10s %9s %8s %9s %10s %9s %8s" % ("task (naive.cu)", "verdict", "ms", "GB/s", "TFLOP/s", "roofline",
                                                     "expert ms", "expert", "bound"))
    for r in jsonl(path):
        name = r.get("task") or r.get("candidate")
        for t in r.get("timings") or [{}]:
            ex = "%.4g" % t["expert_median_ms"] if "expert_median_ms" in t else "-"
            ex_share = "%.1f%%" % (100 * t["roofline_floor_ms"] / t["expert_median_ms"]) if "expert_median_ms" in t and "roofline_floor_ms" in t else "-"
            print("%-28s %-9s %10.4g %9.0f %8.2f %8.1f%% %10s %9s %8s" % (name[:28], r["verdict"], t.get("median_ms", 0), t.get("gbps", 0),
                  t.get("tflops", 0), 100 * t.get("roofline_share", 0), ex, ex_share, t.get("bound", "-")))
        if r["verdict"] != "correct":
            print("    %s" % r.get("message", "")[:200])


def tune(paths):
    print("%-30s %7s %10s %9s %8s %9s %9s %8s %s" % ("tuned candidate", "evals", "best ms", "GB/s", "TFLOP/s", "roofline",
                                                  "vs base", "vs exp", "best config"))
    for p in paths:
        s = load(p)
        if "error" in s or "best" not in s:
            print("%-30s failed: %s" % (p.split("tune_")[-1][:30], str(s.get("error", s.get("by_verdict")))[:150]))
            continue
        t = s["best"]["timing"]
        same = s.get("same_code", 0)  # points whose code was an earlier one's: scored from it, not run
        evals = "%d+%d" % (s["evaluations"] - same, same) if same else "%d" % s["evaluations"]
        print("%-30s %7s %10.4g %9.0f %8.2f %8.1f%% %8.2fx %8s %s" % (s["candidate"].replace("tasks/L1/", "")[:30], evals,
              t["median_ms"], t["gbps"], t["tflops"], 100 * (t.get("roofline_share") or 0), t["speedup"],
              "%.2fx" % t["speedup_vs_expert"] if t.get("speedup_vs_expert") is not None else "-", s["best"]["config"]))


def throughput(full_path, full_s, check_path, check_s):
    full, check = jsonl(full_path), jsonl(check_path)

    def verdicts(rows):
        return {v: sum(1 for r in rows if r["verdict"] == v) for v in set(r["verdict"] for r in rows)}
    print("full (cold build cache, timed): %d results %s in %.1f s = %.0f / min" % (len(full), verdicts(full), float(full_s), 60 * len(full) / float(full_s)))
    print("check-only (warm build cache):  %d results %s in %.1f s = %.0f / min" % (len(check), verdicts(check), float(check_s), 60 * len(check) / float(check_s)))
    for name, rows in (("full", full), ("check-only", check)):
        if rows:
            keys = ["build", "inputs", "reference", "device", "compare", "timing", "worker"]
            med = {k: statistics.median((r.get("phases_ms") or {}).get(k) or 0 for r in rows) for k in keys}
            print("  %-10s median ms per candidate: elapsed %.1f; " % (name, statistics.median(r["elapsed_ms"] for r in rows)) +
                  ", ".join("%s %.1f" % (k, med[k]) for k in keys))
    # what a timed sample costs besides the kernel itself (fresh inputs, the answer, the checks)
    per = [(t["loop_ms"] / t["samples"], t["loop_ms"] / t["samples"] - t["median_ms"], t["samples"], t["warmup_ms"])
           for r in full for t in (r.get("timings") or []) if t.get("loop_ms") and t.get("samples")]
    if per:
        print("  full       median per timed sample: wall %.3f ms, besides the kernel %.3f ms; samples %.0f; warm-up %.1f ms" %
              tuple(statistics.median(p[k] for p in per) for k in range(4)))
    steps = [{k: v / t["samples"] for k, v in t["loop_steps_ms"].items()}
             for r in full for t in (r.get("timings") or []) if t.get("loop_steps_ms") and t.get("samples")]
    if steps:
        print("  full       median per timed sample by step (wall ms): " +
              ", ".join("%s %.3f" % (k, statistics.median(x[k] for x in steps)) for k in steps[0]))


def fidelity(p1, p2, p3):
    f1, f2, f3 = load(p1), load(p2), load(p3)
    try:
        m1, m2 = f1["timings"][0]["median_ms"], f2["timings"][0]["median_ms"]
        print("softmax block.cu median %.4f ms then %.4f ms: ratio %.4f" % (m1, m2, m2 / m1))
    except (KeyError, IndexError, TypeError) as e:
        print("fidelity runs failed", e)
    for f in (f2, f3):
        try:
            p = f["profile"]
            k = p["kernels"][0]
            print("  %s: ncu %.4f ms vs temper %.4f ms: ncu/temper %.4f; DRAM %.0f%%, occupancy %.0f%%, %d registers" % (
                f["candidate"], k["duration_ms"], f["timings"][0]["median_ms"], p.get("ncu_over_temper", 0),
                k.get("dram_throughput_pct", 0), k.get("achieved_occupancy_pct", 0), k.get("registers_per_thread", 0)))
        except (KeyError, IndexError, TypeError) as e:
            print("  profile failed:", str(f.get("profile", f.get("error")))[:200], e)


def sanitize(path):
    s = load(path)
    print("sanitize %s: verdict %s, %s" % (s.get("candidate"), s.get("verdict"),
          {k: v.get("errors", v) if isinstance(v, dict) else v for k, v in (s.get("sanitize") or {}).items()}))


def evals(paths):
    """One row per evaluation: what was run, its verdict, time, rates and ratios in the same run."""
    print("%-44s %-9s %10s %9s %8s %9s %9s %8s" % ("candidate and settings", "verdict", "ms", "GB/s", "TFLOP/s",
                                                  "roofline", "vs base", "vs exp"))
    for p in paths:
        label = open(p + ".label").read().strip() if p and __import__("os").path.exists(p + ".label") else p
        rows = jsonl(p)
        if not rows:
            print("%-44s no result" % label[:44])
        opts = label[label.index(" --") + 1:] if " --" in label else ""
        for r in rows:
            name = label if len(rows) == 1 else ("%s %s" % (str(r.get("candidate", "?")).split("/")[-1], opts)).strip()
            ts = r.get("timings") or [{}]
            for t in ts:
                vs_exp = "%.3fx" % t["speedup_vs_expert"] if t.get("speedup_vs_expert") is not None else "-"
                print("%-44s %-9s %10.4g %9.0f %8.2f %8.1f%% %8.2fx %8s" % (name[-44:], r.get("verdict", "-"),
                      t.get("median_ms", 0), t.get("gbps", 0), t.get("tflops", 0), 100 * t.get("roofline_share", 0),
                      t.get("speedup", 0), vs_exp))
            if r.get("verdict") != "correct":
                print("    %s" % str(r.get("message", ""))[:300])
            if r.get("sanitize"):
                print("    sanitize: %s" % ", ".join("%s %s%s" % (k, v.get("errors"), " (incomplete)" if "incomplete" in v else "")
                                                   for k, v in r["sanitize"].items() if isinstance(v, dict)))


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "suite":
        suite(sys.argv[2])
    elif what == "tune":
        tune(sys.argv[2:])
    elif what == "throughput":
        throughput(*sys.argv[2:6])
    elif what == "fidelity":
        fidelity(*sys.argv[2:5])
    elif what == "evals":
        evals(sys.argv[2:])
    elif what == "sanitize":
        sanitize(sys.argv[2])
