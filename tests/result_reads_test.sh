#!/usr/bin/env bash
# result_reads_test.sh: results are read through the generated reader (include/temper/result.h),
# not by key lookups. In the files converted to `struct temper_result`, no json_object_get (or the
# files' own lookup helpers) may take a key literal that is a field name of a result record, as the
# X-macros of result.h list them, except on the variables named below, which hold JSON that is not
# a result (a store row's columns, a tool's arguments, a tune summary, a device description), and
# in the accessors named below, the few documented functions that read one field of a result in
# the one form for clients (temper_session_result_verdict, ...), which the count lists apart.
# Every other file of src/ is held to the same rule without allowlists: a json_object_get whose key
# is a result field's name, outside the generated codec (src/eval/result.c) and the accessors,
# fails the test, so a new reader of results goes through struct temper_result or names its
# non-result JSON here.
# usage: result_reads_test.sh SOURCE_DIR
set -u
src=$1
exec python3 - "$src" <<'PY'
import os, re, sys

src = sys.argv[1]
header = open(os.path.join(src, "include/temper/result.h")).read()
# X(KIND, name, SUB, doc) in the TEMPER_RESULT_*_FIELDS macros
fields = set(re.findall(r"X\((?:STR|INT|REAL|BOOL|JSON|REC|LIST),\s*(\w+),", header))
if len(fields) < 50:
    sys.exit(f"result_reads_test: only {len(fields)} field names read from result.h")

# The converted files; per file, the variables that hold JSON that is not a result, and why.
converted = {
    "src/report/export.c": {"row": "a store row: its columns", "spec": "a task's specification"},
    "src/report/report.c": {"row": "a store row: its columns", "dev": "the store's device row",
                            "run": "the store's run row"},
    "src/report/report_plots.c": {},
    "src/mcp/tools_eval.c": {"args": "the tool's arguments", "summary": "the tune summary",
                             "best": "the tune summary's best point", "info": "the session's device description"},
    "src/mcp/tools_tasks.c": {"args": "the tool's arguments", "task": "a task's description",
                              "row": "a history row of the store: its columns"},
    "src/agent/prompt.c": {"info": "the session's device description"},
    "src/agent/chat.c": {"choice": "a chat completion's choice (the model's reply)",
                         "e": "the chat API's error object"},
    "src/agent/knowledge.c": {"h": "a knowledge search hit"},
    "src/agent/loop.c": {},
    "src/agent/population.c": {},
    "src/agent/reply.c": {},
    "src/search/tune.c": {"resumed_settings": "a tune run's stored settings",
                          "f": "a failure entry of the tune summary",
                          "p": "a scored point of the tune (config, score, index, result)",
                          "best": "the best scored point"},
    "src/search/strategies.c": {},
    "src/session/session.c": {"o": "the calibration file", "ceilings": "the device's measured ceilings",
                              "s->info": "the session's device description"},
    "src/session/session_tune.c": {"settings": "a tune run's stored settings"},
    "src/report/bench.c": {"bench": "a bench suite record"},
    "src/eval/eval_print.c": {"t": "a sanitizer's findings (the result's sanitize object, kept as JSON)",
                              "ceil": "the device's measured ceilings (temper calibrate --json)"},
    "src/cli/cmd_tune.c": {"s": "the tune summary",
                           "best": "the tune summary's best point (config, knobs, flags, timing, result)"},
    "src/cli/cmd_compare.c": {"ratio": "the ratio of the sides' times (temper_metric_ratio's rounds, median, spread)"},
    "src/cli/cmd_eval.c": {},
    "src/cli/cmd_agent.c": {"s": "the agent run's summary",
                            "best": "the agent summary's best kernel (eval_id, made_by, times)"},
    "src/cli/cmd_import.c": {"r": "the importer's report on one problem (the task.json it made, or why not)",
                             "task": "the task.json the importer made"},
    "src/eval/torch_reference.c": {"head": "the reference interpreter's answer line (how many bytes follow)"},
    "src/cli/cmd_bench.c": {"bench": "a bench suite record",
                            "temper_session_device_info(sessions[i])": "the session's device description"},
    "src/cli/cmd_devices.c": {"d": "a device description of temper_session_list_devices",
                              "r": "the device list (devices, unavailable, sandbox, triton)",
                              "triton": "which Triton the configured Python has (version, or error)",
                              "report": "the sandbox self-test's report"},
    "src/cli/cmd_history.c": {"row": "a history row of the store: its columns"},
    "src/cli/cmd_calibrate.c": {"dev": "the session's device description", "info": "the session's device description"},
    "src/cli/cmd_worker.c": {"temper_session_device_info(*s)": "the session's device description",
                             "temper_session_device_info(s)": "the session's device description"},
    "src/cli/session.c": {"device": "a device description (its caps)"},
    "src/cli/cmd_serve.c": {"d": "a device description of temper_session_list_devices"},
    "src/store/store.c": {"info": "a device description as its callers give it (temper_store_device_key's, "
                                  "the calibration's: the session's, or one naming a backend)",
                          "settings": "a run's settings (tune's)"},
    "src/bench/bench.c": {},
    "src/bench/bench_compare.c": {"bench": "a bench (docs/bench.md)", "a": "a bench, or a task's entry in bench a",
                                  "b": "a bench, or a task's entry in bench b",
                                  "t": "a task's entry in a bench or a comparison", "s": "a bench's suite metrics"},
    "src/store/store_bench.c": {"t": "a task's entry in a bench", "eval": "an evaluation's entry in a bench"},
    "src/store/store_history.c": {"a": "a history row", "b": "a history row"},
    "src/task/task.c": {"v": "an argument's entry in task.json", "root": "task.json"},
    "src/eval/eval.c": {"out": "a compile process's output (its binary, compiler and target)",
                        "e": "an entry of the worker handle's memo of earlier builds (its source_hash the 64-bit hash)",
                        "info": "the worker's device description, before it is a result's device_info"},
    "src/eval/worker_truth.c": {"frame": "the worker's reply as framed, its checks still holding outputs_at",
                                "truth": "the worker's truth frame: where the reference's outputs lie",
                                "tc": "a check of the truth frame", "want_o": "an output of a truth frame's check"},
    "src/session/request.c": {"item": "a request item (a candidate to evaluate, not its result)",
                              "o": "a request item's options"},
    "src/agent/agent.c": {"info": "the session's device description", "recorded": "an agent session's stored record",
                          "best": "the agent summary's best kernel"},
    "src/agent/run.c": {"s": "an agent run's stored settings"},
    "src/serve/api.c": {"item": "a request item of the API", "x": "an entry of the API's task list"},
    "src/serve/consumer.c": {"item": "a queued request item"},
    "src/serve/queue.c": {"item": "a queued request item"},
    "src/serve/metrics.c": {"w": "a worker's status record of the queue", "x": "a worker's status record of the queue"},
    "src/mcp/server.c": {"params": "a JSON-RPC request's params", "msg": "a JSON-RPC message",
                         "m": "a JSON-RPC message of a batch"},
    "src/mcp/call.c": {"info": "the session's device description"},
    "src/eval/cache_service.c": {"req": "a worker's request to the cache service (a PyTorch reference's inputs)",
                                 "out": "a compile process's output (its binary, compiler and target)",
                                 "m": "a module of the cache service's request (its source, key and options)"},
    "src/worker/pipeline.c": {"key": "what same_code_key made: the code, source, knobs and options an earlier "
                                   "build was asked with", "req": "the eval request from the parent",
                            "reply": "the reply records_write has just written from struct temper_result: it "
                                     "adds outputs_at (not a field; worker_truth.c reads it) to its checks"},
    "src/worker/pipeline_timing.c": {},
    "src/worker/pipeline_floor.c": {},
    "src/worker/pipeline_verify.c": {},
    "src/eval/deep.c": {"r": "a sanitizer tool's findings (errors, warnings: the sanitize object, kept as JSON)",
                        "findings": "a sanitizer tool's findings, as deep_sanitize sums them"},
    "src/worker/worker_main.c": {"req": "the build request (the device's name, arch and compiler, the options)"},
    "src/worker/worker_triton.c": {"req": "the Triton compile request (python, arch, options, probe)",
                                   "reply": "the Triton helper's reply (ok, verdict, message, triton, binary)"},
    "src/eval/triton_build.c": {"out": "a compile process's output (its log, compiler and verdict)"},
    "src/device/cuda_triton.c": {"e": "a kernel's entry in a Triton container's header (Triton's launch metadata)"},
    "src/eval/worker_calls.c": {"*info": "the info reply: the device's description, or why it could not be opened",
                                "*ceilings": "the calibrate reply: the measured ceilings, or why they were not"},
    "src/worker/worker_cache.c": {"r": "the calling program's reply to a reference request"},
    "src/eval/worker.c": {"m": "a reply frame of any op (info, calibrate, eval, an error): worker_restarted is the "
                               "flag the worker sets on every op's reply before it exits (worker_serve.c)"},
}
# Per file, the documented accessors (include/temper/session.h) whose bodies read one field of a
# result in the one form: they return what they read borrowed from the client's result, which
# parsing the whole record into a struct temper_result (owned, freed on return) cannot.
accessors = {
    "src/session/session.c": {"temper_session_result_verdict", "temper_session_result_cancelled",
                              "temper_session_result_error", "temper_session_result_task_error",
                              "temper_session_result_store_id", "temper_session_result_store_error"},
}
# A function's definition opens at the first column; its body ends at a closing brace there.
definition = re.compile(r"^[A-Za-z_].*?\b(\w+)\((?!.*;\s*$)")


def lines_outside_accessors(rel, path):
    """The file's lines, numbered, with those inside its accessors' bodies marked."""
    names, current = accessors.get(rel, set()), None
    for n, line in enumerate(open(path, errors="replace"), 1):
        m = definition.match(line)
        if m:
            current = m.group(1)
        yield n, line, current in names
        if line.startswith("}"):
            current = None
helpers = ("json_object_get", "str", "copy_of", "num_or_nan", "num")
call = re.compile(r"\b(" + "|".join(helpers) + r")\(\s*([^,()]*(?:\([^()]*\))?[^,()]*),\s*\"(\w+)\"")
# A result's lookups are json_object_get calls anywhere; the helpers count only in converted files.
plain = re.compile(r"\bjson_object_get\(\s*([^,()]*(?:\([^()]*\))?[^,()]*),\s*\"(\w+)\"")

failures = 0
for rel, allowed in converted.items():
    path = os.path.join(src, rel)
    for n, line, in_accessor in lines_outside_accessors(rel, path):
        if in_accessor:
            continue
        for fn, obj, key in call.findall(line):
            if key in fields and obj.strip() not in allowed:
                print(f"{rel}:{n}: {fn}({obj.strip()}, \"{key}\") reads a result field by key; "
                      "read it from struct temper_result (temper_result_from_json / _from_stored)")
                failures += 1

counts, in_accessors = {}, 0
for root, _, files in os.walk(os.path.join(src, "src")):
    for name in files:
        if not name.endswith(".c"):
            continue
        rel = os.path.relpath(os.path.join(root, name), src)
        if rel == "src/eval/result.c":
            continue  # the generated codec itself
        allowed = converted.get(rel, {})
        k = 0
        for _, line, in_accessor in lines_outside_accessors(rel, os.path.join(root, name)):
            hits = sum(1 for obj, key in plain.findall(line) if key in fields and obj.strip() not in allowed)
            if in_accessor:
                in_accessors += hits
            else:
                k += hits
        if k:
            counts[rel] = k
total = sum(counts.values())
print(f"json_object_get calls in src/ that take a result field's name as their key outside the generated "
      f"codec, the converted files' allowlisted variables and the accessors: {total}")
for rel, k in sorted(counts.items(), key=lambda x: -x[1]):
    print(f"FAIL {rel}: {k} (read the result through struct temper_result, or name the variable's "
          "JSON in this test's converted table)")
failures += total
print(f"information: {in_accessors} more in the documented accessors "
      f"({', '.join(sorted(n for names in accessors.values() for n in names))})")
if failures:
    print(f"FAIL: {failures} result field lookups by key")
    sys.exit(1)
print(f"ok: no result field is read by key in the {len(converted)} converted files")
PY
