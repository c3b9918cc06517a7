/* eval.c: the parent side of an evaluation: reading and checking the candidate, resolving its
 * task and knobs, sending the job to the worker, and printing the result for people. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temper/eval.h"

static json_t *simple_result(enum temper_verdict v, const char *message)
{
    return json_pack("{s:s, s:s}", "verdict", temper_verdict_name(v), "message", message);
}

/* Sends a request built by the caller; an "error" reply becomes a failure with its message. */
static int call_checked(struct temper_worker *w, json_t *req, json_t **reply, char *msg, size_t msg_size)
{
    int err = temper_worker_call(w, req, reply, msg, msg_size);
    if (err)
        return err;
    json_t *e = json_object_get(*reply, "error");
    if (e) {
        json_t *code = json_object_get(*reply, "code");
        err = temper_fail(msg, msg_size, code ? (int)json_integer_value(code) : TEMPER_EDEVICE, "%s",
                          json_string_value(e));
        json_decref(*reply);
        *reply = NULL;
        return err ? err : TEMPER_EDEVICE;
    }
    return 0;
}

int temper_worker_device_info(struct temper_worker *w, json_t **info, char *msg, size_t msg_size)
{
    json_t *req = json_pack("{s:s}", "op", "info");
    int err = call_checked(w, req, info, msg, msg_size);
    json_decref(req);
    if (!err && !json_object_get(*info, "id")) {
        err = temper_fail(msg, msg_size, TEMPER_ENODEVICE, "the worker could not open the device: %s",
                          json_string_value(json_object_get(*info, "message")));
        json_decref(*info);
        *info = NULL;
    }
    return err;
}

int temper_calibrate(struct temper_worker *w, json_t **ceilings, char *msg, size_t msg_size)
{
    json_t *req = json_pack("{s:s}", "op", "calibrate");
    int err = call_checked(w, req, ceilings, msg, msg_size);
    json_decref(req);
    if (!err && !json_object_get(*ceilings, "copy_gbs")) {
        err = temper_fail(msg, msg_size, TEMPER_EDEVICE, "calibration failed: %s",
                          json_string_value(json_object_get(*ceilings, "message")));
        json_decref(*ceilings);
        *ceilings = NULL;
    }
    return err;
}

int temper_list_devices(struct temper_worker *w, json_t **devices, char *msg, size_t msg_size)
{
    json_t *req = json_pack("{s:s}", "op", "devices");
    int err = call_checked(w, req, devices, msg, msg_size);
    json_decref(req);
    return err;
}

/* Checks that every name in every launch's args(...) exists, so a typo is `invalid` at once. */
static int check_launch_names(const struct temper_candidate *c, const struct temper_task *t,
                              const struct temper_knobs *k, char *msg, size_t msg_size)
{
    for (int l = 0; l < c->nlaunches; l++) {
        const struct temper_launch *ln = &c->launches[l];
        for (int i = 0; i < ln->nargs; i++) {
            const char *name = ln->args[i];
            int found = 0;
            int64_t v;
            for (int j = 0; j < t->nargs && !found; j++)
                found = !strcmp(t->args[j].name, name);
            for (int s = 0; s < c->nscratch && !found; s++)
                found = !strcmp(c->scratch[s].name, name);
            if (!found)
                found = !temper_knobs_int(k, name, strlen(name), &v);
            if (!found)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s:%d: args(...) names '%s', which is not an argument of task %s, a scratch "
                                   "buffer or an integer param",
                                   c->path, ln->line, name, t->name);
        }
    }
    return 0;
}

int temper_eval(struct temper_worker *w, const struct temper_eval_request *req, json_t *calibration,
                json_t **result, char *msg, size_t msg_size)
{
    *result = NULL;
    double start = temper_now_s();
    char *text = NULL;
    size_t len;
    int err;
    if (req->source) {
        text = strdup(req->source);
        len = strlen(req->source);
        if (!text)
            return TEMPER_ENOMEM;
    } else if ((err = temper_read_file(req->path, TEMPER_SOURCE_MAX, &text, &len, msg, msg_size))) {
        return err;
    }
    struct temper_candidate cand;
    char why[2048], hex[17];
    temper_hash_hex(temper_hash64(text, len, 0), hex);
    if (temper_candidate_parse(req->path, text, len, &cand, why, sizeof(why))) {
        free(text);
        *result = simple_result(TEMPER_VERDICT_INVALID, why);
        json_object_set_new(*result, "candidate", json_string(req->path));
        json_object_set_new(*result, "task", json_string(""));
        json_object_set_new(*result, "source_hash", json_string(hex));
        return 0;
    }
    free(text);
    struct temper_task task;
    char task_dir[TEMPER_PATH_MAX];
    const char *root = temper_tasks_root(req->tasks_dir);
    if (temper_task_find(root, cand.task, task_dir, sizeof(task_dir), why, sizeof(why))) {
        *result = simple_result(TEMPER_VERDICT_INVALID, why);
        goto done;
    }
    if ((err = temper_task_load(task_dir, &task, msg, msg_size))) {
        temper_candidate_free(&cand);
        return err;
    }
    struct temper_knobs knobs;
    temper_knobs_default(&cand, &knobs);
    for (int i = 0; req->sets && req->sets[i]; i++)
        if ((err = temper_knobs_set(&cand, &knobs, req->sets[i], msg, msg_size))) {
            temper_candidate_free(&cand);
            return err;
        }
    if (temper_candidate_check(&cand, &knobs, why, sizeof(why)) ||
        check_launch_names(&cand, &task, &knobs, why, sizeof(why))) {
        *result = simple_result(TEMPER_VERDICT_INVALID, why);
        goto done;
    }
    json_t *info = NULL;
    if ((err = temper_worker_device_info(w, &info, msg, msg_size))) {
        temper_candidate_free(&cand);
        return err;
    }
    const char *backend = json_string_value(json_object_get(info, "id"));
    int is_cuda = !strncmp(backend, "cuda", 4);
    if (is_cuda != (cand.lang == TEMPER_LANG_CUDA)) {
        err = temper_fail(msg, msg_size, TEMPER_EINVALID, "%s is %s but the device is %s (%s); pick one with --device",
                          req->path, cand.lang == TEMPER_LANG_CUDA ? "CUDA" : "OpenCL", backend,
                          json_string_value(json_object_get(info, "name")));
        json_decref(info);
        temper_candidate_free(&cand);
        return err;
    }
    json_t *knob_obj = json_object();
    for (int i = 0; i < knobs.n; i++)
        json_object_set_new(knob_obj, knobs.names[i], json_string(knobs.values[i]));
    uint64_t secret = temper_secret_seed() & 0x7fffffffffffffffull;
    json_t *job = json_pack("{s:s, s:s, s:s, s:s, s:O, s:I, s:I, s:b, s:f, s:O}", "op", "eval", "task_dir", task_dir,
                            "path", req->path, "source", cand.source, "knobs", knob_obj, "seed",
                            (json_int_t)(req->seed & 0x7fffffffffffffffull), "secret_seed", (json_int_t)secret,
                            "no_timing", req->no_timing, "time_budget_s", req->time_budget_s, "calibration",
                            calibration ? calibration : json_null());
    err = temper_worker_call(w, job, result, msg, msg_size);
    json_decref(job);
    if (!err && json_object_get(*result, "error")) {
        err = temper_fail(msg, msg_size, TEMPER_EINVALID, "%s", json_string_value(json_object_get(*result, "error")));
        json_decref(*result);
        *result = NULL;
    }
    if (err) {
        json_decref(knob_obj);
        json_decref(info);
        temper_candidate_free(&cand);
        return err;
    }
    json_object_set_new(*result, "knobs", knob_obj);
    json_object_set_new(*result, "device", json_string(backend));
    json_object_set(*result, "device_info", info);
    json_object_set_new(*result, "secret_seed", json_integer((json_int_t)secret));
    json_object_set_new(*result, "seed", json_integer((json_int_t)(req->seed & 0x7fffffffffffffffull)));
    json_decref(info);
done:
    if (!json_object_get(*result, "task"))
        json_object_set_new(*result, "task", json_string(cand.task));
    json_object_set_new(*result, "candidate", json_string(req->path));
    json_object_set_new(*result, "source_hash", json_string(hex));
    json_object_set_new(*result, "elapsed_ms", json_real((temper_now_s() - start) * 1e3));
    temper_candidate_free(&cand);
    return 0;
}

static double num(json_t *o, const char *key)
{
    return json_number_value(json_object_get(o, key));
}

void temper_eval_print(FILE *out, json_t *r)
{
    const char *verdict = json_string_value(json_object_get(r, "verdict"));
    fprintf(out, "candidate  %s\n", json_string_value(json_object_get(r, "candidate")));
    fprintf(out, "task       %s\n", json_string_value(json_object_get(r, "task")));
    json_t *dev = json_object_get(r, "device_info");
    if (dev)
        fprintf(out, "device     %s  %s (%s)\n", json_string_value(json_object_get(dev, "id")),
                json_string_value(json_object_get(dev, "name")), json_string_value(json_object_get(dev, "class")));
    json_t *knobs = json_object_get(r, "knobs");
    if (json_object_size(knobs)) {
        fprintf(out, "knobs     ");
        const char *k;
        json_t *v;
        json_object_foreach(knobs, k, v) fprintf(out, " %s=%s", k, json_string_value(v));
        fprintf(out, "\n");
    }
    fprintf(out, "verdict    %s\n", verdict ? verdict : "?");
    fprintf(out, "message    %s\n", json_string_value(json_object_get(r, "message")));
    json_t *checks = json_object_get(r, "checks");
    if (json_array_size(checks)) {
        fprintf(out, "\n%-28s %-7s %-6s %12s %12s %10s\n", "check shape", "seed", "result", "max abs err",
                "max rel err", "mismatches");
        size_t i;
        json_t *c;
        json_array_foreach(checks, i, c)
        {
            json_t *passed = json_object_get(c, "passed");
            const char *res = !passed ? "error" : json_is_true(passed) ? "pass" : "FAIL";
            fprintf(out, "%-28s %-7s %-6s %12.3g %12.3g %10lld%s\n", json_string_value(json_object_get(c, "shape")),
                    json_string_value(json_object_get(c, "seed")), res, num(c, "max_abs_err"), num(c, "max_rel_err"),
                    (long long)json_integer_value(json_object_get(c, "mismatches")),
                    json_is_false(json_object_get(c, "deterministic")) ? "  nondeterministic" : "");
        }
    }
    json_t *bench = json_object_get(r, "bench_checks");
    if (json_array_size(bench)) {
        size_t i;
        json_t *c;
        json_array_foreach(bench, i, c)
        {
            json_t *passed = json_object_get(c, "passed");
            fprintf(out, "%-28s %-7s %-6s %12.3g %12.3g %10lld\n", json_string_value(json_object_get(c, "shape")),
                    "bench", !passed ? "error" : json_is_true(passed) ? "pass" : "FAIL", num(c, "max_abs_err"),
                    num(c, "max_rel_err"), (long long)json_integer_value(json_object_get(c, "mismatches")));
        }
    }
    json_t *timings = json_object_get(r, "timings");
    if (json_array_size(timings)) {
        fprintf(out, "\n%-24s %10s %8s %7s %10s %9s %9s %8s %8s\n", "timed at", "median ms", "spread", "samples",
                "GB/s", "TFLOP/s", "roofline", "base ms", "speedup");
        size_t i;
        json_t *t;
        json_array_foreach(timings, i, t)
        {
            json_t *share = json_object_get(t, "roofline_share");
            char share_text[32];
            if (share)
                snprintf(share_text, sizeof(share_text), "%.1f%%", json_number_value(share) * 100);
            else
                snprintf(share_text, sizeof(share_text), "-");
            fprintf(out, "%-24s %10.4g %7.1f%% %7lld %10.1f %9.3f %9s %8.4g %7.2fx%s\n",
                    json_string_value(json_object_get(t, "shape")), num(t, "median_ms"), num(t, "spread") * 100,
                    (long long)json_integer_value(json_object_get(t, "samples")), num(t, "gbps"), num(t, "tflops"),
                    share_text, num(t, "baseline_median_ms"), num(t, "speedup"),
                    json_is_true(json_object_get(t, "impossible")) ? "  IMPOSSIBLE" : "");
            json_t *ceil = json_object_get(t, "ceilings");
            if (ceil && i == 0)
                fprintf(out, "%-24s measured ceilings: copy %.1f GB/s, FMA %.1f GFLOP/s; %s-bound\n", "",
                        num(ceil, "copy_gbs"), num(ceil, "fma_gflops"), json_string_value(json_object_get(t, "bound")));
        }
    }
    const char *log = json_string_value(json_object_get(r, "compile_log"));
    if (verdict && !strcmp(verdict, "compile_error") && log && *log)
        fprintf(out, "\ncompiler log:\n%s\n", log);
    json_t *ph = json_object_get(r, "phases_ms");
    if (ph)
        fprintf(out,
                "\ntime       %.0f ms (build %.0f, inputs %.0f, reference %.0f, device runs %.0f, compare %.0f, "
                "timing %.0f)\n",
                num(r, "elapsed_ms"), num(ph, "build"), num(ph, "inputs"), num(ph, "reference"), num(ph, "device"),
                num(ph, "compare"), num(ph, "timing"));
}
