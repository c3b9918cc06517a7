/* tools.c: the tools `temper mcp` offers, with their input and output schemas (what tools/list
 * shows and what a call's arguments are checked against), and the ones that need no device run:
 * list_tasks, show_task and best_kernel. The evaluating tools are in tools_eval.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "temper/error.h"
#include "temper/kernel.h"
#include "temper/store.h"
#include "temper/task.h"

/* The source's limit, TEMPER_SOURCE_MAX (1 MiB), in the schemas' words. */
#define SOURCE_SCHEMA                                                                                        \
    "\"source\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 1048576, \"description\": "           \
    "\"The candidate kernel's text: CUDA or OpenCL with @temper directives (task, launch, param, require; "  \
    "docs/candidate.md). At most 1 MiB (1048576 bytes).\"}, "                                                 \
    "\"lang\": {\"type\": \"string\", \"enum\": [\"cuda\", \"opencl\"], \"description\": \"The source's language.\"}"

#define TASK_NAME_SCHEMA                                                                                     \
    "\"task\": {\"type\": \"string\", \"minLength\": 1, \"maxLength\": 63, \"description\": \"A task's name, "  \
    "as list_tasks gives it (softmax, sgemm, ...).\"}"

#define RESULT_SCHEMA                                                                                        \
    "{\"type\": \"object\", \"description\": \"The result record of `temper eval --json` (docs/result.md): "  \
    "verdict, message, checks (each with its shape and first mismatch), timings (median_ms, speedup, "         \
    "roofline_share, bound), compile_log, store_id.\", \"properties\": {"                                     \
    "\"verdict\": {\"type\": \"string\", \"enum\": [\"correct\", \"incorrect\", \"compile_error\", "           \
    "\"runtime_error\", \"timeout\", \"invalid\"]}, \"message\": {\"type\": \"string\"}, "                     \
    "\"task\": {\"type\": \"string\"}, \"checks\": {\"type\": \"array\"}, \"timings\": {\"type\": \"array\"}, " \
    "\"compile_log\": {\"type\": [\"string\", \"null\"]}, \"store_id\": {\"type\": [\"integer\", \"null\"]}}, " \
    "\"required\": [\"verdict\", \"message\"]}"

static const struct mcp_tool tools[] = {
    {"list_tasks", "List the benchmark tasks",
     "The tasks temper can judge kernels against, by level: name, summary, FLOP and byte models, and the "
     "candidate files in each task's folder.",
     "{\"type\": \"object\", \"properties\": {}, \"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"tasks\": {\"type\": \"array\", \"items\": {\"type\": \"object\", "
     "\"properties\": {\"name\": {\"type\": \"string\"}, \"level\": {\"type\": \"integer\"}, \"summary\": "
     "{\"type\": \"string\"}, \"flops\": {\"type\": \"string\"}, \"bytes\": {\"type\": \"string\"}, \"folder\": "
     "{\"type\": \"string\"}, \"candidates\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}}}, "
     "\"required\": [\"name\", \"level\", \"summary\"]}}}, \"required\": [\"tasks\"]}",
     1, mcp_tool_list_tasks},
    {"show_task", "Describe a task",
     "A task's kernel arguments (in kernel order, with roles, types and shapes), size expressions, check and "
     "bench shapes, tolerance, FLOP and byte models, its C reference and its baselines' sources: what a "
     "candidate kernel for it must compute, and how it is launched.",
     "{\"type\": \"object\", \"properties\": {" TASK_NAME_SCHEMA "}, \"required\": [\"task\"], "
     "\"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"level\": {\"type\": "
     "\"integer\"}, \"summary\": {\"type\": \"string\"}, \"arguments\": {\"type\": \"array\"}, \"check_shapes\": "
     "{\"type\": \"array\"}, \"reference_source\": {\"type\": \"string\"}, \"baseline_sources\": {\"type\": "
     "\"object\"}}, \"required\": [\"name\", \"arguments\"]}",
     1, mcp_tool_show_task},
    {"evaluate", "Evaluate a kernel",
     "Checks a candidate kernel against its task's C reference on every check shape with a public and a "
     "secret seed, against the baseline at the bench shapes, and times it (unless timing is false). Returns "
     "the result record; a kernel that is not correct is an error result whose text gives the verdict, the "
     "failing shape and element, and the compile log, so that it can be corrected.",
     "{\"type\": \"object\", \"properties\": {" SOURCE_SCHEMA ", \"knobs\": {\"type\": \"object\", "
     "\"additionalProperties\": {\"type\": [\"string\", \"integer\", \"number\"]}, \"description\": \"Values "
     "for the candidate's @temper param knobs, NAME: value; unset knobs take their first value.\"}, "
     "\"timing\": {\"type\": \"boolean\", \"default\": true, \"description\": \"false: correctness only "
     "(faster).\"}, \"device\": {\"type\": \"string\", \"maxLength\": 63, \"description\": \"cuda[:N] or "
     "opencl[:N]; the server serves one device (its --device, else the first call's, else the default).\"}}, "
     "\"required\": [\"source\", \"lang\"], \"additionalProperties\": false}",
     RESULT_SCHEMA, 0, mcp_tool_evaluate},
    {"tune", "Tune a kernel's knobs",
     "Searches a candidate's knobs (its @temper param lines) and the compiler's controls for the fastest "
     "configuration that passes every check, re-times the best few in full, and returns the summary with the "
     "best configuration and the kernel with those knobs fixed. Sends notifications/progress per evaluation "
     "when the request has a progressToken; notifications/cancelled stops it (the run stays resumable). "
     "Defaults: 20 evaluations or 240 s, whichever ends first.",
     "{\"type\": \"object\", \"properties\": {" SOURCE_SCHEMA ", \"budget\": {\"type\": \"integer\", "
     "\"minimum\": 1, \"maximum\": 1000, \"default\": 20, \"description\": \"Evaluations at most.\"}, "
     "\"time_s\": {\"type\": \"number\", \"minimum\": 1, \"maximum\": 86400, \"default\": 240, \"description\": "
     "\"Seconds at most (the screening stops; the best few are then re-timed).\"}, \"strategy\": {\"type\": "
     "\"string\", \"description\": \"The search strategy.\"}, \"compiler_knobs\": {\"type\": \"boolean\", "
     "\"default\": true, \"description\": \"Search the compiler's controls too.\"}, \"retime\": {\"type\": "
     "\"integer\", \"minimum\": 1, \"maximum\": 32, \"default\": 3, \"description\": \"How many of the best "
     "to re-time in full.\"}, \"screen_budget_s\": {\"type\": \"number\", \"minimum\": 0.01, \"maximum\": 60, "
     "\"default\": 0.3, \"description\": \"Timing budget of a screening evaluation per bench shape.\"}, "
     "\"full_budget_s\": {\"type\": \"number\", \"minimum\": 0.01, \"maximum\": 60, \"default\": 2, "
     "\"description\": \"Timing budget of a re-timing per bench shape.\"}}, \"required\": [\"source\", "
     "\"lang\"], \"additionalProperties\": false}",
     "{\"type\": \"object\", \"description\": \"The tune's summary, as `temper tune --json` prints it, with "
     "best_source.\", \"properties\": {\"best\": {\"type\": [\"object\", \"null\"]}, \"evaluations\": {\"type\": "
     "\"integer\"}, \"interrupted\": {\"type\": \"boolean\"}, \"best_source\": {\"type\": [\"string\", "
     "\"null\"]}}, \"required\": [\"best\", \"evaluations\"]}",
     0, mcp_tool_tune},
    {"profile", "Profile a kernel",
     "Evaluates a kernel and says where its time goes. CUDA: Nsight Compute's metrics (duration, DRAM "
     "throughput, occupancy, registers, local memory) for a correct kernel, and the bottleneck. OpenCL: "
     "temper reads no hardware counters there; the timing, the roofline share and which ceiling bounds it.",
     "{\"type\": \"object\", \"properties\": {" SOURCE_SCHEMA "}, \"required\": [\"source\", \"lang\"], "
     "\"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"verdict\": {\"type\": \"string\"}, \"backend\": {\"type\": "
     "\"string\"}, \"counters\": {\"type\": \"string\", \"enum\": [\"nsight_compute\", \"none\"]}, \"metrics\": "
     "{\"type\": [\"object\", \"array\", \"null\"]}, \"bottleneck\": {\"type\": \"string\"}, \"median_ms\": "
     "{\"type\": [\"number\", \"null\"]}, \"roofline_share\": {\"type\": [\"number\", \"null\"]}, \"bound\": "
     "{\"type\": [\"string\", \"null\"]}, \"note\": {\"type\": \"string\"}, \"result\": {\"type\": \"object\"}}, "
     "\"required\": [\"verdict\", \"backend\", \"counters\", \"bottleneck\"]}",
     0, mcp_tool_profile},
    {"best_kernel", "The best kernel known",
     "The fastest correct, timed kernel the store holds for a task (judged against the task's current "
     "content), on a device or any: its result record and its source.",
     "{\"type\": \"object\", \"properties\": {" TASK_NAME_SCHEMA ", \"device\": {\"type\": \"string\", "
     "\"maxLength\": 63, \"description\": \"cuda[:N] or opencl[:N]; omitted: any device.\"}}, \"required\": "
     "[\"task\"], \"additionalProperties\": false}",
     "{\"type\": \"object\", \"properties\": {\"task\": {\"type\": \"string\"}, \"result\": {\"type\": "
     "\"object\"}, \"source\": {\"type\": \"string\"}}, \"required\": [\"task\", \"result\", \"source\"]}",
     1, mcp_tool_best_kernel},
};

const struct mcp_tool *mcp_tools(size_t *n)
{
    *n = sizeof(tools) / sizeof(tools[0]);
    return tools;
}

const struct mcp_tool *mcp_tool_find(const char *name)
{
    for (size_t i = 0; i < sizeof(tools) / sizeof(tools[0]); i++)
        if (!strcmp(tools[i].name, name))
            return &tools[i];
    return NULL;
}

json_t *mcp_tool_input_schema(const struct mcp_tool *tool)
{
    json_t *schema = json_loads(tool->input_schema, 0, NULL);
    json_t *strategy = json_object_get(json_object_get(schema, "properties"), "strategy");
    if (strategy) { /* the strategies this build has, the first the default */
        json_t *names = json_array();
        for (int i = 0; temper_strategies()[i]; i++)
            json_array_append_new(names, json_string(temper_strategies()[i]->name));
        json_object_set_new(strategy, "enum", names);
        json_object_set_new(strategy, "default", json_string(temper_strategies()[0]->name));
    }
    return schema;
}

json_t *mcp_tool_result(json_t *structured, const char *text, int is_error)
{
    json_t *content = json_array();
    json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", text));
    json_t *r = json_pack("{s:o}", "content", content);
    if (structured) {
        /* the structured result's JSON as text too, for clients before structuredContent */
        char *dump = json_dumps(structured, JSON_COMPACT);
        if (dump)
            json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", dump));
        free(dump);
        json_object_set_new(r, "structuredContent", structured);
    }
    if (is_error)
        json_object_set_new(r, "isError", json_true());
    return r;
}

/* The candidate files (.cu, .cl) of a task folder, sorted. */
static json_t *candidate_files(const char *dir)
{
    json_t *names = json_array();
    struct dirent **list = NULL;
    int n = scandir(dir, &list, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        size_t len = strlen(list[i]->d_name);
        if (len > 3 && (!strcmp(list[i]->d_name + len - 3, ".cu") || !strcmp(list[i]->d_name + len - 3, ".cl")))
            json_array_append_new(names, json_string(list[i]->d_name));
        free(list[i]);
    }
    free(list);
    return names;
}

/* What listing collects. */
struct listing {
    json_t *tasks; /* the tasks loaded */
    json_t *bad;   /* messages of those that did not load */
};

static int list_one(void *user, const char *dir)
{
    struct listing *l = user;
    struct temper_task t;
    char msg[1024];
    if (temper_task_load(dir, &t, msg, sizeof(msg))) {
        json_array_append_new(l->bad, json_string(msg));
        return 0;
    }
    json_array_append_new(l->tasks, json_pack("{s:s, s:i, s:s, s:s, s:s, s:s, s:o}", "name", t.name, "level",
                                              t.level, "summary", t.summary, "flops", t.flops, "bytes", t.bytes,
                                              "folder", t.dir, "candidates", candidate_files(t.dir)));
    return 0;
}

json_t *mcp_tool_list_tasks(struct mcp_call *call, json_t *args)
{
    (void)args;
    const char *root = temper_tasks_root(mcp_call_config(call)->tasks_dir);
    struct listing l = {json_array(), json_array()};
    char text[1024];
    if (temper_task_each(root, list_one, &l) == TEMPER_ENOTFOUND || !json_array_size(l.tasks)) {
        snprintf(text, sizeof(text), "no tasks under %s (start the server with --tasks DIR or set TEMPER_TASKS)",
                 root);
        json_decref(l.tasks);
        json_decref(l.bad);
        return mcp_tool_result(NULL, text, 1);
    }
    snprintf(text, sizeof(text), "%zu tasks under %s", json_array_size(l.tasks), root);
    json_t *out = json_pack("{s:o}", "tasks", l.tasks);
    if (json_array_size(l.bad)) {
        json_object_set_new(out, "not_loaded", l.bad);
        snprintf(text + strlen(text), sizeof(text) - strlen(text), "; %zu did not load (not_loaded says why)",
                 json_array_size(json_object_get(out, "not_loaded")));
    } else {
        json_decref(l.bad);
    }
    return mcp_tool_result(out, text, 0);
}

static json_t *shapes(const struct temper_shape *s, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) {
        char text[256];
        temper_shape_format(&s[i], text, sizeof(text));
        json_array_append_new(a, json_string(text));
    }
    return a;
}

/* A file's text, at most 256 KiB, or null if it cannot be read or path is empty. */
static json_t *file_text(const char *path)
{
    char *text = NULL, msg[512];
    if (!path[0] || temper_read_file(path, 256u << 10, &text, NULL, msg, sizeof(msg)))
        return json_null();
    json_t *s = json_string(text);
    free(text);
    return s ? s : json_null();
}

json_t *mcp_tool_show_task(struct mcp_call *call, json_t *args)
{
    const char *name = json_string_value(json_object_get(args, "task"));
    char dir[TEMPER_PATH_MAX], msg[1024];
    struct temper_task t;
    int err = temper_task_find(temper_tasks_root(mcp_call_config(call)->tasks_dir), name, dir, sizeof(dir), msg,
                               sizeof(msg));
    if (!err)
        err = temper_task_load(dir, &t, msg, sizeof(msg));
    if (err)
        return mcp_tool_result(NULL, msg, 1);
    static const char *const inits[] = {"normal", "uniform", "randint"};
    json_t *arguments = json_array();
    for (int i = 0; i < t.nargs; i++) {
        const struct temper_task_arg *a = &t.args[i];
        json_t *shape = json_array();
        for (int d = 0; d < a->ndim; d++)
            json_array_append_new(shape, json_string(a->shape[d]));
        json_t *arg = json_pack("{s:s, s:s, s:s, s:o}", "name", a->name, "role", temper_role_name(a->role), "dtype",
                                temper_dtype_name(a->dtype), "shape", shape);
        if (a->role == TEMPER_ROLE_INPUT) {
            char init[96];
            snprintf(init, sizeof(init), "%s(%g, %g)", inits[a->init], a->init_a, a->init_b);
            json_object_set_new(arg, "init", json_string(init));
        }
        json_array_append_new(arguments, arg);
    }
    json_t *out = json_pack(
        "{s:s, s:i, s:s, s:s, s:o, s:s, s:s, s:f, s:f, s:s, s:o, s:o, s:o, s:o, s:o, s:{s:o, s:o}}", "name", t.name,
        "level", t.level, "summary", t.summary, "folder", t.dir, "arguments", arguments, "flops", t.flops, "bytes",
        t.bytes, "atol", t.atol, "rtol", t.rtol, "compute_ceiling", t.compute_ceiling, "check_shapes",
        shapes(t.check, t.ncheck), "bench_shapes_gpu", shapes(t.bench_gpu, t.nbench_gpu), "bench_shapes_cpu",
        shapes(t.bench_cpu, t.nbench_cpu), "candidates", candidate_files(t.dir), "reference_source",
        file_text(t.reference), "baseline_sources", "cuda", file_text(t.baseline_cuda), "opencl",
        file_text(t.baseline_opencl));
    json_object_set_new(out, "expert", t.expert_cuda[0] ? json_string(t.expert_cuda) : json_null());
    char text[1024];
    snprintf(text, sizeof(text),
             "task %s (level %d): %s; %d arguments, %d check shapes; tolerance atol %g rtol %g; the reference and "
             "baseline sources are in the structured result",
             t.name, t.level, t.summary, t.nargs, t.ncheck, t.atol, t.rtol);
    return mcp_tool_result(out, text, 0);
}

json_t *mcp_tool_best_kernel(struct mcp_call *call, json_t *args)
{
    const struct mcp_config *config = mcp_call_config(call);
    const char *task = json_string_value(json_object_get(args, "task"));
    const char *device = json_string_value(json_object_get(args, "device"));
    char msg[2048], task_hash[17], device_key[1024] = "";
    int err = temper_task_content_hash_named(temper_tasks_root(config->tasks_dir), task, task_hash, msg, sizeof(msg));
    if (err)
        return mcp_tool_result(NULL, msg, 1);
    if (device) { /* "cuda:0" names a device; its identity (the store's key) is the session's to ask */
        struct temper_session *s = NULL;
        err = mcp_session(call, device, &s, msg, sizeof(msg));
        if (err)
            return mcp_tool_result(NULL, msg, 1);
        temper_store_device_key(temper_session_device_info(s), device_key, sizeof(device_key));
    }
    struct temper_store *store = NULL;
    char *source = NULL;
    json_t *r = NULL;
    err = temper_store_open(config->store_path, &store, msg, sizeof(msg));
    if (!err)
        err = temper_store_best(store, task, task_hash, device ? device_key : NULL, &r, &source, msg, sizeof(msg));
    temper_store_close(store);
    if (err)
        return mcp_tool_result(NULL, msg, 1);
    json_t *t = json_array_get(json_object_get(r, "timings"), 0);
    char text[1024];
    snprintf(text, sizeof(text), "best %s kernel on %s: %s, %.4g ms at %s, %.2fx the baseline (store row %lld)",
             task, json_string_value(json_object_get(r, "device")), json_string_value(json_object_get(r, "options")),
             json_number_value(json_object_get(t, "median_ms")), json_string_value(json_object_get(t, "shape")),
             json_number_value(json_object_get(t, "speedup")), (long long)temper_session_result_store_id(r));
    json_t *out = json_pack("{s:s, s:o, s:s}", "task", task, "result", r, "source", source ? source : "");
    free(source);
    return mcp_tool_result(out, text, 0);
}
