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
#include "temper/option.h"

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

int cmd_worker(int argc, char **argv)
{
    static const struct option opts[] = {
        {"redis", required_argument, 0, 'r'},     {"device", required_argument, 0, 'd'},
        {"name", required_argument, 0, 'n'},      {"in-flight", required_argument, 0, 'k'},
        {"tasks", required_argument, 0, 't'},     {"jobs", required_argument, 0, 'j'},
        {"launch-timeout", required_argument, 0, 'L'}, {"no-store", no_argument, 0, 'S'},
        {"help", no_argument, 0, 'h'},            {0, 0, 0, 0}};
    const char *url = NULL, *device = NULL, *name = NULL, *tasks = NULL;
    long in_flight = 32, jobs = 0;
    int no_store = 0, c;
    struct temper_limits limits;
    temper_limits_default(&limits);
    char optmsg[256];
    while ((c = getopt_long(argc, argv, "r:d:n:k:t:j:h", opts, NULL)) != -1) {
        char *end = NULL;
        switch (c) {
        case 'r':
            url = optarg;
            break;
        case 'd':
            device = optarg;
            break;
        case 'n':
            name = optarg;
            break;
        case 'k':
        case 'j': {
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || v < (c == 'k' ? 1 : 0) || v > 1024) {
                fprintf(stderr, "temper worker: --%s must be a number from %d to 1024, not '%s'\n",
                        c == 'k' ? "in-flight" : "jobs", c == 'k' ? 1 : 0, optarg);
                return CLI_USAGE;
            }
            *(c == 'k' ? &in_flight : &jobs) = v;
            break;
        }
        case 't':
            tasks = optarg;
            break;
        case 'L':
            if (temper_parse_double_option("--launch-timeout", optarg, 0.01, 3600, &limits.launch_timeout_s, optmsg,
                                           sizeof(optmsg))) {
                fprintf(stderr, "temper worker: %s\n", optmsg);
                return CLI_USAGE;
            }
            break;
        case 'S':
            no_store = 1;
            break;
        case 'h':
        default:
            return cli_help_exit(help, c == 'h');
        }
    }
    if (optind < argc || !url) {
        fprintf(stderr, optind < argc ? "temper worker: unexpected argument '%s'\n" : "temper worker: --redis URL is needed\n",
                optind < argc ? argv[optind] : "");
        help(stderr);
        return CLI_USAGE;
    }
    if (strncmp(url, "redis://", 8)) {
        /* not echoed: it may hold a password */
        fprintf(stderr, "temper worker: --redis takes a redis:// URL (redis://[[user]:password@]host[:port][/db]), "
                        "not a '%.*s' one\n", (int)strcspn(url, ":"), url);
        return CLI_USAGE;
    }
    if (name && (!*name || strlen(name) > 128)) {
        fprintf(stderr, "temper worker: --name must have 1 to 128 characters\n");
        return CLI_USAGE;
    }

    if (cli_tasks_present(tasks) != CLI_OK)
        return CLI_USAGE;

    char msg[1024] = "";
    struct temper_queue *q = NULL;
    int err = temper_queue_open_redis(url, NULL, &q, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    struct temper_session *s = NULL;
    err = cli_session_open(&s, device, &limits, tasks, no_store, (int)jobs, msg, sizeof(msg));
    if (err) {
        q->ops->close(q);
        return cli_error(err, msg);
    }
    const char *dev_id = json_string_value(json_object_get(temper_session_device_info(s), "id"));
    if (!device && cli_device_in_process(temper_session_device_info(s))) {
        /* The default device runs kernels inside the worker (PoCL on the CPU): served only when named. */
        snprintf(msg, sizeof(msg),
                 "the default device here, %s, runs kernels inside temper's own process, where a hostile kernel "
                 "can skew its own times, so the gym serves it only when named: --device %s",
                 dev_id ? dev_id : "opencl:0", dev_id ? dev_id : "opencl:0");
        temper_session_close(s);
        q->ops->close(q);
        return cli_error(TEMPER_ENODEVICE, msg);
    }
    char consumer[129], host[64] = "host";
    if (name) {
        snprintf(consumer, sizeof(consumer), "%s", name);
    } else {
        gethostname(host, sizeof(host) - 1);
        host[sizeof(host) - 1] = 0;
        snprintf(consumer, sizeof(consumer), "%s:%ld:%s", host, (long)getpid(), dev_id ? dev_id : "device");
    }

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);

    struct temper_consumer_config cc = {0};
    cc.queue = q;
    cc.session = s;
    cc.consumer = consumer;
    cc.device = dev_id ? dev_id : (device ? device : "");
    cc.in_flight = (int)in_flight;
    cc.stop = &stop_flag;
    cc.tasks_dir = tasks;
    struct temper_consumer_counts *counts = calloc(1, sizeof(*counts));
    if (!counts) {
        temper_session_close(s);
        q->ops->close(q);
        return cli_error(TEMPER_ENOMEM, "out of memory");
    }
    fprintf(stderr, "temper worker: %s@%s takes jobs on %s\n", consumer, temper_consumer_instance(), cc.device);
    err = temper_consumer_run(&cc, counts, msg, sizeof(msg));
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
