"""check_export.py: checks `temper export` files against the store they came from.

usage: check_export.py DB RUN_ID JSONL SFT RL TASK_JSONL TASK_SFT PARENT_ID CHILD_ID

Every evaluation of the run is one jsonl and one rl record (same ids, verdicts, sources, times
as the store's rows); every record parses with the json module; the sft records are exactly the
improving steps (computed here from the jsonl records by docs/export.md's rule); the rl rewards
follow the documented formula; the task export holds the incorrect parent's failing check, and
its correct child (recorded with lineage) is an sft step whose prompt shows that feedback. Prints
one line per check and exits 1 if any failed.
"""
import json
import math
import sqlite3
import sys

db, run_id, jsonl_path, sft_path, rl_path, task_path, task_sft_path, parent_id, child_id = sys.argv[1:10]
run_id, parent_id, child_id = int(run_id), int(parent_id), int(child_id)
failures = 0


def check(ok, what):
    global failures
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures += 1


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f]


con = sqlite3.connect(db)
rows = {r[0]: r for r in con.execute(
    "SELECT e.id, e.verdict, e.median_ms, e.options, c.source, e.candidate FROM evaluations e "
    "JOIN candidates c ON c.hash = e.candidate WHERE e.run_id = ? ORDER BY e.id", (run_id,))}
jsonl, sft, rl = load(jsonl_path), load(sft_path), load(rl_path)
check(len(rows) >= 3, f"the run has {len(rows)} evaluations in the store")
check([r["eval_id"] for r in jsonl] == sorted(rows), "jsonl: one record per evaluation of the run, in order")
check([r["eval_id"] for r in rl] == sorted(rows), "rl: one record per evaluation of the run, in order")
same = all(r["verdict"] == rows[r["eval_id"]][1] and r["candidate"]["options"] == rows[r["eval_id"]][3]
           and r["candidate"]["source"] == rows[r["eval_id"]][4] and r["run_id"] == run_id
           and (r["metrics"]["median_ms"] or 0) == (rows[r["eval_id"]][2] or 0) for r in jsonl)
check(same, "jsonl: verdict, options, source, run and median time are the store's")
check(all(r["format"] == "temper.export.jsonl/1" and r["task"]["name"] == "softmax" and r["task"]["spec_matches"]
          and r["task"]["spec"]["name"] == "softmax" and "reference" in r["task"] and r["origin"]["operator"] == "tune"
          and r["device"]["key"] and isinstance(r["feedback"]["timings"], list) for r in jsonl),
      "jsonl: task spec (current), operator 'tune', device key and feedback in every record")
timed = [r for r in jsonl if r["verdict"] == "correct" and r["feedback"]["timings"]]
check(timed and all(r["feedback"]["timings"][0]["baseline_median_ms"] > 0 and
                    r["metrics"]["speedup"] == r["feedback"]["timings"][0]["speedup"] for r in timed),
      "jsonl: the timings temper showed (baseline, speedup) are in the feedback")

# Bases: the first evaluation has none; later ones name the fastest correct one before them.
by_id = {r["eval_id"]: r for r in jsonl}
ok = jsonl[0]["parent"] is None
for r in jsonl[1:]:
    before = [x for x in jsonl if x["eval_id"] < r["eval_id"] and x["verdict"] == "correct"
              and (x["metrics"]["median_ms"] or 0) > 0]
    want = min(before, key=lambda x: (x["metrics"]["median_ms"], x["eval_id"]))["eval_id"] if before else None
    got = r["parent"]["eval_id"] if r["parent"] else None
    ok = ok and got == want and (r["parent"] is None or r["parent"]["relation"] == "run_best")
check(ok, "jsonl: each point's parent is the run's fastest correct evaluation before it")


def improving(r):
    p = r["parent"]
    if r["verdict"] != "correct" or p is None:
        return False
    if r["candidate"]["hash"] == p["hash"] and r["candidate"]["options"] == p["options"]:
        return False
    if p["verdict"] != "correct":
        return True
    return (r["metrics"]["median_ms"] or 0) > 0 and r["metrics"]["median_ms"] < p["median_ms"]


want = [r["eval_id"] for r in jsonl if improving(r)]
check([r["eval_id"] for r in sft] == want, f"sft: exactly the improving steps {want}")
check(all(r["prompt"] and r["completion"].startswith("```opencl\n") and
          by_id[r["eval_id"]]["candidate"]["options"] in r["completion"] and
          f"evaluation {r['base_id']}" in r["prompt"] for r in sft),
      "sft: each prompt shows its base, each completion the kernel and its options")


def reward(r):
    if r["verdict"] != "correct":
        return 0.0
    s = r["speedup"]
    return 1.0 if not s or s <= 0 else 1.0 + 0.5 * max(-1.0, min(2.0, math.log2(s)))


check(all(abs(r["reward"] - reward(r)) < 1e-12 and 0 <= r["reward"] <= 2 for r in rl),
      "rl: reward 0 when not correct, 1 + log2(speedup) / 2 (log2 held to [-1, 2]) when correct")

task = load(task_path)
n_task = con.execute("SELECT count(*) FROM evaluations WHERE task = 'softmax'").fetchone()[0]
check(len(task) == n_task, f"task export: all {n_task} evaluations of the task")
by_task = {r["eval_id"]: r for r in task}
bad, good = by_task.get(parent_id), by_task.get(child_id)
check(bad and bad["verdict"] == "incorrect" and bad["feedback"]["failing"] and bad["feedback"]["failing"]["shape"]
      and bad["message"] and bad["feedback"]["checks_passed"] < bad["feedback"]["checks_run"]
      and bad["parent"] is None and bad["origin"]["operator"] == "test-agent",
      "task export: the incorrect evaluation carries its failing check (shape, message), its maker, no parent")
check(good and good["verdict"] == "correct" and good["parent"]["eval_id"] == parent_id
      and good["parent"]["relation"] == "parent" and good["parent"]["verdict"] == "incorrect"
      and "unstable" in good["parent"]["source"].lower() and good["origin"]["operator"] == "test-agent",
      "task export: the correct child names its lineage parent, with the parent's source and verdict")
task_sft = load(task_sft_path)
want = [r["eval_id"] for r in task if improving(r)]
step = [r for r in task_sft if r["eval_id"] == child_id]
check([r["eval_id"] for r in task_sft] == want and step and step[0]["base_relation"] == "parent"
      and bad["message"] in step[0]["prompt"] and "Verdict: incorrect" in step[0]["prompt"],
      "task sft: the improving steps, the agent's among them, its prompt quoting the parent's failure")
sys.exit(1 if failures else 0)
