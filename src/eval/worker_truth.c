/* worker_truth.c: the calling program's own judgement of a worker whose device runs kernels in
 * the worker's address space (PoCL on a CPU). There a candidate's kernel is native code that can
 * write anywhere in the worker: the comparison's code paths, the tolerance, the result being built.
 * So the worker writes the reference's outputs at every check shape and seed into a memfd of the
 * parent's before the kernel first runs (made while no candidate's code had run in it) and seals
 * it, and writes the outputs the candidate's kernel left at each check into another; here, in a
 * process no kernel runs in, those outputs are compared with the reference's again. A correct
 * verdict stands only if that comparison passes at every check (worker_impl.h describes the frame
 * and the descriptors). The reply is read as the result it must be (struct temper_result, strictly):
 * one that does not read is a runtime error. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "temper/eval.h"
#include "eval/result_set.h"
#include "temper/result.h"
#include "util/util.h"
#include "worker_impl.h"

void worker_truth_fds(int *truth_fd, int *outputs_fd)
{
    *truth_fd = memfd_create("temper-truth", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    *outputs_fd = memfd_create("temper-outputs", MFD_CLOEXEC);
}

int worker_truth_take(const void *data, size_t len, int tainted, int truth_fd, json_t **truth)
{
    /* A reply never starts with this key: the worker writes the truth frame with only it. */
    static const char head[] = "{\"truth\":";
    if (len < 4 + sizeof(head) - 1 || memcmp((const char *)data + 4, head, sizeof(head) - 1))
        return 0;
    json_t *m = NULL;
    if (worker_decode_reply(data, len, &m))
        return 0; /* malformed: the caller reports it as a malformed reply */
    /* One truth per job, sent before the candidate ran: any other is ignored (a kernel that took
     * over the worker could send it, with what it likes). */
    int seals = truth_fd >= 0 ? fcntl(truth_fd, F_GET_SEALS) : -1;
    if (!tainted && !*truth && json_is_object(json_object_get(m, "truth")) && seals >= 0 && (seals & F_SEAL_WRITE) &&
        (seals & F_SEAL_SHRINK))
        *truth = json_incref(json_object_get(m, "truth"));
    json_decref(m);
    return 1;
}

int worker_truth_wanted(json_t *request)
{
    const char *op = json_string_value(json_object_get(request, "op"));
    return op && !strcmp(op, "eval") && !json_is_true(json_object_get(request, "profile_run"));
}

/* Turns the result's verdict into v with message text, and drops its timings: they belong to a
 * verdict that does not stand. */
static void overrule(struct temper_result *r, enum temper_verdict v, const char *text)
{
    temper_result_set_text(&r->verdict, temper_verdict_name(v));
    temper_result_set_text(&r->message, text);
    for (size_t i = 0; i < r->timings.n; i++)
        temper_result_timing_free(&r->timings.v[i]);
    free(r->timings.v);
    r->timings.v = NULL;
    r->timings.n = 0;
}

/* The index of the result's check at shape and seed, -1 if none. */
static long find_check(const struct temper_result *r, const char *shape, const char *seed)
{
    for (size_t i = 0; i < r->checks.n; i++) {
        const struct temper_result_check *c = &r->checks.v[i];
        if (c->shape && c->seed && !strcmp(c->shape, shape) && !strcmp(c->seed, seed))
            return (long)i;
    }
    return -1;
}

/* Takes "outputs_at" out of every check of the reply as the worker framed it: those offsets (where
 * the check's outputs lie in outputs_fd) are this protocol's, not a result's, so the reply reads as
 * a result only without them. Returns them in the checks' order, null where a check had none
 * (caller decrefs). */
static json_t *take_outputs_at(json_t *frame)
{
    json_t *all = json_array(), *c;
    size_t i;
    json_array_foreach(json_object_get(frame, "checks"), i, c) {
        json_t *at = json_object_get(c, "outputs_at");
        json_array_append(all, at ? at : json_null());
        json_object_del(c, "outputs_at");
    }
    return all;
}

/* Reads n bytes at offset at of fd into a new buffer (*out, caller frees); 0, or -1 when they are
 * not all there. */
static int read_at(int fd, json_t *at, size_t n, char **out)
{
    *out = NULL;
    struct stat st;
    json_int_t off = json_integer_value(at);
    if (fd < 0 || !json_is_integer(at) || off < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < (uint64_t)off + n || !(*out = malloc(n ? n : 1)))
        return -1;
    for (size_t done = 0; done < n;) {
        ssize_t r = pread(fd, *out + done, n - done, (off_t)off + (off_t)done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            free(*out);
            *out = NULL;
            return -1;
        }
        done += (size_t)r;
    }
    return 0;
}

/* Compares one output of one check; 0 when it passes, else -1 with why. */
static int judge_output(json_t *want_o, json_t *outputs, double atol, double rtol, int truth_fd, int outputs_fd,
                        const char *where, char *why, size_t why_size)
{
    const char *name = json_string_value(json_object_get(want_o, "name"));
    const char *dtype = json_string_value(json_object_get(want_o, "dtype"));
    json_int_t n = json_integer_value(json_object_get(want_o, "elements"));
    int dt = dtype ? temper_dtype_parse(dtype) : -1;
    if (!name || dt < 0 || n < 0 || n > ((json_int_t)1 << 40)) {
        snprintf(why, why_size, "the reference outputs the worker handed over at %s are malformed", where);
        return -1;
    }
    json_t *got_at = json_object_get(outputs, name);
    if (!got_at) {
        snprintf(why, why_size, "the worker reported the check at %s passed but did not hand over output %s", where,
                 name);
        return -1;
    }
    char *want = NULL, *got = NULL;
    int rc = -1;
    size_t es = temper_dtype_size((enum temper_dtype)dt);
    if (read_at(truth_fd, json_object_get(want_o, "at"), (size_t)n * sizeof(double), &want)) {
        snprintf(why, why_size, "the reference outputs the worker handed over at %s are not all there", where);
    } else if (read_at(outputs_fd, got_at, (size_t)n * es, &got)) {
        snprintf(why, why_size, "the worker did not hand over the %zu bytes of output %s at %s", (size_t)n * es, name,
                 where);
    } else {
        struct temper_compare r;
        temper_compare_values((enum temper_dtype)dt, got, (const double *)want, (int64_t)n, atol, rtol, &r);
        if (r.mismatches)
            snprintf(why, why_size,
                     "temper's own comparison, outside the worker, found %s[%lld] = %.9g where the C reference "
                     "gives %.9g at %s (%lld of %lld elements wrong), a check the worker reported as passed: "
                     "the candidate's kernel may have changed how the worker judged it",
                     name, (long long)r.first_bad, r.first_got, r.first_want, where, (long long)r.mismatches,
                     (long long)n);
        else
            rc = 0;
    }
    free(want);
    free(got);
    return rc;
}

/* Why the result's correct verdict does not stand, in why (and *v, the verdict it becomes), or
 * why[0] == 0 when temper's own comparison passes at every check of truth; outputs_at holds each
 * check's offsets in outputs_fd (take_outputs_at). */
static void judge_checks(json_t *truth, int truth_fd, int outputs_fd, const struct temper_result *r,
                         json_t *outputs_at, enum temper_verdict *v, char *why, size_t why_size)
{
    *v = TEMPER_VERDICT_INCORRECT;
    json_t *checks = json_object_get(truth, "checks");
    if (!json_is_array(checks) || !json_array_size(checks)) {
        *v = TEMPER_VERDICT_RUNTIME_ERROR;
        snprintf(why, why_size, "the worker did not hand over the reference's outputs before the candidate's "
                                "kernel ran, so its verdict cannot be checked");
        return;
    }
    double atol = json_number_value(json_object_get(truth, "atol"));
    double rtol = json_number_value(json_object_get(truth, "rtol"));
    size_t i;
    json_t *tc;
    json_array_foreach(checks, i, tc) {
        const char *shape = json_string_value(json_object_get(tc, "shape"));
        const char *seed = json_string_value(json_object_get(tc, "seed"));
        char where[512];
        snprintf(where, sizeof(where), "shape %s, %s seed", shape ? shape : "?", seed ? seed : "?");
        long k = shape && seed ? find_check(r, shape, seed) : -1;
        if (k < 0 || !(r->checks.v[k].passed.set && r->checks.v[k].passed.v)) {
            snprintf(why, why_size, "the worker's correct verdict lacks a passed check at %s", where);
            return;
        }
        size_t j;
        json_t *o;
        json_array_foreach(json_object_get(tc, "outputs"), j, o) {
            if (judge_output(o, json_array_get(outputs_at, (size_t)k), atol, rtol, truth_fd, outputs_fd, where, why,
                             why_size))
                return;
        }
    }
}

/* Judges the result r of a worker a candidate's kernel ran in: a correct verdict stands only if
 * judge_checks finds nothing. */
static void judge_result(json_t *truth, int truth_fd, int outputs_fd, struct temper_result *r, json_t *outputs_at)
{
    enum temper_verdict v = TEMPER_VERDICT_INCORRECT;
    char why[1536] = "", text[2048];
    if (r->verdict && !strcmp(r->verdict, "correct"))
        judge_checks(truth, truth_fd, outputs_fd, r, outputs_at, &v, why, sizeof(why));
    if (why[0]) {
        snprintf(text, sizeof(text), "%s (the worker had said: %s)", why, r->message ? r->message : "nothing");
        overrule(r, v, text);
    }
}

/* The reply is read once as the result it must be (the worker's same_code_key, which eval.c takes,
 * set aside), judged and marked restarted on the struct, and written again by the generated writer,
 * in place. A judged reply that does not read as a result stands for nothing: a runtime error, as
 * a malformed reply is (worker.c), whatever verdict it claimed, its other fields read leniently;
 * and its same_code_key is dropped, so that no later build of the same code takes it. An unjudged
 * one that does not read is left as it came, but for those two keys: eval.c's strict read fails it. */
void worker_truth_reply(json_t *truth, int judge, int tainted, int truth_fd, int outputs_fd, int restarted,
                        json_t *reply)
{
    if (!json_is_object(reply))
        return;
    json_t *outputs_at = take_outputs_at(reply);
    judge = judge && tainted;
    /* An error reply (a request the worker refused) is no result, with no verdict to judge: eval.c
     * fails it with its message, whatever else it says. */
    if ((!judge && !restarted) || json_object_get(reply, "error")) {
        json_decref(outputs_at);
        return;
    }
    json_t *key = json_incref(json_object_get(reply, "same_code_key"));
    json_object_del(reply, "same_code_key");
    struct temper_result r;
    char why[1536];
    int malformed = temper_result_from_json(reply, &r, why, sizeof(why)) != 0;
    if (malformed && judge) {
        char text[2048];
        snprintf(text, sizeof(text), "the device worker sent a malformed reply: %s", why);
        temper_result_from_stored(reply, &r);
        overrule(&r, TEMPER_VERDICT_RUNTIME_ERROR, text);
    } else if (judge) {
        judge_result(truth, truth_fd, outputs_fd, &r, outputs_at);
    }
    json_decref(outputs_at);
    if (malformed) {
        json_decref(key);
        key = NULL;
    }
    if (!malformed || judge) {
        if (restarted)
            r.worker_restarted = (struct temper_opt_bool){1, 1};
        json_t *out = temper_result_to_json(&r);
        json_object_clear(reply);
        json_object_update(reply, out);
        json_decref(out);
    }
    temper_result_free(&r);
    if (key)
        json_object_set_new(reply, "same_code_key", key);
}

void worker_truth_judge(json_t *truth, int judge, int tainted, int truth_fd, int outputs_fd, json_t *reply)
{
    worker_truth_reply(truth, judge, tainted, truth_fd, outputs_fd, 0, reply);
}
