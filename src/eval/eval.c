/* eval.c: the parent side of an evaluation: reading and checking the candidate, resolving its
 * task and knobs, compiling ahead in compile processes, and running a stream of requests through
 * the worker (printing a result for people is in eval_print.c). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "device/device.h"

#include "eval/eval_internal.h"
#include "eval/result_set.h"
#include "kernel/kernel_internal.h"
#include "temper/result.h"
#include "util/util.h"
#include "triton_build.h"
#include "worker_impl.h"

/* Moves req's cancel word from `from` to `to`; 0 if the request was cancelled instead (the word
 * held SKIP or KILL), else 1 (always 1 without a word). */
static int cancel_claim(const struct temper_eval_request *req, int from, int to)
{
    if (!req->cancel)
        return 1;
    int expect = from;
    return __atomic_compare_exchange_n(req->cancel, &expect, to, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

/* The reply for a request cancelled before it was sent (verdict invalid) or as its reply came in
 * (verdict NULL), written as the worker's replies are (worker.c). Caller decrefs. */
static json_t *cancelled_reply(const char *verdict, const char *message)
{
    struct temper_result r;
    temper_result_own(&r, verdict, message, 1, 0);
    json_t *reply = temper_result_to_json(&r);
    temper_result_free(&r);
    return reply;
}

/* Whether a reply says it was cancelled. The reply is the worker's as it came (a result with the
 * worker's same_code_key, an error reply, or NULL), not yet a result in the one form, so it is read
 * as a stored result is: keys that are not fields skipped, only the flag looked at. */
static int reply_cancelled(json_t *reply)
{
    struct temper_result r;
    if (temper_result_from_stored(reply, &r))
        return 0; /* out of memory: taken as not cancelled, and replaced by a reply that is */
    int cancelled = r.cancelled.set && r.cancelled.v;
    temper_result_free(&r);
    return cancelled;
}

/* Runs a job of req on the worker, as temper_worker_call does, unless req is cancelled (its cancel
 * word, enum temper_eval_cancel): *reply is cancelled_reply() and nothing is sent when it was
 * cancelled before the send; a cancel after the send kills the job, and the reply says
 * "cancelled" even if the job had finished. */
static int call_unless_cancelled(struct temper_worker *w, const struct temper_eval_request *req, json_t *job,
                                 json_t **reply, char *msg, size_t msg_size)
{
    *reply = NULL;
    if (!cancel_claim(req, TEMPER_EVAL_WAITING, TEMPER_EVAL_SENT)) {
        *reply = cancelled_reply(temper_verdict_name(TEMPER_VERDICT_INVALID), "cancelled before it ran");
        return 0;
    }
    int err = temper_worker_send(w, job, msg, msg_size);
    if (!err && req->cancel && __atomic_load_n(req->cancel, __ATOMIC_SEQ_CST) == TEMPER_EVAL_KILL)
        temper_worker_cancel(w); /* the canceller's own call may have come before the send */
    while (!err) {
        err = temper_worker_service(w, reply, msg, msg_size);
        if (err || *reply)
            break;
        struct pollfd pfd = {temper_worker_fd(w), temper_worker_events(w), 0};
        poll(&pfd, 1, temper_worker_timeout_ms(w));
    }
    if (!cancel_claim(req, TEMPER_EVAL_SENT, TEMPER_EVAL_DONE) && !reply_cancelled(*reply)) {
        /* Cancelled as the reply came in (or as the send failed): cancelled all the same. */
        json_decref(*reply);
        *reply = cancelled_reply(NULL, "the job was cancelled");
        err = 0;
    }
    return err;
}

/* Checks that every name in every launch's args(...) exists, so a typo is `invalid` at once, and
 * that a launch without args(...) passes as many arguments (the task's) as its kernel takes. */
static int check_launch_names(const struct temper_candidate *c, const struct temper_task *t,
                              const struct temper_knobs *k, char *msg, size_t msg_size)
{
    struct temper_device_info none;
    memset(&none, 0, sizeof(none));
    struct temper_dev_attrs attrs; /* for the names only */
    temper_dev_attrs_fill(&none, &attrs);
    for (int l = 0; l < c->nlaunches; l++) {
        const struct temper_launch *ln = &c->launches[l];
        for (int i = 0; ln->nargs < 0 && i < t->nargs && i < TEMPER_MAX_LAUNCH_ARGS; i++)
            if (ln->arg_kind[i] == TEMPER_PARAM_GRID_CONSTANT)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s:%d: kernel %s's parameter %d is declared `__grid_constant__` of a struct type, "
                                   "where the task's argument %s would go: name a tensormap(...) there in args(...)",
                                   c->path, ln->line, ln->kernel, i + 1, t->args[i].name);
        if (ln->nargs < 0 && ln->kernel_nparams >= 0 && ln->kernel_nparams != t->nargs)
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s:%d: launch %s passes task %s's %d argument%s (no args(...)) but kernel %s takes %d "
                               "parameter%s",
                               c->path, ln->line, ln->kernel, t->name, t->nargs, t->nargs == 1 ? "" : "s", ln->kernel,
                               ln->kernel_nparams, ln->kernel_nparams == 1 ? "" : "s");
        for (int i = 0; i < ln->nargs; i++) {
            const char *name = ln->args[i];
            struct temper_tensormap_arg tm;
            if (!temper_launch_arg_tensormap(name, &tm, NULL, 0)) {
                int j = 0;
                while (j < t->nargs && strcmp(t->args[j].name, tm.name))
                    j++;
                if (j == t->nargs || t->args[j].role == TEMPER_ROLE_SCALAR)
                    return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                       "%s:%d: args(...): '%s': a tensor map is over one of task %s's arrays, and "
                                       "'%s' is not one",
                                       c->path, ln->line, name, t->name, tm.name);
                enum temper_param_kind kind = ln->arg_kind[i];
                if (ln->kernel_nparams >= 0 && kind != TEMPER_PARAM_GRID_CONSTANT)
                    return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                       "%s:%d: args(...): '%s' goes to kernel %s's parameter %d, which is not declared "
                                       "`const __grid_constant__` of a struct type (a tensor map is passed there by "
                                       "value: declare it as `const __grid_constant__ CUtensorMap name`, or a struct "
                                       "of 128 bytes aligned to 64)",
                                       c->path, ln->line, name, ln->kernel, i + 1);
                if (t->args[j].ndim > TEMPER_TENSORMAP_MAX_RANK)
                    return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                       "%s:%d: args(...): '%s': %s has %d dimensions, and TMA tensor maps have at most "
                                       "%d",
                                       c->path, ln->line, name, tm.name, t->args[j].ndim, TEMPER_TENSORMAP_MAX_RANK);
                if (tm.rank != t->args[j].ndim)
                    return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                       "%s:%d: args(...): '%s': %s has %d dimension%s, so the box needs %d size%s "
                                       "(innermost first), not %d",
                                       c->path, ln->line, name, tm.name, t->args[j].ndim,
                                       t->args[j].ndim == 1 ? "" : "s", t->args[j].ndim,
                                       t->args[j].ndim == 1 ? "" : "s", tm.rank);
                continue;
            }
            if (ln->arg_kind[i] == TEMPER_PARAM_GRID_CONSTANT)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s:%d: args(...): '%s' goes to kernel %s's parameter %d, which is declared "
                                   "`__grid_constant__` of a struct type: only a tensormap(...) goes there",
                                   c->path, ln->line, name, ln->kernel, i + 1);
            int found = !temper_launch_arg_is_name(name); /* an expression: its names at run time */
            int64_t v;
            for (int j = 0; j < t->nargs && !found; j++)
                found = !strcmp(t->args[j].name, name);
            for (int s = 0; s < c->nscratch && !found; s++)
                found = !strcmp(c->scratch[s].name, name);
            if (!found)
                found = !temper_knobs_int(k, name, strlen(name), &v);
            for (int d = 0; d < TEMPER_DEV_ATTRS && !found; d++)
                found = !strcmp(attrs.names[d], name);
            if (!found)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s:%d: args(...) names '%s', which is not an argument of task %s, a scratch "
                                   "buffer, an integer param or a device attribute",
                                   c->path, ln->line, name, t->name);
        }
    }
    return 0;
}

/* A stream entry: one request of a stream on its way through, parsed and checked in the parent,
 * compiled in a compile process where the backend allows, then run in the worker. */
struct stream_entry {
    const struct temper_eval_request *req; /* what was asked */
    double start_s;                        /* when its turn in the batch began */
    int err;                               /* nonzero: it cannot be evaluated (usage error) */
    char msg[2048];                        /* the reason, with err */
    int has_early;                         /* 1 when early holds a verdict reached before the device */
    struct temper_result early;            /* that result (invalid, or an offline compiler's error) */
    int have_cand;                         /* 1 when cand holds a parsed candidate */
    struct temper_candidate cand;          /* the candidate */
    char hex[17];                          /* its source hash */
    char task_dir[TEMPER_PATH_MAX];        /* its task's folder */
    char task_hash[17];                    /* its task's content hash, "" before it is known */
    json_t *knobs;                         /* knob values, an object */
    char options[2048];                    /* compiler options (a Triton candidate's compile request) */
    char built_by[96];                     /* a Triton build's compiler ("triton 3.6.0"), "" before */
    struct compile_proc proc;              /* its compile process (proc.pid 0 if none runs) */
    int compiled;                          /* 1 when its build is in the cache (or not needed) */
    int index;                             /* its place in the stream: the callback's index */
    uint64_t secret;                       /* the secret seed it runs with */
};

/* The candidate's knob values: its defaults, then the request's typed values in order (as text
 * through the one formatter); nonzero (j->err) for a knob it does not have or a value it does not
 * take. */
static int entry_knobs(struct stream_entry *j, struct temper_knobs *knobs)
{
    const struct temper_eval_request *req = j->req;
    temper_knobs_default(&j->cand, knobs);
    for (int i = 0; i < req->nknobs && !j->err; i++) {
        char set[320];
        temper_knob_value_assignment(&req->knobs[i], set, sizeof(set));
        j->err = temper_knobs_set(&j->cand, knobs, set, j->msg, sizeof(j->msg));
    }
    return j->err;
}

/* j's verdict reached before the device (or its cancel), with its message. */
static void entry_early(struct stream_entry *j, enum temper_verdict v, const char *message, int cancelled)
{
    temper_result_free(&j->early);
    temper_result_own(&j->early, temper_verdict_name(v), message, cancelled, 0);
    j->has_early = 1;
}

/* Parses, finds the task, applies knobs and checks constraints: everything that needs no
 * device. Sets job->early for an invalid candidate and job->err for bad usage. */
static void entry_prepare(struct stream_entry *j, const char *device_id, enum temper_lang device_lang)
{
    const struct temper_eval_request *req = j->req;
    char *text = NULL, why[2048];
    size_t len = 0;
    if (req->source) {
        /* All of the source's bytes, to the length given: a NUL among them is the parser's to
         * refuse, never a place to stop reading. */
        len = req->source_len ? req->source_len : strlen(req->source);
        if (!(text = malloc(len + 1))) {
            j->err = TEMPER_ENOMEM;
            return;
        }
        memcpy(text, req->source, len);
        text[len] = 0;
    } else if ((j->err = temper_read_file(req->path, TEMPER_SOURCE_READ_MAX, &text, &len, j->msg, sizeof(j->msg)))) {
        return;
    }
    temper_hash_hex(temper_hash64(text, len, 0), j->hex);
    int err = temper_candidate_parse_lang(req->path, req->lang, text, len, &j->cand, why, sizeof(why));
    free(text);
    if (err) {
        /* The task it names where its directive was read (whole) before the error and names a task
         * there is: history, exports and a task's views then find the result; else none. */
        char dir[TEMPER_PATH_MAX], none[1024];
        const char *named = j->cand.task_line > 0 && !temper_task_find(temper_tasks_root(req->tasks_dir), j->cand.task,
                                                                        dir, sizeof(dir), none, sizeof(none)) ?
                                j->cand.task :
                                "";
        entry_early(j, TEMPER_VERDICT_INVALID, why, 0);
        temper_result_set_text(&j->early.task, named);
        return;
    }
    j->have_cand = 1;
    struct temper_task task;
    if (temper_task_find(temper_tasks_root(req->tasks_dir), j->cand.task, j->task_dir, sizeof(j->task_dir), why,
                         sizeof(why))) {
        char where[3000];
        snprintf(where, sizeof(where), "%.1000s:%d: %.1900s", req->path, j->cand.task_line, why);
        entry_early(j, TEMPER_VERDICT_INVALID, where, 0);
        return;
    }
    /* The reference is built here, not in the worker: a worker whose device runs no program
     * (CUDA) refuses exec. A reference that does not build is the task's error. */
    char so[TEMPER_PATH_MAX];
    if ((j->err = temper_task_load(j->task_dir, &task, j->msg, sizeof(j->msg))) ||
        (j->err = temper_task_content_hash(&task, j->task_hash, j->msg, sizeof(j->msg))))
        return;
    if ((j->err = temper_task_reference_build(&task, so, sizeof(so), why, sizeof(why)))) {
        snprintf(j->msg, sizeof(j->msg), TEMPER_TASK_ERROR_PREFIX "%.2000s", why);
        return;
    }
    struct temper_knobs knobs;
    if (entry_knobs(j, &knobs))
        return;
    if (temper_candidate_check(&j->cand, &knobs, why, sizeof(why)) ||
        check_launch_names(&j->cand, &task, &knobs, why, sizeof(why)) ||
        (j->cand.lang == TEMPER_LANG_TRITON
             ? temper_triton_options(&j->cand, &task, &knobs, j->options, sizeof(j->options), why, sizeof(why))
             : temper_candidate_options(&j->cand, &knobs, j->options, sizeof(j->options), why, sizeof(why)))) {
        entry_early(j, TEMPER_VERDICT_INVALID, why, 0);
        return;
    }
    if (req->extra_flags && *req->extra_flags && j->cand.lang != TEMPER_LANG_TRITON) { /* Triton takes none */
        size_t used = strlen(j->options);
        if (used + strlen(req->extra_flags) + 2 > sizeof(j->options)) {
            j->err = temper_fail(j->msg, sizeof(j->msg), TEMPER_ERANGE, "compiler options too long");
            return;
        }
        snprintf(j->options + used, sizeof(j->options) - used, "%s%s", used ? " " : "", req->extra_flags);
    }
    /* A Triton candidate runs on a CUDA device. The message names the language as people write it. */
    static const char *const lang_title[] = {[TEMPER_LANG_CUDA] = "CUDA", [TEMPER_LANG_OPENCL] = "OpenCL",
                                             [TEMPER_LANG_TRITON] = "Triton"};
    int cuda = j->cand.lang != TEMPER_LANG_OPENCL;
    if ((cuda ? TEMPER_LANG_CUDA : TEMPER_LANG_OPENCL) != device_lang) {
        j->err = temper_fail(j->msg, sizeof(j->msg), TEMPER_ENODEVICE, "%s is %s, but the device is %s: it needs %s "
                             "device (--device %s where there is one; `temper devices` lists this machine's)",
                             req->path, lang_title[j->cand.lang], device_id, cuda ? "a CUDA" : "an OpenCL",
                             cuda ? "cuda" : "opencl");
        return;
    }
    j->knobs = json_object();
    for (int i = 0; i < knobs.n; i++)
        json_object_set_new(j->knobs, knobs.names[i], json_string(knobs.values[i]));
}

/* ---- compile processes ---- */

/* What the parent knows of the device, for compiling without it. */
struct compile_target {
    const struct temper_device_ops *ops; /* the backend, if it compiles without a context */
    int on_device;                       /* 1: the device itself compiles (PoCL, in a compile process
                                          * that opens it), not a backend's offline compiler */
    char device[64];                     /* the device's id, for on_device */
    struct temper_device_info info;      /* arch and compiler version, from the worker */
    double timeout_s;                    /* a compile running longer is killed */
    uint64_t mem_limit_bytes;            /* address space of a compile process */
};

/* A compile process is the worker executable in compile mode (compile_proc_start): it runs no
 * candidate and writes no cache; the binary it hands back is stored here, sealed, so that the
 * worker finds it (through its cache service). Anything that goes wrong leaves the job to the
 * worker, which then compiles it itself. */
static void compile_start(struct stream_entry *j, const struct compile_target *t)
{
    char options[sizeof(j->options) + 256], msg[256];
    j->compiled = 1;
    /* the options the worker builds with, so that it finds this binary under the same key */
    if (temper_build_options(j->cand.lang, j->options, options, sizeof(options), msg, sizeof(msg)))
        return;
    uint64_t key = temper_build_key(j->cand.source, j->cand.source_len, options, t->info.compiler_version,
                                    t->info.arch[0] ? t->info.arch : t->info.name);
    if (temper_build_cache_has(key))
        return;
    json_t *req = j->cand.lang == TEMPER_LANG_TRITON
                      ? triton_compile_request(&j->cand, options, t->info.arch, t->mem_limit_bytes)
                      : json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:I}", "backend",
                                  t->on_device ? "device" : t->ops->name, "device", t->device, "name",
                                  t->info.name, "arch", t->info.arch, "compiler",
                                  t->info.compiler_version, "options", options, "mem_limit_bytes",
                                  (json_int_t)t->mem_limit_bytes);
    if (req && !json_object_set_new(req, "source", json_stringn_nocheck(j->cand.source, j->cand.source_len)) &&
        !compile_proc_start(req, &j->proc, msg, sizeof(msg)))
        j->compiled = 0;
    json_decref(req);
}

/* Collects a finished (or overdue) compile process without waiting; returns 1 if the job is now
 * compiled or has its verdict, 0 if still running. */
static int compile_reap(struct stream_entry *j, const struct compile_target *t)
{
    if (!j->proc.pid)
        return 1;
    int status = 0, overdue = 0;
    pid_t r = waitpid(j->proc.pid, &status, WNOHANG);
    if (r == j->proc.pid) {
        j->proc.pid = 0;
    } else {
        if (temper_now_s() - j->proc.start_s <= t->timeout_s)
            return 0;
        kill(j->proc.pid, SIGKILL);
        overdue = 1;
    }
    json_t *out = compile_proc_end(&j->proc, overdue ? NULL : &status);
    j->compiled = 1;
    const char *log = json_string_value(json_object_get(out, "log"));
    json_t *bin = json_object_get(out, "binary");
    const char *compiler = json_string_value(json_object_get(out, "compiler"));
    const char *target = json_string_value(json_object_get(out, "target"));
    char options[sizeof(j->options) + 256], msg[256];
    if (!overdue && WIFEXITED(status) && WEXITSTATUS(status) == 0 && json_is_string(bin) && compiler && target &&
        !temper_build_options(j->cand.lang, j->options, options, sizeof(options), msg, sizeof(msg))) {
        uint64_t key = temper_build_key(j->cand.source, j->cand.source_len, options, compiler, target);
        temper_build_cache_put(key, json_string_value(bin), json_string_length(bin));
        snprintf(j->built_by, sizeof(j->built_by), "%s", compiler); /* the worker looks it up by this */
    }
    /* On the device's own compiler a failure is the worker's to find (its log names the
     * candidate's file); an offline compiler's failure is the verdict. */
    const char *why = NULL;
    char text[4096];
    int verdict = TEMPER_VERDICT_COMPILE_ERROR, triton = j->cand.lang == TEMPER_LANG_TRITON;
    if (triton && !j->built_by[0]) {
        verdict = triton_refusal(out, status, overdue, t->timeout_s, text, sizeof(text));
        why = text;
    } else if (t->on_device || triton) {
        why = NULL;
    } else if (overdue) {
        snprintf(text, sizeof(text), "compilation ran longer than the %.3g s limit", t->timeout_s);
        why = text;
    } else if (WIFSIGNALED(status)) {
        snprintf(text, sizeof(text), "the compiler crashed (%s)", strsignal(WTERMSIG(status)));
        why = text;
    } else if (WEXITSTATUS(status) == 1) {
        why = "NVRTC compilation failed";
    }
    if (why) {
        char message[4200];
        snprintf(message, sizeof(message), "%s: %s", j->req->path, why);
        entry_early(j, (enum temper_verdict)verdict, message, 0);
        temper_result_set_text(&j->early.compile_log, log ? log : "");
        temper_result_set_text(&j->early.options, j->options);
    }
    json_decref(out);
    return 1;
}

/* Keeps up to jobs compile processes running for the jobs js[from..n). */
static void compile_fill(struct stream_entry **js, int n, int from, int jobs, const struct compile_target *t)
{
    int running = 0;
    for (int i = from; i < n; i++)
        if (js[i]->proc.pid && !compile_reap(js[i], t))
            running++;
    for (int i = from; i < n && running < jobs; i++)
        if (!js[i]->compiled && !js[i]->proc.pid && !js[i]->has_early && !js[i]->err) {
            compile_start(js[i], t);
            running += js[i]->proc.pid != 0;
        }
}

/* ---- the batch ---- */

/* Completes r with what the parent knows, writes it in the one form (result.h) and hands it to the
 * callback; frees r. */
static void entry_deliver(struct stream_entry *j, int index, struct temper_result *r, temper_eval_cb cb, void *user)
{
    temper_result_set_text(&r->candidate, j->req->path);
    temper_result_set_text(&r->source_hash, j->hex);
    if (j->task_hash[0]) /* what the store keys the result on */
        temper_result_set_text(&r->task_hash, j->task_hash);
    r->elapsed_ms = (struct temper_opt_f64){1, (temper_now_s() - j->start_s) * 1e3};
    if (!r->task) /* a result the worker did not make (an early verdict, a crash, a cancel) names none */
        temper_result_set_text(&r->task, j->have_cand ? j->cand.task : "");
    eval_timing_warnings(r);
    r->schema_version = (struct temper_opt_i64){1, TEMPER_RESULT_SCHEMA_VERSION};
    json_t *one = temper_result_to_json(r);
    temper_result_free(r);
    cb(user, index, one, 0, NULL);
}

/* Keeps j's result r in the memo with key, as the worker gave it (without the flag of its restart). */
static void memo_keep(json_t *memo, struct stream_entry *j, struct temper_result *r, json_t *key)
{
    struct temper_opt_bool restarted = r->worker_restarted;
    r->worker_restarted.set = 0;
    json_t *written = temper_result_to_json(r), *copy = json_deep_copy(written);
    r->worker_restarted = restarted;
    json_decref(written);
    json_array_append_new(memo, json_pack("{s:I, s:O, s:o, s:o}", "source_hash", (json_int_t)j->cand.source_hash,
                                          "knobs", j->knobs, "key", key, "result", copy));
    while (json_array_size(memo) > 128) /* as many as a worker keeps itself (SAME_CODE_MAX) */
        json_array_remove(memo, 0);
}

/* Runs a prepared, compiled job on the worker and delivers its result. */
static void run_job(struct temper_worker *w, struct stream_entry *j, json_t *info, const char *device_id, json_t *calibration,
                    temper_eval_cb cb, void *user)
{
    const struct temper_eval_request *req = j->req;
    json_t *job = json_pack("{s:s, s:s, s:O, s:I, s:I, s:b, s:f, s:O, s:b, s:b}", "op", "eval", "task_dir",
                            j->task_dir, "knobs", j->knobs, "seed", (json_int_t)(req->seed & 0x7fffffffffffffffull),
                            "secret_seed", (json_int_t)j->secret, "no_timing", req->no_timing, "time_budget_s",
                            req->time_budget_s, "calibration", calibration ? calibration : json_null(),
                            "checks_only", req->checks_only, "profile_run", req->profile_run);
    /* The path and the source go byte for byte: they need not be UTF-8 (the frame carries such
     * strings in base64). */
    json_object_set_new(job, "path", json_stringn_nocheck(req->path, strlen(req->path)));
    json_object_set_new(job, "source", json_stringn_nocheck(j->cand.source, j->cand.source_len));
    if (req->lang) /* the language given, over the path's extension */
        json_object_set_new(job, "lang", json_string(req->lang));
    if (req->extra_flags && *req->extra_flags)
        json_object_set_new(job, "extra_flags", json_string(req->extra_flags));
    if (j->built_by[0]) /* where the worker finds the Triton build the compile process made */
        json_object_set_new(job, "built_by", json_string(j->built_by));
    /* Earlier results of this source with these knobs that a build of the same code may take:
     * kept here, since the worker that made them may have been replaced since. */
    json_t *memo = worker_memo(w), *given = json_array(), *e;
    size_t k;
    json_array_foreach(req->reuse_same_code ? memo : NULL, k, e)
        if ((uint64_t)json_integer_value(json_object_get(e, "source_hash")) == j->cand.source_hash &&
            json_equal(json_object_get(e, "knobs"), j->knobs))
            json_array_append(given, e);
    if (req->reuse_same_code)
        json_object_set_new(job, "reuse_same_code", json_true());
    if (json_array_size(given))
        json_object_set(job, "same_code", given);
    json_decref(given);
    if (req->keep_going)
        json_object_set_new(job, "keep_going", json_true());
    json_t *result = NULL;
    char call_msg[2048];
    int err = call_unless_cancelled(w, req, job, &result, call_msg, sizeof(call_msg));
    json_decref(job);
    if (!err && json_object_get(result, "error")) {
        err = temper_fail(call_msg, sizeof(call_msg), TEMPER_EINVALID, "%s",
                          json_string_value(json_object_get(result, "error")));
        json_decref(result);
    }
    if (err) {
        cb(user, j->index, NULL, err, call_msg);
        return;
    }
    /* The reply is read once, strictly, without the worker's same_code_key (not a field: kept in memo). */
    json_t *key = json_incref(json_object_get(result, "same_code_key"));
    json_object_del(result, "same_code_key");
    struct temper_result r;
    err = temper_result_from_json(result, &r, call_msg, sizeof(call_msg));
    json_decref(result);
    if (!err && key && memo)
        memo_keep(memo, j, &r, json_incref(key));
    json_decref(key);
    if (!err) {
        temper_result_set_value(&r.knobs, json_incref(j->knobs));
        temper_result_set_text(&r.device, device_id);
        r.secret_seed = (struct temper_opt_i64){1, (int64_t)j->secret};
        r.seed = (struct temper_opt_i64){1, (int64_t)(req->seed & 0x7fffffffffffffffull)};
        err = temper_result_set_json(&r, "device_info", info, call_msg, sizeof(call_msg));
    }
    if (err)
        cb(user, j->index, NULL, TEMPER_EPARSE, call_msg);
    else
        entry_deliver(j, j->index, &r, cb, user);
    temper_result_free(&r); /* what a failure left (entry_deliver frees r) */
}

/* The jobs a stream has taken and not yet delivered, in the order taken: js[head..n). */
struct window {
    struct stream_entry **js;       /* the jobs (each owned), js[0..head) already freed */
    int head, n, cap;      /* the first live job, the end, the array's size */
    int taken;             /* requests taken so far: the next one's index */
    int more;              /* 0 once next gave nothing while the window was empty */
};

/* How the secret seed of requests that bring none is drawn: a new one after this many requests
 * or this many seconds, so that a long stream (a gym's worker) does not keep one for hours. */
#define SECRET_USES 256
#define SECRET_SECONDS 300.0

/* The secret seed drawn for requests without one, and when it must be drawn again. */
struct secret_draw {
    uint64_t seed;   /* the seed, 0 before the first draw */
    int uses;        /* requests that took it */
    double drawn_s;  /* when it was drawn */
};

static uint64_t secret_for(struct secret_draw *d, const struct temper_eval_request *req)
{
    if (req->secret_seed)
        return req->secret_seed & 0x7fffffffffffffffull;
    if (!d->seed || d->uses >= SECRET_USES || temper_now_s() - d->drawn_s > SECRET_SECONDS) {
        d->seed = temper_secret_seed() & 0x7fffffffffffffffull;
        d->seed = d->seed ? d->seed : 1;
        d->uses = 0;
        d->drawn_s = temper_now_s();
    }
    d->uses++;
    return d->seed;
}

static void entry_free(struct stream_entry *j)
{
    if (j->proc.pid) {
        kill(j->proc.pid, SIGKILL);
        json_decref(compile_proc_end(&j->proc, NULL));
    }
    if (j->have_cand)
        temper_candidate_free(&j->cand);
    json_decref(j->knobs);
    temper_result_free(&j->early);
    free(j);
}

/* Takes requests from next until the window holds ahead jobs (or next has none now), preparing
 * each. Returns nonzero only when out of memory. */
static int window_fill(struct window *wd, int ahead, temper_eval_next next, void *next_user, const char *device_id,
                       int device_lang, int offline, struct secret_draw *draw)
{
    while (wd->more && wd->n - wd->head < ahead) {
        int index = wd->taken;
        const struct temper_eval_request *req = next(next_user, index);
        if (!req) {
            wd->more = wd->n > wd->head; /* an empty window with nothing to take ends the stream */
            return 0;
        }
        if (wd->head > 0 && wd->n == wd->cap) { /* drop the freed slots before growing */
            memmove(wd->js, wd->js + wd->head, (size_t)(wd->n - wd->head) * sizeof(*wd->js));
            wd->n -= wd->head;
            wd->head = 0;
        }
        if (wd->n == wd->cap) {
            int cap = wd->cap ? 2 * wd->cap : 64;
            struct stream_entry **js = realloc(wd->js, (size_t)cap * sizeof(*js));
            if (!js)
                return TEMPER_ENOMEM;
            wd->js = js;
            wd->cap = cap;
        }
        struct stream_entry *j = calloc(1, sizeof(*j));
        if (!j)
            return TEMPER_ENOMEM;
        j->req = req;
        j->index = index;
        j->secret = secret_for(draw, req);
        entry_prepare(j, device_id, (enum temper_lang)device_lang);
        j->compiled = !offline;
        wd->js[wd->n++] = j;
        wd->taken++;
    }
    return 0;
}

int temper_eval_stream(struct temper_worker *w, temper_eval_next next, void *next_user, json_t *calibration, int jobs,
                       temper_eval_cb cb, void *user, char *msg, size_t msg_size)
{
    json_t *info = NULL;
    int err = temper_worker_device_info(w, &info, msg, msg_size);
    if (err)
        return err;
    const char *device_id = json_string_value(json_object_get(info, "id"));
    /* What the device takes and whether it compiles without a context come from its info, never
     * from its name; the backend (the id's part before ':') names the compiler a compile process
     * loads. */
    int device_lang = temper_lang_parse(json_string_value(json_object_get(info, "language")));
    if (!device_id || device_lang < 0) {
        json_decref(info);
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the worker's device info has no id or source language");
    }
    int offline = 0, in_process = 0;
    size_t k;
    json_t *cap;
    json_array_foreach(json_object_get(info, "caps"), k, cap)
    {
        const char *name = json_string_value(cap) ? json_string_value(cap) : "";
        offline |= !strcmp(name, temper_device_cap_name(TEMPER_DEVICE_CAP_OFFLINE_COMPILE));
        in_process |= !strcmp(name, temper_device_cap_name(TEMPER_DEVICE_CAP_IN_PROCESS));
    }
    struct compile_target target = {0};
    char backend[16];
    snprintf(backend, sizeof(backend), "%.*s", (int)strcspn(device_id, ":"), device_id);
    if (offline) {
        target.ops = temper_device_backend(backend);
        if (target.ops && !target.ops->compile)
            target.ops = NULL;
    } else if (in_process && !(getenv("TEMPER_FAULT") && *getenv("TEMPER_FAULT"))) {
        /* A device whose kernels run in the worker (PoCL) compiles in a compile process that
         * opens it: the worker, which runs candidates, writes no cache. (Injected faults count the
         * worker's own device calls: with TEMPER_FAULT set, builds stay in the worker.) */
        target.ops = temper_device_backend(backend);
        target.on_device = target.ops != NULL;
        snprintf(target.device, sizeof(target.device), "%s", device_id);
    }
    snprintf(target.info.name, sizeof(target.info.name), "%s", json_string_value(json_object_get(info, "name")));
    snprintf(target.info.arch, sizeof(target.info.arch), "%s", json_string_value(json_object_get(info, "arch")));
    snprintf(target.info.compiler_version, sizeof(target.info.compiler_version), "%s",
             json_string_value(json_object_get(info, "compiler")));
    target.timeout_s = 120;
    target.mem_limit_bytes = 8ull << 30;
    if (jobs < 1) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        jobs = cores > 0 ? (int)cores : 1;
    }
    /* Compiles run ahead of the device by up to jobs processes; the window holds enough taken
     * requests that one is always ready to start when another finishes. Without compile
     * processes, the running request and the next suffice. */
    int ahead = target.ops ? 2 * jobs + 2 : 2;
    struct window wd = {.more = 1};
    struct secret_draw draw = {0};
    for (;;) {
        if ((err = window_fill(&wd, ahead, next, next_user, device_id, device_lang, target.ops != NULL, &draw)))
            break;
        if (wd.head == wd.n)
            break;
        struct stream_entry *j = wd.js[wd.head];
        int i = j->index;
        if (target.ops) {
            compile_fill(wd.js, wd.n, wd.head, jobs, &target);
            if (!j->compiled && !j->has_early && !j->err) {
                if (!j->proc.pid)
                    compile_start(j, &target);
                /* While it compiles, requests that come are taken and start compiling too. */
                while (!compile_reap(j, &target)) {
                    usleep(2000);
                    if ((err = window_fill(&wd, ahead, next, next_user, device_id, device_lang, 1, &draw)))
                        break;
                    compile_fill(wd.js, wd.n, wd.head + 1, jobs, &target);
                }
                if (err)
                    break;
            }
        }
        wd.head++;
        /* A result's elapsed time counts from its turn: waiting for earlier ones is not its own. */
        j->start_s = temper_now_s();
        int cancelled = (j->err || j->has_early) && !cancel_claim(j->req, TEMPER_EVAL_WAITING, TEMPER_EVAL_DONE);
        if (cancelled) /* its result says so instead */
            entry_early(j, TEMPER_VERDICT_INVALID, "cancelled before it ran", 1);
        if (j->err && !cancelled) {
            cb(user, i, NULL, j->err, j->msg);
        } else if (j->has_early) {
            entry_deliver(j, i, &j->early, cb, user); /* it frees early */
        } else {
            run_job(w, j, info, device_id, calibration, cb, user);
        }
        entry_free(j);
    }
    for (int i = wd.head; i < wd.n; i++) { /* only after an error: what was taken and not run */
        cb(user, wd.js[i]->index, NULL, err, "out of memory");
        entry_free(wd.js[i]);
    }
    free(wd.js);
    json_decref(info);
    return err;
}

/* temper_eval_batch's requests, handed out in order. */
struct array_feed {
    const struct temper_eval_request *reqs; /* the requests */
    int n;                                  /* their number */
};

static const struct temper_eval_request *array_next(void *user, int index)
{
    struct array_feed *f = user;
    return index < f->n ? &f->reqs[index] : NULL;
}

int temper_eval_batch(struct temper_worker *w, const struct temper_eval_request *reqs, int n, json_t *calibration,
                      int jobs, temper_eval_cb cb, void *user, char *msg, size_t msg_size)
{
    /* One secret seed for the whole batch: a request without one takes the first's, or one drawn
     * here for all. */
    uint64_t secret = n && reqs[0].secret_seed ? reqs[0].secret_seed : temper_secret_seed() & 0x7fffffffffffffffull;
    struct temper_eval_request *copy = calloc((size_t)(n ? n : 1), sizeof(*copy));
    if (!copy)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        copy[i] = reqs[i];
        copy[i].secret_seed = secret ? secret : 1;
    }
    struct array_feed f = {copy, n};
    int err = temper_eval_stream(w, array_next, &f, calibration, jobs, cb, user, msg, msg_size);
    free(copy);
    return err;
}

/* Keeps the one result of a batch of one. */
struct single {
    json_t *result; /* the result, or NULL */
    int err;        /* the error, if none */
    char *msg;      /* where its message goes */
    size_t msg_size; /* size of msg */
};

static void single_cb(void *user, int index, json_t *result, int err, const char *error)
{
    struct single *s = user;
    (void)index;
    s->result = result;
    s->err = err;
    if (err)
        temper_fail(s->msg, s->msg_size, err, "%s", error);
}

int temper_eval(struct temper_worker *w, const struct temper_eval_request *req, json_t *calibration,
                json_t **result, char *msg, size_t msg_size)
{
    struct single s = {NULL, 0, msg, msg_size};
    int err = temper_eval_batch(w, req, 1, calibration, 1, single_cb, &s, msg, msg_size);
    *result = s.result;
    return err ? err : s.err;
}
