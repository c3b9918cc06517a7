/* cmd_serve.c: `temper serve`: the kernel gym's HTTP/JSON API (docs/serve.md, docs/openapi.yaml).
 * Without --redis, jobs queue in the store and one consumer thread per device (its own session)
 * evaluates them; with --redis it only queues, for `temper worker` processes elsewhere. Runs until
 * SIGINT or SIGTERM, then stops taking requests, lets the jobs in flight finish and exits 0. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "serve/consumer.h"
#include "serve/queue.h"
#include "serve/server.h"
#include "temper/option.h"
#include "temper/util.h"

#define SERVE_MAX_DEVICES 16

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper serve [--listen 127.0.0.1:8787] [--token-file F] [--redis URL] [--device D ...]\n"
            "                    [--store PATH] [options]\n\n"
            "The kernel gym: an HTTP/JSON API for evaluations (docs/openapi.yaml, docs/serve.md). Without\n"
            "--redis, jobs queue in the store and one worker per device (every CUDA device, else every\n"
            "OpenCL GPU, or the --device list) evaluates them; repeated kernels come from the cache. A\n"
            "device whose kernels run inside the worker (PoCL on the CPU) is served only when named.\n"
            "With --redis, jobs go on a Redis stream for `temper worker --redis URL` processes.\n\n"
            "  --listen HOST:PORT    where to listen (default 127.0.0.1:8787; port 0: any free one, printed)\n"
            "  --token-file F        clients must send 'Authorization: Bearer <the file's first line>';\n"
            "                        required for an address other than loopback\n"
            "  --redis URL           queue on Redis (redis://host:port[/db]) instead of the store\n"
            "  --device D            cuda[:N] or opencl[:N]; repeatable (without --redis); needed for\n"
            "                        an in-process device such as opencl:0 on a machine without a GPU\n"
            "  --store PATH          the store (default $TEMPER_HOME/temper.db)\n"
            "  --tasks DIR           where tasks are looked up\n"
            "  --in-flight N         jobs each worker holds at once, compiling ahead (default 32)\n"
            "  --max-body-bytes N    largest request body (default 16777216)\n"
            "  --max-source-bytes N  largest candidate source (default 1048576)\n"
            "  --max-items N         items in one request (default 1000)\n"
            "  --max-depth N         unfinished jobs before submissions get 429 (default 10000)\n"
            "  --max-wait S          a request's wait_s is cut to this (default 60)\n"
            "  --max-connections N   connections at once (default 256)\n"
            "  --max-client-connections N  connections at once from one client address (default 64)\n"
            "  --request-timeout S   a request must arrive whole (headers and body) within S seconds of its\n"
            "                        connection's start or of the previous answer, else it is cut (default 30)\n"
            "  --launch-timeout S    kill a launch that runs longer (default 5)\n"
            "  --job-timeout S       kill an evaluation that runs longer (default 1800)\n"
            "  --mem-limit-mb N      kill a worker whose resident memory passes this (default: 3/4 of RAM)\n\n"
            "exit status: 0 stopped by SIGINT or SIGTERM, 2 bad usage, 3 no usable device, 4 the store or\n"
            "the queue failed\n");
}

/* A local consumer thread. */
struct consumer_thread {
    pthread_t thread;                      /* the thread */
    struct temper_consumer_config config;  /* what it runs */
    struct temper_consumer_counts counts;  /* its counts, read by /metrics */
    char name[129];                        /* its name (host:pid:device, cut to 128 characters) */
    char device[64];                       /* its device spec */
    int err;                               /* what stopped it */
    char msg[1024];                        /* and why */
};

static void *consumer_main(void *arg)
{
    struct consumer_thread *t = arg;
    t->err = temper_consumer_run(&t->config, &t->counts, t->msg, sizeof(t->msg));
    if (t->err) {
        fprintf(stderr, "temper: serve: the worker on %s stopped: %s\n", t->device, t->msg);
        kill(getpid(), SIGTERM); /* a server without its worker must not look alive */
    }
    return NULL;
}

static void print_event(void *user, const struct temper_session_event *ev)
{
    const char *device = user;
    if (ev->kind == TEMPER_SESSION_WARNING || ev->kind == TEMPER_SESSION_NOTICE)
        fprintf(stderr, "temper: %s%s: %s\n", ev->kind == TEMPER_SESSION_WARNING ? "warning: " : "", device,
                ev->message);
}

/* Reads the token: the file's first line, without its line end. */
static int read_token(const char *path, char **token, char *msg, size_t msg_size)
{
    size_t len;
    char why[1024];
    int err = temper_read_file(path, 4096, token, &len, why, sizeof(why));
    if (err)
        return temper_fail(msg, msg_size, err, "--token-file: %s", why);
    (*token)[strcspn(*token, "\r\n")] = 0;
    if (strlen(*token) < 16)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "--token-file %s: the token must have at least 16 characters",
                           path);
    return 0;
}

/* The local devices the gym serves by default: every CUDA device, else every OpenCL device whose
 * kernels run apart from the worker (a GPU). A device whose kernels run inside the worker (PoCL
 * on the CPU) is served only when named: such a kernel is native code beside the timer, so its
 * verdict holds but its times do not against a hostile kernel (docs/serve.md). */
static int local_devices(char devices[][64], int *n, char *msg, size_t msg_size)
{
    struct temper_worker *w;
    *n = 0;
    int err = temper_worker_start(NULL, NULL, &w, msg, msg_size);
    json_t *r = NULL;
    if (!err)
        err = temper_list_devices(w, &r, msg, msg_size);
    temper_worker_stop(w);
    if (err)
        return err;
    char passed_over[256] = "";
    for (int pass = 0; pass < 2 && !*n; pass++) {
        size_t i;
        json_t *d;
        json_array_foreach(json_object_get(r, "devices"), i, d) {
            const char *id = json_string_value(json_object_get(d, "id"));
            if (!id || json_object_get(d, "error") || strncmp(id, pass ? "opencl:" : "cuda:", pass ? 7 : 5) ||
                *n == SERVE_MAX_DEVICES)
                continue;
            if (cli_device_in_process(d)) {
                size_t used = strlen(passed_over);
                snprintf(passed_over + used, sizeof(passed_over) - used, "%s%s", used ? ", " : "", id);
                continue;
            }
            snprintf(devices[(*n)++], 64, "%s", id);
        }
    }
    json_decref(r);
    if (!*n && *passed_over)
        return temper_fail(msg, msg_size, TEMPER_ENODEVICE,
                           "no device here runs kernels apart from temper's own process; %s runs them inside it, "
                           "where a hostile kernel can skew its own times, so the gym serves it only when named: "
                           "--device %s", passed_over, passed_over);
    return *n ? 0 : temper_fail(msg, msg_size, TEMPER_ENODEVICE, "no usable device on this machine");
}

int cmd_serve(int argc, char **argv)
{
    static const struct option opts[] = {
        {"listen", required_argument, 0, 'l'},         {"token-file", required_argument, 0, 'T'},
        {"redis", required_argument, 0, 'r'},          {"device", required_argument, 0, 'd'},
        {"store", required_argument, 0, 's'},          {"tasks", required_argument, 0, 't'},
        {"in-flight", required_argument, 0, 'i'},      {"max-body-bytes", required_argument, 0, 'B'},
        {"max-source-bytes", required_argument, 0, 'S'}, {"max-items", required_argument, 0, 'I'},
        {"max-depth", required_argument, 0, 'D'},      {"max-wait", required_argument, 0, 'W'},
        {"launch-timeout", required_argument, 0, 'L'}, {"job-timeout", required_argument, 0, 'J'},
        {"mem-limit-mb", required_argument, 0, 'M'},   {"max-connections", required_argument, 0, 'C'},
        {"max-client-connections", required_argument, 0, 'P'}, {"request-timeout", required_argument, 0, 'R'},
        {"help", no_argument, 0, 'h'},                 {0, 0, 0, 0}};
    const char *listen = "127.0.0.1:8787", *token_file = NULL, *redis = NULL, *store = NULL, *tasks_dir = NULL;
    char devices[SERVE_MAX_DEVICES][64];
    int ndevices = 0, in_flight = 32, c;
    int64_t body = 0, source = 0, items = 0, depth = 0, wait = 0, mem_mb = 0, conns = 0, client_conns = 0, req_s = 0;
    struct temper_limits limits;
    temper_limits_default(&limits);
    char optmsg[256], msg[2048];
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'l': listen = optarg; break;
        case 'T': token_file = optarg; break;
        case 'r': redis = optarg; break;
        case 's': store = optarg; break;
        case 't': tasks_dir = optarg; break;
        case 'd':
            if (ndevices == SERVE_MAX_DEVICES || strlen(optarg) >= 64) {
                fprintf(stderr, "temper: serve: at most %d --device options, each a device such as cuda:0\n",
                        SERVE_MAX_DEVICES);
                return CLI_USAGE;
            }
            snprintf(devices[ndevices++], 64, "%s", optarg);
            break;
        case 'i': bad = temper_parse_int_option("--in-flight", optarg, 1, 256, &in_flight, optmsg, sizeof(optmsg)); break;
        case 'B': bad = temper_parse_i64_option("--max-body-bytes", optarg, 1024, 1 << 30, &body, optmsg, sizeof(optmsg)); break;
        case 'S': bad = temper_parse_i64_option("--max-source-bytes", optarg, 1, 1 << 20, &source, optmsg, sizeof(optmsg)); break;
        case 'I': bad = temper_parse_i64_option("--max-items", optarg, 1, 100000, &items, optmsg, sizeof(optmsg)); break;
        case 'D': bad = temper_parse_i64_option("--max-depth", optarg, 1, INT64_MAX / 2, &depth, optmsg, sizeof(optmsg)); break;
        case 'W': bad = temper_parse_i64_option("--max-wait", optarg, 1, SERVER_MAX_WAIT_S, &wait, optmsg, sizeof(optmsg)); break;
        case 'L':
            bad = temper_parse_double_option("--launch-timeout", optarg, 0.01, 3600, &limits.launch_timeout_s, optmsg,
                                             sizeof(optmsg));
            break;
        case 'J':
            bad = temper_parse_double_option("--job-timeout", optarg, 1, 86400, &limits.job_timeout_s, optmsg,
                                             sizeof(optmsg));
            break;
        case 'M': bad = temper_parse_i64_option("--mem-limit-mb", optarg, 64, 1 << 30, &mem_mb, optmsg, sizeof(optmsg)); break;
        case 'C': bad = temper_parse_i64_option("--max-connections", optarg, 1, 4096, &conns, optmsg, sizeof(optmsg)); break;
        case 'P':
            bad = temper_parse_i64_option("--max-client-connections", optarg, 1, 4096, &client_conns, optmsg,
                                          sizeof(optmsg));
            break;
        case 'R': bad = temper_parse_i64_option("--request-timeout", optarg, 1, 3600, &req_s, optmsg, sizeof(optmsg)); break;
        case 'h':
        default: return cli_help_exit(help, c == 'h');
        }
        if (bad)
            return cli_usage_error(optmsg);
    }
    if (optind < argc) {
        fprintf(stderr, "temper: serve: unexpected argument '%s'\n", argv[optind]);
        return CLI_USAGE;
    }
    if (redis && ndevices) {
        fprintf(stderr, "temper: serve: --device runs local workers; with --redis, start `temper worker --redis URL "
                        "--device D` on each machine instead\n");
        return CLI_USAGE;
    }
    if (cli_tasks_present(tasks_dir) != CLI_OK)
        return CLI_USAGE;
    limits.mem_limit_bytes = (uint64_t)mem_mb << 20;
    char *token = NULL;
    int err = token_file ? read_token(token_file, &token, msg, sizeof(msg)) : 0;
    if (err) {
        free(token);
        return cli_error(err == TEMPER_ENOTFOUND || err == TEMPER_EIO ? TEMPER_EINVALID : err, msg);
    }
    /* Signals are taken by sigwait below; every thread started from here on has them blocked. */
    sigset_t stop_set;
    sigemptyset(&stop_set);
    sigaddset(&stop_set, SIGINT);
    sigaddset(&stop_set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_set, NULL);

    struct temper_queue_config qc = {0};
    qc.max_depth = depth;
    qc.claim_idle_ms = (int)((limits.job_timeout_s + 300) * 1000);
    struct temper_queue *queue = NULL;
    err = temper_queue_open(redis ? redis : store, &qc, &queue, msg, sizeof(msg));
    if (err) {
        free(token);
        return cli_error(err == TEMPER_EUNSUPPORTED ? TEMPER_EINVALID : err == TEMPER_ESTORE ? err : TEMPER_ESTORE, msg);
    }
    if (!redis && !ndevices && (err = local_devices(devices, &ndevices, msg, sizeof(msg)))) {
        queue->ops->close(queue);
        free(token);
        return cli_error(err == TEMPER_ENODEVICE ? err : TEMPER_ENODEVICE, msg);
    }
    struct consumer_thread *threads = calloc((size_t)(ndevices ? ndevices : 1), sizeof(*threads));
    struct temper_session **sessions = calloc((size_t)(ndevices ? ndevices : 1), sizeof(*sessions));
    struct temper_consumer_counts *counts[SERVE_MAX_DEVICES];
    const char *device_names[SERVE_MAX_DEVICES];
    atomic_int stop = 0;
    int started = 0;
    char host[128] = "localhost", self[4096];
    gethostname(host, sizeof(host) - 1);
    ssize_t self_len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[self_len > 0 ? self_len : 0] = 0;
    err = threads && sessions ? 0 : temper_fail(msg, sizeof(msg), TEMPER_ENOMEM, "out of memory");
    for (int i = 0; i < ndevices && !err; i++) {
        struct consumer_thread *t = &threads[i];
        snprintf(t->device, sizeof(t->device), "%s", devices[i]);
        struct temper_session_config sc = {0};
        sc.device = t->device;
        sc.store_path = store;
        sc.tasks_dir = tasks_dir;
        sc.limits = &limits;
        sc.max_batch = in_flight;
        sc.deep_exe = self[0] ? self : NULL;
        sc.on_event = print_event;
        sc.event_user = t->device;
        err = temper_session_open(&sc, &sessions[i], msg, sizeof(msg));
        if (err)
            break;
        if (snprintf(t->name, sizeof(t->name), "%s:%d:%s", host, (int)getpid(), t->device) >= (int)sizeof(t->name))
            t->name[sizeof(t->name) - 1] = 0; /* cut: a consumer's name has at most 128 characters */
        t->config = (struct temper_consumer_config){queue, sessions[i], t->name, t->device, in_flight, 2000, &stop, tasks_dir};
        counts[i] = &t->counts;
        device_names[i] = t->device;
        if (pthread_create(&t->thread, NULL, consumer_main, t)) {
            err = temper_fail(msg, sizeof(msg), TEMPER_ENOMEM, "cannot start a thread");
            break;
        }
        started++;
    }
    struct temper_server *server = NULL;
    if (!err) {
        struct temper_server_config cfg = {0};
        cfg.listen = listen;
        cfg.token = token;
        cfg.queue = queue;
        cfg.tasks_dir = tasks_dir;
        cfg.limits.max_body_bytes = (size_t)body;
        cfg.limits.max_source_bytes = (size_t)source;
        cfg.limits.max_items = (int)items;
        cfg.limits.max_wait_s = (int)wait;
        cfg.limits.max_connections = (int)conns;
        cfg.limits.max_client_connections = (int)client_conns;
        cfg.limits.request_timeout_s = (int)req_s;
        cfg.ndevices = started;
        cfg.devices = device_names;
        cfg.counts = counts;
        err = temper_server_start(&cfg, &server, msg, sizeof(msg));
    }
    int status = CLI_OK;
    if (err) {
        status = cli_error(err, msg);
    } else {
        fprintf(stderr, "temper: serve: listening on http://%.*s:%d (queue: %s; %d local worker%s)\n",
                (int)(strrchr(listen, ':') - listen), listen, temper_server_port(server), queue->ops->engine, started,
                started == 1 ? "" : "s");
        fflush(stderr);
        int sig = 0;
        sigwait(&stop_set, &sig);
        fprintf(stderr, "temper: serve: stopping (%s): finishing the jobs in flight\n", strsignal(sig));
    }
    temper_server_stop(server);
    atomic_store(&stop, 1);
    for (int i = 0; i < started; i++) {
        pthread_join(threads[i].thread, NULL);
        if (threads[i].err && status == CLI_OK)
            status = CLI_STORE;
    }
    for (int i = 0; i < ndevices && sessions; i++)
        temper_session_close(sessions[i]);
    queue->ops->close(queue);
    free(threads);
    free(sessions);
    free(token);
    return status;
}
