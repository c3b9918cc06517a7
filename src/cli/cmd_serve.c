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
#include "temper/session.h"
#include "util/option.h"
#include "util/util.h"

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
    *n = 0;
    json_t *r = NULL;
    int err = temper_session_list_devices(&r, msg, msg_size);
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

/* The command line of the gym, as given. */
struct serve_options {
    const char *listen;                     /* --listen HOST:PORT */
    const char *token_file;                 /* --token-file, or NULL */
    const char *redis;                      /* --redis URL, or NULL: the store's queue */
    const char *store;                      /* --store PATH, or NULL: the default */
    const char *tasks_dir;                  /* --tasks DIR, or NULL */
    char devices[SERVE_MAX_DEVICES][64];    /* the --device list, or the local devices found */
    int ndevices;                           /* how many */
    int in_flight;                          /* --in-flight */
    int64_t body, source;                   /* --max-body-bytes, --max-source-bytes (0: the default) */
    int64_t items, depth, wait;             /* --max-items, --max-depth, --max-wait (0: the default) */
    int64_t conns, client_conns;            /* --max-connections, --max-client-connections (0: the default) */
    int64_t req_s;                          /* --request-timeout (0: the default) */
    int64_t mem_mb;                         /* --mem-limit-mb (0: the default) */
    struct temper_limits limits;            /* the sessions' limits */
};

static const struct option serve_opts[] = {
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

/* Reads one numeric option c into o: 0, an error (msg filled), or 1 when c is no numeric option. */
static int parse_serve_number(struct serve_options *o, int c, const char *arg, char *msg, size_t msg_size)
{
    switch (c) {
    case 'i': return temper_parse_int_option("--in-flight", arg, 1, 256, &o->in_flight, msg, msg_size);
    case 'B': return temper_parse_i64_option("--max-body-bytes", arg, 1024, 1 << 30, &o->body, msg, msg_size);
    case 'S': return temper_parse_i64_option("--max-source-bytes", arg, 1, 1 << 20, &o->source, msg, msg_size);
    case 'I': return temper_parse_i64_option("--max-items", arg, 1, 100000, &o->items, msg, msg_size);
    case 'D': return temper_parse_i64_option("--max-depth", arg, 1, INT64_MAX / 2, &o->depth, msg, msg_size);
    case 'W': return temper_parse_i64_option("--max-wait", arg, 1, SERVER_MAX_WAIT_S, &o->wait, msg, msg_size);
    case 'L':
        return temper_parse_double_option("--launch-timeout", arg, 0.01, 3600, &o->limits.launch_timeout_s, msg,
                                          msg_size);
    case 'J':
        return temper_parse_double_option("--job-timeout", arg, 1, 86400, &o->limits.job_timeout_s, msg, msg_size);
    case 'M': return temper_parse_i64_option("--mem-limit-mb", arg, 64, 1 << 30, &o->mem_mb, msg, msg_size);
    case 'C': return temper_parse_i64_option("--max-connections", arg, 1, 4096, &o->conns, msg, msg_size);
    case 'P':
        return temper_parse_i64_option("--max-client-connections", arg, 1, 4096, &o->client_conns, msg, msg_size);
    case 'R': return temper_parse_i64_option("--request-timeout", arg, 1, 3600, &o->req_s, msg, msg_size);
    default: return 1;
    }
}

/* Reads the options into o, the defaults first, and checks them against each other and the task
 * path. Returns CLI_CONTINUE, or the exit status for --help, an unknown option, a bad value or a
 * bad combination (said on stderr). */
static int parse_serve_options(int argc, char **argv, struct serve_options *o)
{
    memset(o, 0, sizeof(*o));
    o->listen = "127.0.0.1:8787";
    o->in_flight = 32;
    temper_limits_default(&o->limits);
    char optmsg[256];
    int c;
    while ((c = getopt_long(argc, argv, "h", serve_opts, NULL)) != -1) {
        switch (c) {
        case 'l': o->listen = optarg; break;
        case 'T': o->token_file = optarg; break;
        case 'r': o->redis = optarg; break;
        case 's': o->store = optarg; break;
        case 't': o->tasks_dir = optarg; break;
        case 'd':
            if (o->ndevices == SERVE_MAX_DEVICES || strlen(optarg) >= 64) {
                fprintf(stderr, "temper: serve: at most %d --device options, each a device such as cuda:0\n",
                        SERVE_MAX_DEVICES);
                return CLI_USAGE;
            }
            snprintf(o->devices[o->ndevices++], 64, "%s", optarg);
            break;
        default: {
            int bad = parse_serve_number(o, c, optarg, optmsg, sizeof(optmsg));
            if (bad == 1)
                return cli_help_exit(help, c == 'h');
            if (bad)
                return cli_usage_error(optmsg);
        }
        }
    }
    if (optind < argc) {
        fprintf(stderr, "temper: serve: unexpected argument '%s'\n", argv[optind]);
        return CLI_USAGE;
    }
    if (o->redis && o->ndevices) {
        fprintf(stderr, "temper: serve: --device runs local workers; with --redis, start `temper worker --redis URL "
                        "--device D` on each machine instead\n");
        return CLI_USAGE;
    }
    if (cli_tasks_present(o->tasks_dir) != CLI_OK)
        return CLI_USAGE;
    o->limits.mem_limit_bytes = (uint64_t)o->mem_mb << 20;
    return CLI_CONTINUE;
}

/* What a running gym holds; stop_gym releases it. */
struct gym {
    struct temper_queue *queue;                               /* the jobs' queue */
    struct consumer_thread *threads;                          /* one per local device */
    struct temper_session **sessions;                         /* their sessions */
    struct temper_consumer_counts *counts[SERVE_MAX_DEVICES]; /* each started thread's counts */
    const char *device_names[SERVE_MAX_DEVICES];              /* and its device */
    atomic_int stop;                                          /* 1: the consumers stop */
    int started;                                              /* threads started */
    struct temper_server *server;                             /* the HTTP server, once started */
};

/* Opens a session on each local device and starts its consumer thread; stops at the first that
 * fails (msg filled). */
static int start_consumers(const struct serve_options *o, struct gym *g, char *msg, size_t msg_size)
{
    g->threads = calloc((size_t)(o->ndevices ? o->ndevices : 1), sizeof(*g->threads));
    g->sessions = calloc((size_t)(o->ndevices ? o->ndevices : 1), sizeof(*g->sessions));
    char host[128] = "localhost", self[4096];
    gethostname(host, sizeof(host) - 1);
    ssize_t self_len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[self_len > 0 ? self_len : 0] = 0;
    int err = g->threads && g->sessions ? 0 : temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    for (int i = 0; i < o->ndevices && !err; i++) {
        struct consumer_thread *t = &g->threads[i];
        snprintf(t->device, sizeof(t->device), "%s", o->devices[i]);
        struct temper_session_config sc = {0};
        sc.device = t->device;
        sc.store_path = o->store;
        sc.tasks_dir = o->tasks_dir;
        sc.limits = &o->limits;
        sc.max_batch = o->in_flight;
        sc.deep_exe = self[0] ? self : NULL;
        sc.on_event = print_event;
        sc.event_user = t->device;
        err = temper_session_open(&sc, &g->sessions[i], msg, msg_size);
        if (err)
            break;
        if (snprintf(t->name, sizeof(t->name), "%s:%d:%s", host, (int)getpid(), t->device) >= (int)sizeof(t->name))
            t->name[sizeof(t->name) - 1] = 0; /* cut: a consumer's name has at most 128 characters */
        t->config = (struct temper_consumer_config){g->queue,     g->sessions[i], t->name,     t->device,
                                                    o->in_flight, 2000,           &g->stop, o->tasks_dir};
        g->counts[i] = &t->counts;
        g->device_names[i] = t->device;
        if (pthread_create(&t->thread, NULL, consumer_main, t)) {
            err = temper_fail(msg, msg_size, TEMPER_ENOMEM, "cannot start a thread");
            break;
        }
        g->started++;
    }
    return err;
}

/* Starts the HTTP server on the queue and the started consumers' counts. */
static int start_server(const struct serve_options *o, const char *token, struct gym *g, char *msg, size_t msg_size)
{
    struct temper_server_config cfg = {0};
    cfg.listen = o->listen;
    cfg.token = token;
    cfg.queue = g->queue;
    cfg.tasks_dir = o->tasks_dir;
    cfg.limits.max_body_bytes = (size_t)o->body;
    cfg.limits.max_source_bytes = (size_t)o->source;
    cfg.limits.max_items = (int)o->items;
    cfg.limits.max_wait_s = (int)o->wait;
    cfg.limits.max_connections = (int)o->conns;
    cfg.limits.max_client_connections = (int)o->client_conns;
    cfg.limits.request_timeout_s = (int)o->req_s;
    cfg.ndevices = g->started;
    cfg.devices = g->device_names;
    cfg.counts = g->counts;
    return temper_server_start(&cfg, &g->server, msg, msg_size);
}

/* Stops the server, lets the consumers finish their jobs in flight, and closes everything;
 * returns status, or CLI_STORE when a consumer had stopped on an error. */
static int stop_gym(struct gym *g, int ndevices, int status)
{
    temper_server_stop(g->server);
    atomic_store(&g->stop, 1);
    for (int i = 0; i < g->started; i++) {
        pthread_join(g->threads[i].thread, NULL);
        if (g->threads[i].err && status == CLI_OK)
            status = CLI_STORE;
    }
    for (int i = 0; i < ndevices && g->sessions; i++)
        temper_session_close(g->sessions[i]);
    g->queue->ops->close(g->queue);
    free(g->threads);
    free(g->sessions);
    return status;
}

int cmd_serve(int argc, char **argv)
{
    struct serve_options o;
    int status = parse_serve_options(argc, argv, &o);
    if (status != CLI_CONTINUE)
        return status;
    char msg[2048];
    char *token = NULL;
    int err = o.token_file ? read_token(o.token_file, &token, msg, sizeof(msg)) : 0;
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
    qc.max_depth = o.depth;
    qc.claim_idle_ms = (int)((o.limits.job_timeout_s + 300) * 1000);
    struct gym g = {0};
    err = temper_queue_open(o.redis ? o.redis : o.store, &qc, &g.queue, msg, sizeof(msg));
    if (err) {
        free(token);
        return cli_error(err == TEMPER_EUNSUPPORTED ? TEMPER_EINVALID : err == TEMPER_ESTORE ? err : TEMPER_ESTORE, msg);
    }
    if (!o.redis && !o.ndevices && (err = local_devices(o.devices, &o.ndevices, msg, sizeof(msg)))) {
        g.queue->ops->close(g.queue);
        free(token);
        return cli_error(err == TEMPER_ENODEVICE ? err : TEMPER_ENODEVICE, msg);
    }
    err = start_consumers(&o, &g, msg, sizeof(msg));
    if (!err)
        err = start_server(&o, token, &g, msg, sizeof(msg));
    status = CLI_OK;
    if (err) {
        status = cli_error(err, msg);
    } else {
        fprintf(stderr, "temper: serve: listening on http://%.*s:%d (queue: %s; %d local worker%s)\n",
                (int)(strrchr(o.listen, ':') - o.listen), o.listen, temper_server_port(g.server),
                g.queue->ops->engine, g.started, g.started == 1 ? "" : "s");
        fflush(stderr);
        int sig = 0;
        sigwait(&stop_set, &sig);
        fprintf(stderr, "temper: serve: stopping (%s): finishing the jobs in flight\n", strsignal(sig));
    }
    status = stop_gym(&g, o.ndevices, status);
    free(token);
    return status;
}
