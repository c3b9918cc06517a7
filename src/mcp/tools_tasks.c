/* tools_tasks.c: the tools of `temper mcp` that run no kernel: list_tasks, show_task (what a
 * candidate for a task must compute) and best_kernel (the store's fastest correct kernel). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp.h"
#include "temper/error.h"
#include "agent/knowledge.h"
#include "temper/store.h"
#include "temper/task.h"
#include "util/util.h"

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
    /* The store's result as it was recorded: read as stored. */
    static const struct temper_result_timing untimed;
    struct temper_result best;
    if (temper_result_from_stored(r, &best)) {
        json_decref(r);
        free(source);
        return mcp_tool_result(NULL, "out of memory", 1);
    }
    const struct temper_result_timing *t = temper_result_first_timing(&best);
    if (!t)
        t = &untimed;
    char text[1024];
    snprintf(text, sizeof(text), "best %s kernel on %s: %s, %.4g ms at %s, %.2fx the baseline (store row %lld)",
             task, best.device, best.options, t->median_ms.v, t->shape, t->speedup.v, (long long)best.store_id.v);
    temper_result_free(&best);
    json_t *out = json_pack("{s:s, s:o, s:s}", "task", task, "result", r, "source", source ? source : "");
    free(source);
    return mcp_tool_result(out, text, 0);
}

json_t *mcp_tool_history(struct mcp_call *call, json_t *args)
{
    const struct mcp_config *config = mcp_call_config(call);
    const char *task = json_string_value(json_object_get(args, "task"));
    const char *device = json_string_value(json_object_get(args, "device"));
    json_t *limit = json_object_get(args, "limit");
    char msg[2048], dir[TEMPER_PATH_MAX];
    /* A task that does not exist is an error, not an empty history. */
    int err = temper_task_find(temper_tasks_root(config->tasks_dir), task, dir, sizeof(dir), msg, sizeof(msg));
    if (err)
        return mcp_tool_result(NULL, msg, 1);
    struct temper_store *store = NULL;
    json_t *rows = NULL;
    err = temper_store_open(config->store_path, &store, msg, sizeof(msg));
    if (!err)
        err = temper_store_history(store, task, device, limit ? (int)json_integer_value(limit) : 50, &rows, msg,
                                   sizeof(msg));
    temper_store_close(store);
    if (err)
        return mcp_tool_result(NULL, msg, 1);
    size_t n = json_array_size(rows), evals = 0, correct = 0;
    json_t *row;
    size_t i;
    json_array_foreach(rows, i, row)
    {
        if (strcmp(json_string_value(json_object_get(row, "kind")) ?: "", "evaluation"))
            continue;
        evals++;
        correct += !strcmp(json_string_value(json_object_get(row, "verdict")) ?: "", "correct");
    }
    char text[512];
    snprintf(text, sizeof(text), "%zu rows of %s's history, newest first: %zu evaluations (%zu correct); the rows "
                                 "are in the structured result",
             n, task, evals, correct);
    return mcp_tool_result(json_pack("{s:s, s:o}", "task", task, "history", rows), text, 0);
}

json_t *mcp_tool_search_knowledge(struct mcp_call *call, json_t *args)
{
    const struct mcp_config *config = mcp_call_config(call);
    json_t *limit = json_object_get(args, "limit");
    struct temper_knowledge_config kc = {0};
    kc.store_path = config->store_path;
    kc.task = json_string_value(json_object_get(args, "task"));
    kc.lang = json_string_value(json_object_get(args, "lang"));
    const char *query = json_string_value(json_object_get(args, "query"));
    json_t *hits = NULL;
    char msg[2048];
    int err = temper_knowledge_search(&kc, query, limit ? (int)json_integer_value(limit) : 5, &hits, msg, sizeof(msg));
    if (err)
        return mcp_tool_result(NULL, msg, 1);
    /* Without the guides only the store's kernels are searched: say so, or an agent takes the
     * missing guides for guides that hold nothing on its question. */
    char where[1024], note[1400] = "";
    if (!temper_knowledge_dir(&kc, where, sizeof(where)))
        snprintf(note, sizeof(note),
                 "no guides folder at %s: only the store's kernels were searched (start the server with "
                 "TEMPER_KNOWLEDGE set to the guides' folder, knowledge/ in a checkout)", where);
    char text[4096];
    size_t used = (size_t)snprintf(text, sizeof(text), "%zu hits for '%.200s'%s", json_array_size(hits), query,
                                   json_array_size(hits) ? ":" : "");
    json_t *h;
    size_t i;
    json_array_foreach(hits, i, h)
    {
        if (used >= sizeof(text))
            break;
        used += (size_t)snprintf(text + used, sizeof(text) - used, "%s %s (%s)", i ? ";" : "",
                                 json_string_value(json_object_get(h, "title")),
                                 json_string_value(json_object_get(h, "kind")));
    }
    if (note[0] && used < sizeof(text))
        snprintf(text + used, sizeof(text) - used, "\n%s", note);
    json_t *value = json_pack("{s:s, s:o}", "query", query, "hits", hits);
    if (note[0])
        json_object_set_new(value, "note", json_string(note));
    return mcp_tool_result(value, text, 0);
}
