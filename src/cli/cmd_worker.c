/* cmd_worker.c: `temper worker --redis URL`: one GPU's consumer of the gym's Redis queue. It opens
 * a session on its device, joins the queue's consumer group under a name of its own, and runs the
 * consumer loop (src/serve/consumer.h) until SIGTERM or SIGINT; then the jobs in flight finish and
 * are completed before it exits, and a second signal stops it at once (what it held is re-queued
 * when a live worker finds it idle past claim_idle_ms, or at once when a worker of the same name
 * starts). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "serve/consumer.h"
#include "serve/queue.h"
#include "temper/error.h"
#include "util/option.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper worker --redis URL [--device D] [--name N] [--in-flight K] [--tasks DIR]\n\n"
            "Evaluates the gym's jobs from a Redis queue on one device, for `temper serve --redis URL` on\n"
            "another machine (or this one); start one per GPU. A job is acknowledged only once its result\n"
            "is stored in Redis; a worker that dies leaves its jobs to be re-queued for another.\n\n"
            "  --redis URL        redis://[[user]:password@]host[:port][/db][?prefix=P&...] (docs/queue-redis.md);\n"
            "                     every process of one gym uses the same URL\n"
            "  --device D         cuda[:N] or opencl[:N] (default: the first CUDA device, else the first\n"
            "                     OpenCL device; one whose kernels run inside the worker, as PoCL's on\n"
            "                     the CPU do, is served only when named)\n"
            "  --name N           its name, unique among live workers (default host:pid:device); a worker\n"
            "                     started under the name of one that died re-queues that one's jobs at once\n"
            "  --in-flight K      jobs in the session at once, so compiles overlap device runs (default 32)\n"
            "  --tasks DIR        where tasks are looked up\n"
            "  --jobs N           compile processes at a time (default: one per core)\n"
            "  --launch-timeout S kill a launch that runs longer (default 5 s)\n"
            "  --no-store         do not record evaluations in this machine's store (results still go to Redis)\n\n"
            "SIGTERM or SIGINT: the jobs in flight finish and are recorded, then it exits; a second one\n"
            "stops it at once.\n\n"
            "exit status: 0 stopped by SIGTERM, 130 stopped by SIGINT, 2 bad usage or the queue failed\n"
            "(unreachable, or lost while running), 3 no usable device, 4 the store failed\n");
}

/* Set by the first SIGTERM or SIGINT; the consumer loop reads it. */
static atomic_int stop_flag;
/* The signal that stopped it (for the exit status). */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    if (atomic_load(&stop_flag))
        _exit(sig == SIGINT ? CLI_INTERRUPTED : CLI_OK); /* the second: at once */
    stop_signal = sig;
    atomic_store(&stop_flag, 1);
}

/* The command line of one worker, as given. */
struct worker_options {
    const char *url;             /* --redis URL */
    const char *device;          /* --device, or NULL: the default */
    const char *name;            /* --name, or NULL: host:pid:device */
    const char *tasks;           /* --tasks DIR, or NULL */
    long in_flight;              /* --in-flight */
    long jobs;                   /* --jobs (0: one per core) */
    int no_store;                /* --no-store */
    struct temper_limits limits; /* the session's limits */
};

static const struct option worker_opts[] = {
    {"redis", required_argument, 0, 'r'},     {"device", required_argument, 0, 'd'},
    {"name", required_argument, 0, 'n'},      {"in-flight", required_argument, 0, 'k'},
    {"tasks", required_argument, 0, 't'},     {"jobs", required_argument, 0, 'j'},
    {"launch-timeout", required_argument, 0, 'L'}, {"no-store", no_argument, 0, 'S'},
    {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};

/* Reads the options into o, the defaults first. Returns CLI_CONTINUE, or the exit status for
 * --help, an unknown option or a bad value (said on stderr). */
static int parse_worker_options(int argc, char **argv, struct worker_options *o)
{
    memset(o, 0, sizeof(*o));
    o->in_flight = 32;
    temper_limits_default(&o->limits);
    char optmsg[256];
    int c;
    while ((c = getopt_long(argc, argv, "r:d:n:k:t:j:h", worker_opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'r': o->url = optarg; break;
        case 'd': o->device = optarg; break;
        case 'n': o->name = optarg; break;
        case 'k':
        case 'j': {
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || v < (c == 'k' ? 1 : 0) || v > 1024) {
                fprintf(stderr, "temper worker: --%s must be a number from %d to 1024, not '%s'\n",
                        c == 'k' ? "in-flight" : "jobs", c == 'k' ? 1 : 0, optarg);
                return CLI_USAGE;
            }
            *(c == 'k' ? &o->in_flight : &o->jobs) = v;
            break;
        }
        case 't': o->tasks = optarg; break;
        case 'L':
            if (temper_parse_double_option("--launch-timeout", optarg, 0.01, 3600, &o->limits.launch_timeout_s,
                                           optmsg, sizeof(optmsg))) {
                fprintf(stderr, "temper worker: %s\n", optmsg);
                return CLI_USAGE;
            }
            break;
        case 'S': o->no_store = 1; break;
        case 'h':
        default: return cli_help_exit(help, c == 'h');
        }
    }
    return CLI_CONTINUE;
}

/* Checks the arguments, the URL, the name and the task path. Returns CLI_CONTINUE, or CLI_USAGE
 * (said on stderr). */
static int check_worker_options(int argc, char **argv, const struct worker_options *o)
{
    if (optind < argc || !o->url) {
        fprintf(stderr, optind < argc ? "temper worker: unexpected argument '%s'\n" : "temper worker: --redis URL is needed\n",
                optind < argc ? argv[optind] : "");
        help(stderr);
        return CLI_USAGE;
    }
    if (strncmp(o->url, "redis://", 8)) {
        /* not echoed: it may hold a password */
        fprintf(stderr, "temper worker: --redis takes a redis:// URL (redis://[[user]:password@]host[:port][/db]), "
                        "not a '%.*s' one\n", (int)strcspn(o->url, ":"), o->url);
        return CLI_USAGE;
    }
    if (o->name && (!*o->name || strlen(o->name) > 128)) {
        fprintf(stderr, "temper worker: --name must have 1 to 128 characters\n");
        return CLI_USAGE;
    }
    if (cli_tasks_present(o->tasks) != CLI_OK)
        return CLI_USAGE;
    return CLI_CONTINUE;
}

/* Opens the queue and the device's session, refusing a default device whose kernels run inside
 * the worker. Returns CLI_CONTINUE with *q and *s open (caller closes both), or the exit status
 * (said on stderr) with neither. */
static int open_worker(const struct worker_options *o, struct temper_queue **q, struct temper_session **s)
{
    char msg[1024] = "";
    int err = temper_queue_open_redis(o->url, NULL, q, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    err = cli_session_open(s, o->device, &o->limits, o->tasks, o->no_store, (int)o->jobs, msg, sizeof(msg));
    if (err) {
        (*q)->ops->close(*q);
        return cli_error(err, msg);
    }
    const char *dev_id = json_string_value(json_object_get(temper_session_device_info(*s), "id"));
    if (!o->device && cli_device_in_process(temper_session_device_info(*s))) {
        /* The default device runs kernels inside the worker (PoCL on the CPU): served only when named. */
        snprintf(msg, sizeof(msg),
                 "the default device here, %s, runs kernels inside temper's own process, where a hostile kernel "
                 "can skew its own times, so the gym serves it only when named: --device %s",
                 dev_id ? dev_id : "opencl:0", dev_id ? dev_id : "opencl:0");
        temper_session_close(*s);
        (*q)->ops->close(*q);
        return cli_error(TEMPER_ENODEVICE, msg);
    }
    return CLI_CONTINUE;
}

/* The worker's name in the queue: --name, else host:pid:device. */
static void consumer_name(const char *name, const char *dev_id, char *consumer, size_t size)
{
    char host[64] = "host";
    if (name) {
        snprintf(consumer, size, "%s", name);
    } else {
        gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = 0;
        snprintf(consumer, size, "%s:%ld:%s", host, (long)getpid(), dev_id ? dev_id : "device");
    }
}

int cmd_worker(int argc, char **argv)
{
    struct worker_options o;
    int status = parse_worker_options(argc, argv, &o);
    if (status == CLI_CONTINUE)
        status = check_worker_options(argc, argv, &o);
    struct temper_queue *q = NULL;
    struct temper_session *s = NULL;
    if (status == CLI_CONTINUE)
        status = open_worker(&o, &q, &s);
    if (status != CLI_CONTINUE)
        return status;
    const char *dev_id = json_string_value(json_object_get(temper_session_device_info(s), "id"));
    char consumer[129];
    consumer_name(o.name, dev_id, consumer, sizeof(consumer));

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    struct temper_consumer_config cc = {0};
    cc.queue = q;
    cc.session = s;
    cc.consumer = consumer;
    cc.device = dev_id ? dev_id : (o.device ? o.device : "");
    cc.in_flight = (int)o.in_flight;
    cc.stop = &stop_flag;
    cc.tasks_dir = o.tasks;
    struct temper_consumer_counts *counts = calloc(1, sizeof(*counts));
    if (!counts) {
        temper_session_close(s);
        q->ops->close(q);
        return cli_error(TEMPER_ENOMEM, "out of memory");
    }
    char msg[1024] = "";
    fprintf(stderr, "temper worker: %s@%s takes jobs on %s\n", consumer, temper_consumer_instance(), cc.device);
    int err = temper_consumer_run(&cc, counts, msg, sizeof(msg));
    fprintf(stderr, "temper worker: %s stopped after %lld jobs (%lld from the cache, %lld failed)\n", consumer,
            (long long)atomic_load(&counts->completed), (long long)atomic_load(&counts->cache_hits),
            (long long)atomic_load(&counts->failed));
    free(counts);
    temper_session_close(s);
    q->ops->close(q);
    if (err)
        return cli_error(err, msg);
    return stop_signal == SIGINT ? CLI_INTERRUPTED : CLI_OK;
}
