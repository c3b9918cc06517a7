/* metrics.c: GET /metrics in Prometheus' text format: submissions, outcomes by verdict, cache
 * hits, redeliveries, dead letters, queue depth, workers busy and idle per device, and the phase
 * durations of the local consumers as histograms. docs/serve.md lists every name. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/server.h"
#include "util/util.h"

/* Appends a label value with Prometheus' escapes (backslash, quote, newline). */
static void label(struct temper_buf *b, const char *v)
{
    for (const char *p = v ? v : ""; *p; p++) {
        if (*p == '\\' || *p == '"')
            temper_buf_printf(b, "\\%c", *p);
        else if (*p == '\n')
            temper_buf_printf(b, "\\n");
        else
            temper_buf_append(b, p, 1);
    }
}

static void head(struct temper_buf *b, const char *name, const char *type, const char *help)
{
    temper_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* The phase histogram summed over the local consumers. */
static void histogram(struct temper_buf *b, struct server_state *st, const char *phase, size_t offset)
{
    const double *bounds = temper_histogram_bounds_s();
    long long cum = 0, sum_us = 0, count = 0;
    long long bucket[TEMPER_HISTOGRAM_BUCKETS + 1] = {0};
    for (int d = 0; d < st->config.ndevices; d++) {
        struct temper_histogram *h = (struct temper_histogram *)((char *)st->config.counts[d] + offset);
        for (int i = 0; i <= TEMPER_HISTOGRAM_BUCKETS; i++)
            bucket[i] += atomic_load(&h->bucket[i]);
        sum_us += atomic_load(&h->sum_us);
        count += atomic_load(&h->count);
    }
    for (int i = 0; i <= TEMPER_HISTOGRAM_BUCKETS; i++) {
        cum += bucket[i];
        if (i < TEMPER_HISTOGRAM_BUCKETS)
            temper_buf_printf(b, "temper_serve_phase_seconds_bucket{phase=\"%s\",le=\"%g\"} %lld\n", phase, bounds[i], cum);
        else
            temper_buf_printf(b, "temper_serve_phase_seconds_bucket{phase=\"%s\",le=\"+Inf\"} %lld\n", phase, cum);
    }
    temper_buf_printf(b, "temper_serve_phase_seconds_sum{phase=\"%s\"} %.6f\n", phase, (double)sum_us / 1e6);
    temper_buf_printf(b, "temper_serve_phase_seconds_count{phase=\"%s\"} %lld\n", phase, count);
}

void api_metrics(struct server_state *st, struct server_reply *r)
{
    struct temper_queue *q = st->config.queue;
    struct temper_queue_stats qs;
    char msg[512];
    json_t *workers = NULL;
    int err = q->ops->stats(q, &qs, msg, sizeof(msg));
    if (!err)
        err = q->ops->workers(q, SERVER_LIVE_S, &workers, msg, sizeof(msg));
    if (err) {
        server_error(r, 503, "unavailable", "the queue cannot be read: %s", msg);
        r->retry_after_s = 1;
        return;
    }
    struct temper_buf b;
    temper_buf_init(&b, 16u << 20);
    head(&b, "temper_serve_submitted_total", "counter", "Evaluations submitted as new jobs since the server started.");
    temper_buf_printf(&b, "temper_serve_submitted_total %lld\n", (long long)atomic_load(&st->submitted));
    head(&b, "temper_serve_cache_hits_total", "counter",
         "Jobs answered from the content cache: at submission, or by a local worker when it took them.");
    long long worker_hits = 0, failed = 0, verdicts[TEMPER_CONSUMER_VERDICTS] = {0};
    for (int d = 0; d < st->config.ndevices; d++) {
        struct temper_consumer_counts *c = st->config.counts[d];
        worker_hits += atomic_load(&c->cache_hits);
        failed += atomic_load(&c->failed);
        for (int v = 0; v < TEMPER_CONSUMER_VERDICTS; v++)
            verdicts[v] += atomic_load(&c->verdicts[v]);
    }
    temper_buf_printf(&b, "temper_serve_cache_hits_total{where=\"submission\"} %lld\n",
                      (long long)atomic_load(&st->submit_cache_hits));
    temper_buf_printf(&b, "temper_serve_cache_hits_total{where=\"worker\"} %lld\n", worker_hits);
    head(&b, "temper_serve_completed_total", "counter",
         "Outcomes recorded by this server's local workers, by verdict (failed: temper's own failures).");
    for (int v = 0; v < TEMPER_CONSUMER_VERDICTS; v++)
        temper_buf_printf(&b, "temper_serve_completed_total{verdict=\"%s\"} %lld\n", temper_consumer_verdict_name(v),
                          verdicts[v]);
    temper_buf_printf(&b, "temper_serve_completed_total{verdict=\"failed\"} %lld\n", failed);
    head(&b, "temper_serve_redeliveries_total", "counter", "Jobs handed to a worker again after one died with them.");
    temper_buf_printf(&b, "temper_serve_redeliveries_total %lld\n", (long long)qs.redeliveries);
    head(&b, "temper_serve_dead_letters_total", "counter", "Jobs handed over too often, ended as runtime_error.");
    temper_buf_printf(&b, "temper_serve_dead_letters_total %lld\n", (long long)qs.dead_letters);
    head(&b, "temper_serve_queue_depth", "gauge", "Jobs in the queue by state (queued: waiting; running: taken).");
    temper_buf_printf(&b, "temper_serve_queue_depth{state=\"queued\"} %lld\n", (long long)qs.queued);
    temper_buf_printf(&b, "temper_serve_queue_depth{state=\"running\"} %lld\n", (long long)qs.running);
    head(&b, "temper_serve_jobs_kept", "gauge", "Finished jobs kept with their outcomes, by state.");
    temper_buf_printf(&b, "temper_serve_jobs_kept{state=\"done\"} %lld\n", (long long)qs.done);
    temper_buf_printf(&b, "temper_serve_jobs_kept{state=\"failed\"} %lld\n", (long long)qs.failed);
    temper_buf_printf(&b, "temper_serve_jobs_kept{state=\"cancelled\"} %lld\n", (long long)qs.cancelled);
    head(&b, "temper_serve_workers", "gauge", "Live workers (reported within 30 s) per device, busy or idle.");
    /* one line per device and state: devices in order of first appearance */
    size_t i, j;
    json_t *w, *seen = json_object();
    json_array_foreach(workers, i, w) {
        const char *dev = json_string_value(json_object_get(w, "device"));
        if (!dev || json_object_get(seen, dev))
            continue;
        json_object_set_new(seen, dev, json_true());
        int busy = 0, idle = 0;
        json_t *x;
        json_array_foreach(workers, j, x) if (!strcmp(json_string_value(json_object_get(x, "device")) ?: "", dev))
            json_is_true(json_object_get(x, "busy")) ? busy++ : idle++;
        temper_buf_printf(&b, "temper_serve_workers{device=\"");
        label(&b, dev);
        temper_buf_printf(&b, "\",state=\"busy\"} %d\n", busy);
        temper_buf_printf(&b, "temper_serve_workers{device=\"");
        label(&b, dev);
        temper_buf_printf(&b, "\",state=\"idle\"} %d\n", idle);
    }
    json_decref(seen);
    json_decref(workers);
    head(&b, "temper_serve_phase_seconds", "histogram",
         "Durations of a job's phases in this server's local workers: queue_wait (submission to take), "
         "evaluate (the evaluation itself), total (submission to outcome).");
    histogram(&b, st, "queue_wait", offsetof(struct temper_consumer_counts, queue_wait));
    histogram(&b, st, "evaluate", offsetof(struct temper_consumer_counts, evaluate));
    histogram(&b, st, "total", offsetof(struct temper_consumer_counts, total));
    head(&b, "temper_serve_http_requests_total", "counter", "HTTP requests answered, by class.");
    temper_buf_printf(&b, "temper_serve_http_requests_total{class=\"all\"} %lld\n", (long long)atomic_load(&st->requests));
    temper_buf_printf(&b, "temper_serve_http_requests_total{class=\"4xx\"} %lld\n",
                      (long long)atomic_load(&st->client_errors));
    temper_buf_printf(&b, "temper_serve_http_requests_total{class=\"5xx\"} %lld\n",
                      (long long)atomic_load(&st->server_errors));
    r->status = 200;
    r->text = b.data ? b.data : strdup("");
}
