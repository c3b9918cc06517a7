/* queue.c: what both queue engines share: the content and cache keys of a job, the state names,
 * freeing a job, a dead letter's result, consumer names and the tests' hook that kills a consumer.
 * Opening an engine by its URL is in queue_open.c: the engines call this file, so it calls none of
 * them. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

#include "serve/queue.h"
#include "temper/result.h"
#include "temper/error.h"

const char *temper_job_state_name(enum temper_job_state s)
{
    switch (s) {
    case TEMPER_JOB_QUEUED:
        return "queued";
    case TEMPER_JOB_RUNNING:
        return "running";
    case TEMPER_JOB_DONE:
        return "done";
    case TEMPER_JOB_CANCELLED:
        return "cancelled";
    case TEMPER_JOB_FAILED:
        return "failed";
    }
    return "unknown";
}

void temper_job_free(struct temper_job *job)
{
    if (!job)
        return;
    json_decref(job->item);
    json_decref(job->result);
    free(job);
}

/* 32 hex digits of XXH3-128 over text. */
static void hash128_hex(const char *text, size_t len, char out[65])
{
    XXH128_hash_t h = XXH3_128bits(text, len);
    snprintf(out, 65, "%016llx%016llx", (unsigned long long)h.high64, (unsigned long long)h.low64);
}

int temper_job_content_key(const json_t *item, const char *task_hash, char out[65], char *msg, size_t msg_size)
{
    out[0] = 0;
    json_t *src = json_object_get(item, "source");
    if (!json_is_string(src))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the item has no source");
    /* Everything that decides the result, in one canonical text (keys sorted, so that knobs given
     * in another order hash alike). */
    json_t *key = json_pack("{s:s, s:O, s:O?, s:O?, s:O?, s:s}", "task_hash", task_hash ? task_hash : "", "source", src,
                            "lang", json_object_get(item, "lang"), "knobs", json_object_get(item, "knobs"), "options",
                            json_object_get(item, "options"), "version", TEMPER_VERSION);
    if (!key)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory hashing a job");
    char *text = json_dumps(key, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
    json_decref(key);
    if (!text)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory hashing a job");
    hash128_hex(text, strlen(text), out);
    free(text);
    return 0;
}

void temper_job_cache_key(const char *content_key, const char *device_key, char out[65])
{
    size_t a = strlen(content_key), b = strlen(device_key);
    char *text = malloc(a + b + 2);
    if (!text) { /* keyed on nothing would be wrong: a key no entry has */
        snprintf(out, 65, "%s", "unhashable");
        return;
    }
    memcpy(text, content_key, a);
    text[a] = '\n';
    memcpy(text + a + 1, device_key, b + 1);
    hash128_hex(text, a + b + 1, out);
    free(text);
}

json_t *temper_job_dead_result(const char *id, const json_t *item, int deaths, int deliveries)
{
    const char *task = json_string_value(json_object_get(item, "task"));
    char text[512];
    snprintf(text, sizeof(text),
             "job %.128s: its worker died %d times while it ran alone (the limit), before recording a result; it was "
             "handed to a worker %d times in all: the kernel kills its worker, so it is not run again (dead letters)",
             id, deaths, deliveries);
    json_t *o = json_pack("{s:s, s:s, s:s}", "verdict", "runtime_error", "message", text, "task", task ? task : "");
    json_t *norm = o ? temper_result_normalize(o, NULL, 0) : NULL;
    json_decref(o);
    return norm;
}

int temper_consumer_of(const char *consumer, const char *name, size_t name_len)
{
    if (strlen(consumer) != name_len + 17 || memcmp(consumer, name, name_len) || consumer[name_len] != '@')
        return 0;
    for (const char *p = consumer + name_len + 1; *p; p++)
        if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
            return 0;
    return 1;
}

void temper_job_test_die(const struct temper_job *job)
{
    const char *marker = getenv("TEMPER_TEST_WORKER_DIE_ON");
    const char *src = job ? json_string_value(json_object_get(job->item, "source")) : NULL;
    if (!marker || !*marker || !src || !strstr(src, marker))
        return;
    fprintf(stderr, "temper: TEMPER_TEST_WORKER_DIE_ON: killing itself with job %s\n", job->id);
    fflush(stderr);
    kill(getpid(), SIGKILL);
}
