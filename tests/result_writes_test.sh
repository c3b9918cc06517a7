#!/usr/bin/env bash
# result_writes_test.sh: a result's JSON is written only by the generated writer
# (temper_result_to_json and the records' writers, include/temper/result.h): code that completes or
# changes a result sets the members of struct temper_result and writes it once, instead of patching
# the object by key. So no json_object_set, json_object_set_new or json_object_del in src/ may take a
# key literal that is the name of a top-level field of a result (TEMPER_RESULT_FIELDS), outside the
# generated codec (src/eval/result.c), except on the variables named below, which hold JSON that is
# not a result (a request, a job, a store row, a tool's arguments...), each with why.
# usage: result_writes_test.sh SOURCE_DIR
set -u
src=$1
exec python3 - "$src" <<'PY'
import os, re, sys

src = sys.argv[1]
header = open(os.path.join(src, "include/temper/result.h")).read()
block = re.search(r"#define TEMPER_RESULT_FIELDS\(X\)(.*?)\n\n", header, re.S)
if not block:
    sys.exit("result_writes_test: no TEMPER_RESULT_FIELDS in result.h")
# X(KIND, name, SUB, doc) in the result's own field list
fields = set(re.findall(r"X\((?:STR|INT|REAL|BOOL|JSON|REC|LIST),\s*(\w+),", block.group(1)))
if len(fields) < 30:
    sys.exit(f"result_writes_test: only {len(fields)} field names read from TEMPER_RESULT_FIELDS")

# Per file, the variables that hold JSON that is not a result although a key has a field's name,
# and why.
allowed = {
    "src/serve/api.c": {"item": "a request item of the API (the candidate's task, before it is evaluated)"},
    "src/agent/knowledge.c": {"h": "a knowledge search hit (a kernel's task and device)"},
    "src/agent/run.c": {"s": "an agent run's settings (whether it profiles)"},
    "src/report/export.c": {"o": "a timing's entry of an export's table (docs/export.md), not a result"},
    "src/session/request.c": {"o": "a request item's options (its seed)",
                              "item": "a request item (the candidate to evaluate, its task, knobs and options)"},
    "src/session/session_tune.c": {"fresh": "a tune run's stored settings (the task's hash a resume must match)"},
    "src/cli/cmd_calibrate.c": {"ceil": "the measured ceilings as `temper calibrate --json` prints them, with the "
                                        "device's description"},
    "src/store/store.c": {"*result": "a result as the store kept it, in whatever form it was given (results from "
                                     "before the one form, by hand): the store adds its row id and gives it back "
                                     "as kept, not rewritten in the one form"},
    "src/store/store_bench.c": {"r": "a result as the store kept it (see store.c's *result): its row id added"},
    "src/cli/cmd_import.c": {"task": "the task.json an import writes (its baselines)"},
    "src/mcp/call.c": {"params": "a JSON-RPC progress notification's params (its message)"},
    "src/mcp/tools_tasks.c": {"out": "a task's description for a tool call (its expert routine)"},
    "src/worker/worker_main.c": {"out": "the compile process's output frame (its log, binary and, for a Triton "
                                        "candidate the compiler refused, the verdict it gives)"},
    "src/worker/worker_serve.c": {"frame": "a reply to an op whose reply is not a result (info, devices, "
                                           "calibrate, an error): worker_restarted is the protocol's flag that "
                                           "the worker exits after it"},
}

setter = re.compile(r"\bjson_object_(?:set_new|set|del|set_new_nocheck|set_nocheck)\(\s*([^,()]*(?:\([^()]*\))?[^,()]*)"
                    r",\s*\"(\w+)\"")
failures = 0
for root, _, files in os.walk(os.path.join(src, "src")):
    for name in sorted(files):
        if not name.endswith(".c"):
            continue
        rel = os.path.relpath(os.path.join(root, name), src)
        if rel == "src/eval/result.c":
            continue  # the generated codec itself
        ok = allowed.get(rel, {})
        for n, line in enumerate(open(os.path.join(root, name), errors="replace"), 1):
            for obj, key in setter.findall(line):
                if key in fields and obj.strip() not in ok:
                    print(f"FAIL {rel}:{n}: sets or deletes \"{key}\" of {obj.strip()} by key; set the member of "
                          "struct temper_result and write it with temper_result_to_json (or name the variable's "
                          "JSON in this test's allowed table)")
                    failures += 1
for rel in allowed:
    if not os.path.exists(os.path.join(src, rel)):
        print(f"FAIL {rel}: named in the allowed table but not in src/")
        failures += 1
if failures:
    print(f"FAIL: {failures} result fields written by key")
    sys.exit(1)
print(f"ok: no result field is written by key outside the generated writer ({len(fields)} field names, "
      f"{sum(len(v) for v in allowed.values())} variables of JSON that is not a result allowed)")
PY
