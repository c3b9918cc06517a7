/* pipeline_build.c: the lowest layer of the worker's pipeline: failures and error replies, builds
 * through the build cache, and parsing and building a candidate into a plan. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline_impl.h"

int fail_with(struct failure *f, enum temper_verdict v, const char *fmt, ...)
{
    f->verdict = v;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof(f->message), fmt, ap);
    va_end(ap);
    return -1;
}

json_t *worker_error_reply(const char *msg, int code)
{
    return json_pack("{s:s, s:i}", "error", msg, "code", code);
}

/* Builds source with options through the build cache; *code (if code is not NULL) gets the
 * hash of the binary's code (temper_code_hash), 0 where the backend gives no binary. */
int worker_build_module(struct worker_state *ws, const char *source, size_t len, const char *options,
                        struct temper_buf *log, struct temper_dmodule **mod, int *cache_hit, uint64_t *code, char *msg,
                        size_t n)
{
    struct temper_device *d = &ws->dev;
    char guarded[4096];
    if (temper_build_options(temper_lang_parse(d->info.language), options, guarded, sizeof(guarded), msg, n))
        return TEMPER_ECOMPILE;
    options = guarded;
    uint64_t key = temper_build_key(source, len, options, d->info.compiler_version,
                                    d->info.arch[0] ? d->info.arch : d->info.name);
    void *bin = NULL;
    size_t size = 0;
    *cache_hit = 0;
    if (code)
        *code = 0;
    /* The cache is the calling program's (this process writes none): what is built here is
     * reported, and built for the cache by a process that runs no candidate. */
    temper_build_cache_note(key, source, len, options, d->ops->name, d->info.name, d->info.arch,
                            d->info.compiler_version);
    if (!temper_build_cache_get(key, &bin, &size)) {
        int err = temper_dev_load(d, bin, size, mod, msg, n);
        if (!err && code)
            *code = temper_code_hash(bin, size);
        free(bin);
        if (!err) {
            *cache_hit = 1;
            return 0;
        }
    }
    int err;
    if (d->info.caps & TEMPER_DEVICE_CAP_OFFLINE_COMPILE) {
        err = temper_dev_compile(d, source, options, log, &bin, &size, msg, n);
        if (err)
            return err;
        temper_build_cache_put(key, bin, size);
        err = temper_dev_load(d, bin, size, mod, msg, n);
        if (!err && code)
            *code = temper_code_hash(bin, size);
        free(bin);
        return err;
    }
    err = temper_dev_build(d, source, options, log, mod, msg, n);
    if (err)
        return err;
    if (!temper_dev_binary(d, *mod, &bin, &size)) {
        temper_build_cache_put(key, bin, size);
        if (code)
            *code = temper_code_hash(bin, size);
        free(bin);
    }
    return 0;
}

/* Loads a Triton candidate's build: the compile process made it ahead, and the calling program
 * stored it under the key its compiler (built_by: "triton 3.6.0") gives. This process runs no
 * Python (its sandbox refuses exec), so a build that is not there is the candidate's compile error. */
static int worker_load_triton(struct worker_state *ws, struct plan *p, const char *built_by, char *msg, size_t n)
{
    struct temper_device *d = &ws->dev;
    if (!built_by || !*built_by)
        return temper_fail(msg, n, TEMPER_ECOMPILE, "no Triton build was made for it (a compile process builds a "
                           "Triton candidate before it runs; its message is the result's when it fails)");
    uint64_t key = temper_build_key(p->cand.source, p->cand.source_len, p->options, built_by,
                                    d->info.arch[0] ? d->info.arch : d->info.name);
    void *bin = NULL;
    size_t size = 0;
    if (temper_build_cache_get(key, &bin, &size))
        return temper_fail(msg, n, TEMPER_ECOMPILE, "the Triton build (%s, %s) is not in the build cache", built_by,
                           d->info.arch);
    int err = temper_dev_load(d, bin, size, &p->mod, msg, n);
    if (!err)
        p->code = temper_code_hash(bin, size);
    p->cache_hit = 1;
    free(bin);
    return err;
}

/* Compilers name the file they compiled: PoCL a temporary (".../tempfile_ab12.cl"), NVRTC
 * "candidate.cu". The log should name the candidate, so people find the line. */
static void log_name_candidate(struct temper_buf *log, const char *path)
{
    if (!log || !log->data)
        return;
    struct temper_buf out;
    temper_buf_init(&out, log->max_bytes + 4096);
    for (const char *p = log->data; *p;) {
        const char *hit = strstr(p, "tempfile_");
        if (!hit)
            hit = strstr(p, "candidate.cu");
        if (!hit) {
            temper_buf_append(&out, p, strlen(p));
            break;
        }
        const char *start = hit;
        while (start > p && start[-1] != ' ' && start[-1] != '\n' && start[-1] != '"')
            start--;
        const char *end = strstr(hit, ".cl");
        const char *end_cu = strstr(hit, ".cu");
        end = end && (!end_cu || end < end_cu) ? end : end_cu;
        if (!end || memchr(hit, '\n', (size_t)(end - hit))) {
            temper_buf_append(&out, p, (size_t)(hit - p) + 1);
            p = hit + 1;
            continue;
        }
        temper_buf_append(&out, p, (size_t)(start - p));
        temper_buf_append(&out, path, strlen(path));
        p = end + 3;
    }
    if (out.data) {
        temper_buf_free(log);
        *log = out;
    }
}

/* The knob values of the job: the candidate's defaults, each replaced by the value the parent
 * resolved (the job's "knobs": every knob's text, as the parent checked it and formatted it once),
 * taken as it is, with no NAME=VALUE text made and checked again. Nonzero for a frame whose knobs
 * are not the candidate's. */
static int plan_knobs(struct plan *p, json_t *knobs, char *msg, size_t msg_size)
{
    temper_knobs_default(&p->cand, &p->knobs);
    const char *name;
    json_t *value;
    json_object_foreach(knobs, name, value)
    {
        const char *text = json_string_value(value);
        int i = 0;
        while (i < p->knobs.n && strcmp(p->knobs.names[i], name))
            i++;
        if (i == p->knobs.n || !text || strlen(text) >= TEMPER_NAME_MAX)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "the job's knob '%.64s' is not one of the candidate's "
                               "or its value is not text under %d bytes", name, TEMPER_NAME_MAX);
        snprintf(p->knobs.values[i], TEMPER_NAME_MAX, "%s", text);
    }
    return 0;
}

/* Parses and builds a candidate with the given knob values (an object, or NULL for defaults), in
 * language lang (NULL: from path's extension). A build failure gives verdict compile_error (or
 * invalid for a launch naming no kernel). */
int plan_build(struct worker_state *ws, const char *path, const char *lang, const char *source, json_t *knobs,
               const char *extra_flags, const char *built_by, struct temper_buf *log, struct plan *p,
               struct failure *f)
{
    char msg[2048];
    memset(p, 0, sizeof(*p));
    int err = source ? temper_candidate_parse_lang(path, lang, source, strlen(source), &p->cand, msg, sizeof(msg))
                     : temper_candidate_load(path, &p->cand, msg, sizeof(msg));
    if (err)
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s", msg);
    if (plan_knobs(p, knobs, msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s", msg);
    int triton = p->cand.lang == TEMPER_LANG_TRITON;
    if (triton ? temper_triton_options(&p->cand, &ws->s.task, &p->knobs, p->options, sizeof(p->options), msg,
                                       sizeof(msg))
               : temper_candidate_options(&p->cand, &p->knobs, p->options, sizeof(p->options), msg, sizeof(msg)))
        return fail_with(f, TEMPER_VERDICT_INVALID, "%s", msg);
    p->knob_len = strlen(p->options);
    if (extra_flags && *extra_flags && !triton) {
        size_t used = strlen(p->options);
        snprintf(p->options + used, sizeof(p->options) - used, "%s%s", used ? " " : "", extra_flags);
    }
    worker_doing(ws->shared, WORKER_BUILDING, "building %s", path);
    err = triton ? worker_load_triton(ws, p, built_by, msg, sizeof(msg))
                 : worker_build_module(ws, p->cand.source, p->cand.source_len, p->options, log, &p->mod,
                                       &p->cache_hit, &p->code, msg, sizeof(msg));
    if (err) {
        log_name_candidate(log, path);
        const char *asm_at = log && log->data ? strstr(log->data, TEMPER_NO_ASM) : NULL;
        if (asm_at) {
            /* The line of the log's first mention: "error: PATH:LINE:COL ...: use of undeclared
             * identifier '...'" (PoCL). */
            const char *start = asm_at;
            while (start > log->data && start[-1] != '\n')
                start--;
            size_t plen = strlen(path);
            const char *named = plen ? strstr(start, path) : NULL;
            int line = named && named < asm_at && named[plen] == ':' ? atoi(named + plen + 1) : 0;
            char where[32] = "";
            if (line > 0)
                snprintf(where, sizeof(where), ":%d", line);
            return fail_with(f, TEMPER_VERDICT_INVALID,
                             "%s%s: inline assembly is not allowed in OpenCL C, also where macros build its keyword "
                             "(the compiler saw asm after expanding them)",
                             path, where);
        }
        return fail_with(f, TEMPER_VERDICT_COMPILE_ERROR, "%s: %s", path, msg);
    }
    for (int i = 0; i < p->cand.nlaunches; i++) {
        err = temper_dev_kernel(&ws->dev, p->mod, p->cand.launches[i].kernel, &p->kernels[i], msg, sizeof(msg));
        if (err)
            return fail_with(f, TEMPER_VERDICT_INVALID, "%s:%d: launch: %s", path, p->cand.launches[i].line, msg);
    }
    return 0;
}
