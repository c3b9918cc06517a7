/* cmd_tune.c: `temper tune CANDIDATE`: search a candidate's knobs (and the compiler's controls)
 * for the fastest correct configuration on a device, and `temper best TASK`. */
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "temper/result.h"
#include "util/option.h"
#include "search/tune.h"
#include "util/util.h"

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper tune CANDIDATE [--strategy S] [--budget N|--time T] [--device D] [--out FILE]\n\n"
            "Finds the fastest configuration of a candidate's knobs (its @temper param lines) and, with\n"
            "--compiler-knobs (the default), of the compiler's controls, that passes every check (CUDA:\n"
            "register cap, fast math, ptxas's default load and store cache operators; OpenCL: fast\n"
            "relaxed math, mad). Every evaluation is recorded in the store as it completes; a\n"
            "configuration evaluated before on the device is taken from the store, not run again. The\n"
            "best few are re-timed in full.\n\n"
            "  --strategy S          search strategy (default %s):\n",
            temper_strategies()[0]->name);
    for (int i = 0; temper_strategies()[i]; i++)
        fprintf(out, "                          %-11s %s\n", temper_strategies()[i]->name,
                temper_strategies()[i]->summary);
    fprintf(out,
            "  --budget N            evaluations at most (default: 40, or the whole space if smaller); a\n"
            "                        configuration whose compiled code is that of one evaluated before takes\n"
            "                        its result and is not counted\n"
            "  --time T              seconds at most\n"
            "  --device D            cuda[:N] or opencl[:N]\n"
            "  --out FILE            write the best kernel with its knobs fixed, a plain candidate\n"
            "  --seed N              the strategy's seed (default 1)\n"
            "  --resume              continue this candidate's last unfinished tune on the device\n"
            "  --compiler-knobs      search the compiler's controls with the knobs (the default)\n"
            "  --no-compiler-knobs   search the candidate's knobs only\n"
            "  --retime K            re-time the K best in full (default 3)\n"
            "  --screen-budget S     timing budget of a screening evaluation (default 0.3 s)\n"
            "  --full-budget S       timing budget of a re-timing (default 2 s)\n"
            "  --batch N             configurations per batch (default: one per core)\n"
            "  --tasks DIR           where tasks are looked up\n"
            "  --json                print the summary as one JSON object\n\n"
            "Each evaluation prints one progress line on stderr; a failed one's says why (cut to fit).\n"
            "When none passed, the summary lists each distinct failure, how many configurations it was and\n"
            "a compile error's first compiler-log lines (--json: \"failures\"). Ctrl-C stops the tune: it\n"
            "prints what it has (the best so far, not re-timed) and the command that resumes it.\n\n"
            "exit status: 0 a best configuration found, 1 none passed every check, 2 bad usage or input,\n"
            "3 no usable device, 4 the store failed (a write failed, or the store is damaged; the message\n"
            "names the file; what was stored is kept, and --resume continues the run), 130 stopped by Ctrl-C\n");
}

#define SHOWN_FAILURES 5 /* distinct failures the text summary prints (--json has them all) */

/* Why the configurations failed, when none passed: each distinct verdict and message with how
 * many configurations it was, and a compile error's first compiler-log lines. */
static void print_failures(json_t *failures)
{
    struct temper_buf b;
    temper_buf_init(&b, 1 << 20);
    if (!temper_tune_failures_text(failures, SHOWN_FAILURES, "failed     ", "           ", "--json", &b) && b.data)
        fputs(b.data, stdout);
    temper_buf_free(&b);
}

/* The best point's timing, read from its result (the point's "timing" is a copy of that result's
 * first timing) into *r, which the caller frees. The result is read as stored: a tune's points mix
 * results it produced with ones the store held. No best, or an untimed one, reads as all nulls,
 * which print as 0 as they always did. */
static const struct temper_result_timing *best_timing(json_t *best, struct temper_result *r)
{
    static const struct temper_result_timing untimed;
    const struct temper_result_timing *t = NULL;
    if (!temper_result_from_stored(json_object_get(best, "result"), r))
        t = temper_result_first_timing(r);
    return t ? t : &untimed;
}

static void print_summary(json_t *s)
{
    json_t *best = json_object_get(s, "best");
    struct temper_result r;
    const struct temper_result_timing *t = best_timing(best, &r);
    printf("tune       %s on %s (strategy %s; %lld valid configurations of %.0f)\n",
           json_string_value(json_object_get(s, "candidate")), json_string_value(json_object_get(s, "device")),
           json_string_value(json_object_get(s, "strategy")),
           (long long)json_integer_value(json_object_get(s, "valid_configurations")),
           json_number_value(json_object_get(s, "space_size")));
    if (!best) {
        printf("best       none: no configuration passed every check\n");
        print_failures(json_object_get(s, "failures"));
    } else {
        printf("best       %s\n", json_string_value(json_object_get(best, "config")));
        printf("time       %.4g ms (spread %.1f%%, %lld samples); baseline %.4g ms: %.2fx", t->median_ms.v,
               100 * t->spread.v, (long long)t->samples.v, t->baseline_median_ms.v, t->speedup.v);
        if (t->expert_median_ms.set)
            printf("; expert %.4g ms: %.2fx", t->expert_median_ms.v, t->speedup_vs_expert.v);
        if (t->roofline_share.set)
            printf("; %.1f%% of the roofline", 100 * t->roofline_share.v);
        printf("\n");
        if (t->warning)
            printf("warning    the timing: %s\n", t->warning);
    }
    long long evaluations = (long long)json_integer_value(json_object_get(s, "evaluations"));
    printf("search     %lld evaluation%s (%lld from the store", evaluations, evaluations == 1 ? "" : "s",
           (long long)json_integer_value(json_object_get(s, "from_store")));
    if (json_integer_value(json_object_get(s, "same_code")))
        printf(", %lld with the code of an earlier one, not run again",
               (long long)json_integer_value(json_object_get(s, "same_code")));
    /* best_found_at: the evaluation that made the best best, as numbered in the progress lines; past
     * the screening evaluations, the re-timing that won */
    long long found_at = (long long)json_integer_value(json_object_get(s, "best_found_at"));
    printf(") in %.1f s", json_number_value(json_object_get(s, "seconds")));
    if (best && found_at > 0)
        printf("; best found at %lld%s, within 5%% of it at %lld", found_at,
               found_at > evaluations ? " (its re-timing)" : "",
               (long long)json_integer_value(json_object_get(s, "within_5pct_at")));
    const char *v;
    json_t *n;
    json_object_foreach(json_object_get(s, "by_verdict"), v, n)
        printf("%s %lld %s", strcmp(v, "correct") ? "," : ";", (long long)json_integer_value(n), v);
    /* The screening samples' best so far, then, where re-timings chose the best, its re-timed time:
     * the line ends at the time the header gives. */
    printf("\nconverged  best so far (screening):");
    json_t *h = json_object_get(s, "history");
    size_t len = json_array_size(h), step = len > 16 ? len / 16 : 1;
    for (size_t i = 0; i < len; i += step) {
        json_t *x = json_array_get(h, i);
        printf(json_is_number(x) ? " %.3g" : " -", json_number_value(x));
    }
    if (best && found_at > evaluations)
        printf("; re-timed: %.3g", t->median_ms.v);
    printf("\n");
    temper_result_free(&r);
}

/* One progress line per evaluation, on stderr, whether or not it is a terminal. */
static void tune_progress(void *user, const struct temper_session_event *ev)
{
    (void)user;
    if (ev->kind != TEMPER_SESSION_TUNE) {
        fprintf(stderr, "temper: %s%s\n", ev->kind == TEMPER_SESSION_WARNING ? "warning: " : "", ev->message);
        return;
    }
    const struct temper_tune_event *t = ev->tune;
    char head[1024], tail[128], best_text[32] = "none yet";
    if (!isinf(t->best_ms))
        snprintf(best_text, sizeof(best_text), "%.4g ms", t->best_ms);
    int head_len = snprintf(head, sizeof(head), "tune %3d%s %s: %s", t->index, t->retime ? " re-time" : "",
                            t->config[0] ? t->config : "(defaults)", t->verdict);
    int tail_len = snprintf(tail, sizeof(tail), "%s; best %s",
                            t->from_store ? " (from the store)" : t->same_code ? " (an earlier one's code)" : "",
                            best_text);
    if (!isnan(t->time_ms)) {
        fprintf(stderr, "%s %.4g ms%s\n", head, t->time_ms, tail);
    } else if (t->why[0]) {
        /* A failure says why, cut to fit a terminal's width (160 columns when it is no terminal). */
        struct winsize ws;
        int columns = isatty(STDERR_FILENO) && !ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) && ws.ws_col ? ws.ws_col : 160;
        int room = columns - 1 - head_len - tail_len - 3; /* " (" and ")" */
        room = room < 40 ? 40 : room;
        int len = (int)strlen(t->why);
        fprintf(stderr, "%s (%.*s%s)%s\n", head, len > room ? room - 3 : len, t->why, len > room ? "..." : "", tail);
    } else {
        fprintf(stderr, "%s%s\n", head, tail);
    }
    fflush(stderr);
}

/* Ctrl-C: a thread waits for SIGINT (blocked in every other thread, so the library never sees
 * it) and stops the tune, which then ends its step. */
struct interrupt {
    pthread_mutex_t lock;           /* what follows */
    struct temper_session_tune *t;  /* the tune to stop, NULL when none runs */
    int interrupted;                /* 1 once Ctrl-C came */
    int done;                       /* 1: the watcher ends without stopping anything */
};

static void *interrupt_main(void *arg)
{
    struct interrupt *in = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    int sig = 0;
    sigwait(&set, &sig);
    pthread_mutex_lock(&in->lock);
    struct temper_session_tune *t = in->done ? NULL : in->t;
    in->interrupted = !in->done;
    pthread_mutex_unlock(&in->lock);
    if (t)
        temper_session_tune_stop(t);
    return NULL;
}

/* Says how the interrupted tune stands and how to resume it: the command as it was given (this
 * program's path, every option, --out included), with --resume. */
static void print_interrupted(json_t *summary, int argc, char **argv)
{
    json_t *best = json_object_get(summary, "best");
    long long evaluations = (long long)json_integer_value(json_object_get(summary, "evaluations"));
    fprintf(stderr, "temper: tune interrupted after %lld evaluation%s\n", evaluations, evaluations == 1 ? "" : "s");
    if (best) {
        struct temper_result r;
        fprintf(stderr, "temper: best so far: %s, %.4g ms\n", json_string_value(json_object_get(best, "config")),
                best_timing(best, &r)->median_ms.v);
        temper_result_free(&r);
    } else {
        fprintf(stderr, "temper: no configuration has passed every check yet\n");
    }
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    self[len > 0 ? len : 0] = 0;
    fprintf(stderr, "temper: resume with: %s tune", len > 0 ? self : "temper");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--resume"))
            continue;
        int plain = argv[i][0] && !strpbrk(argv[i], " \t'\"\\$`*?");
        fprintf(stderr, plain ? " %s" : " '%s'", argv[i]);
    }
    fprintf(stderr, " --resume\n");
}

/* The command line of one tune, as given. */
struct tune_options {
    struct temper_tune_request req; /* the tune's request (path: the candidate) */
    const char *device;             /* --device, or NULL: the default */
    const char *out;                /* --out FILE, or NULL */
    int json;                       /* --json */
};

static const struct option tune_opts[] = {
    {"strategy", required_argument, 0, 's'},   {"budget", required_argument, 0, 'b'},
    {"time", required_argument, 0, 'T'},       {"device", required_argument, 0, 'd'},
    {"out", required_argument, 0, 'o'},        {"seed", required_argument, 0, 'S'},
    {"resume", no_argument, 0, 'r'},           {"no-compiler-knobs", no_argument, 0, 'K'},
    {"compiler-knobs", no_argument, 0, 'k'},   {"retime", required_argument, 0, 'R'},
    {"screen-budget", required_argument, 0, 'c'}, {"full-budget", required_argument, 0, 'f'},
    {"batch", required_argument, 0, 'B'},      {"tasks", required_argument, 0, 't'},
    {"json", no_argument, 0, 'j'},             {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

/* Reads the options and the candidate into o, the defaults first. Returns CLI_CONTINUE, or the
 * exit status for --help, an unknown option, a bad value or a missing candidate (said on stderr). */
static int parse_tune_options(int argc, char **argv, struct tune_options *o)
{
    memset(o, 0, sizeof(*o));
    struct temper_tune_request *req = &o->req;
    req->compiler_knobs = 1;
    req->seed = 1;
    int c, budget_given = 0;
    char optmsg[256];
    int64_t seed = 1;
    while ((c = getopt_long(argc, argv, "s:b:d:o:h", tune_opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 's':
            req->strategy = optarg;
            if (!temper_strategy(optarg)) {
                fprintf(stderr, "temper: unknown strategy '%s' (see temper tune --help)\n", optarg);
                return CLI_USAGE;
            }
            break;
        case 'b':
            bad = temper_parse_int_option("--budget", optarg, 1, 1000000, &req->budget, optmsg, sizeof(optmsg));
            budget_given = 1;
            break;
        case 'T':
            bad = temper_parse_double_option("--time", optarg, 0.1, 1e7, &req->time_s, optmsg, sizeof(optmsg));
            break;
        case 'd': o->device = optarg; break;
        case 'o': o->out = optarg; break;
        case 'S':
            bad = temper_parse_i64_option("--seed", optarg, 0, INT64_MAX, &seed, optmsg, sizeof(optmsg));
            req->seed = (uint64_t)seed;
            break;
        case 'r': req->resume = 1; break;
        case 'K': req->compiler_knobs = 0; break;
        case 'k': req->compiler_knobs = 1; break;
        case 'R': bad = temper_parse_int_option("--retime", optarg, 1, 32, &req->retime, optmsg, sizeof(optmsg)); break;
        case 'c':
            bad = temper_parse_double_option("--screen-budget", optarg, 0.01, 3600, &req->screen_budget_s, optmsg,
                                             sizeof(optmsg));
            break;
        case 'f':
            bad = temper_parse_double_option("--full-budget", optarg, 0.01, 3600, &req->full_budget_s, optmsg,
                                             sizeof(optmsg));
            break;
        case 'B': bad = temper_parse_int_option("--batch", optarg, 2, 32, &req->batch, optmsg, sizeof(optmsg)); break;
        case 't': req->tasks_dir = optarg; break;
        case 'j': o->json = 1; break;
        case 'h':
        default: return cli_help_exit(help, c == 'h');
        }
        if (bad)
            return cli_usage_error(optmsg);
    }
    if (optind + 1 != argc) {
        help(stderr);
        return CLI_USAGE;
    }
    if (!budget_given && req->time_s <= 0)
        req->budget = 40;
    req->path = argv[optind];
    return CLI_CONTINUE;
}

/* Runs the tune step by step with a thread watching for Ctrl-C, which stops it after its step.
 * Returns 0 with *summary (caller frees) and *interrupted set, or the error (msg filled). */
static int run_tune(const struct tune_options *o, json_t **summary, int *interrupted, char *msg, size_t msg_size)
{
    /* SIGINT is blocked before any thread starts, so every thread (and worker) inherits the mask and
     * only the watcher takes it. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct interrupt in = {PTHREAD_MUTEX_INITIALIZER, NULL, 0, 0};
    pthread_t watcher;
    int watching = !pthread_create(&watcher, NULL, interrupt_main, &in);
    struct temper_session *session = NULL;
    struct temper_session_tune *tune = NULL;
    int err = cli_session_open(&session, o->device, NULL, o->req.tasks_dir, 0, 0, msg, msg_size);
    if (!err)
        err = temper_session_tune_begin(session, &o->req, tune_progress, NULL, &tune, msg, msg_size);
    if (!err) {
        pthread_mutex_lock(&in.lock);
        in.t = tune;
        if (in.interrupted)
            temper_session_tune_stop(tune);
        pthread_mutex_unlock(&in.lock);
        int more;
        while ((more = temper_session_tune_step(tune, msg, msg_size)) > 0)
            ;
        pthread_mutex_lock(&in.lock);
        in.t = NULL;
        pthread_mutex_unlock(&in.lock);
        err = temper_session_tune_finish(tune, summary, msg, msg_size);
        if (more < 0 && !err)
            err = more;
    }
    pthread_mutex_lock(&in.lock);
    *interrupted = in.interrupted;
    in.done = 1;
    pthread_mutex_unlock(&in.lock);
    if (watching) {
        pthread_kill(watcher, SIGINT);
        pthread_join(watcher, NULL);
    }
    temper_session_close(session);
    return err;
}

/* Writes the candidate at path to out with best's knobs and flags fixed. */
static int write_tuned(const char *path, json_t *best, const char *out, char *msg, size_t msg_size)
{
    struct temper_candidate cand;
    int err = temper_candidate_load(path, &cand, msg, msg_size);
    if (!err)
        err = temper_tune_write_fixed(&cand, json_object_get(best, "knobs"),
                                      json_string_value(json_object_get(best, "flags")), out, msg, msg_size);
    if (!err)
        temper_candidate_free(&cand);
    return err;
}

/* Prints the summary, as JSON with --json. */
static void print_tune(const struct tune_options *o, json_t *summary)
{
    if (o->json) {
        json_dumpf(summary, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        print_summary(summary);
    }
}

int cmd_tune(int argc, char **argv)
{
    struct tune_options o;
    int status = parse_tune_options(argc, argv, &o);
    if (status != CLI_CONTINUE)
        return status;
    char msg[4096];
    json_t *summary = NULL;
    int interrupted = 0;
    int err = run_tune(&o, &summary, &interrupted, msg, sizeof(msg));
    if (err) {
        json_decref(summary);
        return cli_error(err, msg);
    }
    if (interrupted) {
        print_tune(&o, summary);
        print_interrupted(summary, argc, argv);
        json_decref(summary);
        return CLI_INTERRUPTED;
    }
    json_t *best = json_object_get(summary, "best");
    if (o.out && best) {
        err = write_tuned(o.req.path, best, o.out, msg, sizeof(msg));
        if (err) {
            json_decref(summary);
            return cli_error(err, msg);
        }
        json_object_set_new(summary, "written", json_string(o.out));
    }
    print_tune(&o, summary);
    if (!o.json && o.out && best)
        printf("written    %s (temper eval %s checks it again)\n", o.out, o.out);
    json_decref(summary);
    return best ? CLI_OK : CLI_NOT_OK;
}

static void best_help(FILE *out)
{
    fprintf(out, "usage: temper best TASK [--device D] [--out FILE] [--json]\n\n"
                 "Prints the fastest correct kernel known for a task on a device (cuda:0, opencl:0; default:\n"
                 "any), from the store, with its knobs, time and speedups; --out writes its source with the\n"
                 "knobs fixed.\n\n"
                 "The best is the fastest configuration (source, compiler options, device) whose latest\n"
                 "timed evaluation is correct: each configuration counts with its latest evaluation of any\n"
                 "verdict, so a kernel found wrong (or timing out) in a later run is not served, however\n"
                 "fast it was before; a later correct run without a time (--no-timing) keeps its timing.\n"
                 "Only results judged against the task's current content (task.json, reference and\n"
                 "baselines) count.\n\n"
                 "exit status: 0 found, 1 no correct timed kernel for the task in the store, 2 bad usage or\n"
                 "an unknown task, 3 no such device, 4 the store is damaged\n");
}

/* The store's key of device ("cuda:0"), asked of the device itself. */
static int best_device_key(const char *device, char *key, size_t key_size, char *msg, size_t msg_size)
{
    struct temper_session *session = NULL;
    int err = cli_session_open(&session, device, NULL, NULL, 1, 0, msg, msg_size);
    if (!err)
        temper_store_device_key(temper_session_device_info(session), key, key_size);
    temper_session_close(session);
    return err;
}

/* Writes the best kernel's source (r, source: temper_store_best's) to out with its knobs and
 * its compiler flags fixed. */
static int write_best(const struct temper_result *r, const char *source, const char *out, char *msg, size_t msg_size)
{
    struct temper_candidate cand;
    const char *path = r->candidate;
    int err = temper_candidate_parse(path ? path : out, source, strlen(source), &cand, msg, msg_size);
    if (err)
        return err;
    const char *options = r->options;
    /* flags beyond the -D knob definitions and the candidate's own flags */
    const char *extra = "";
    if (options && cand.flags[0] && strstr(options, cand.flags))
        extra = strstr(options, cand.flags) + strlen(cand.flags);
    else if (options) {
        const char *p = options;
        while (!strncmp(p, "-D", 2) && (p = strchr(p, ' ')))
            p++;
        extra = p ? p : "";
    }
    while (*extra == ' ')
        extra++;
    err = temper_tune_write_fixed(&cand, r->knobs, extra, out, msg, msg_size);
    temper_candidate_free(&cand);
    return err;
}

/* Prints the best kernel of task as text; a null prints as 0 (or "(null)"), as it always did. */
static void print_best(const struct temper_result *r, const char *task, const char *out)
{
    static const struct temper_result_timing untimed;
    const struct temper_result_timing *t = temper_result_first_timing(r) ?: &untimed;
    printf("task       %s\n", task);
    printf("kernel     %s (source %s)\n", r->candidate, r->source_hash);
    printf("device     %s\n", r->device);
    printf("options    %s\n", r->options);
    printf("time       %.4g ms at %s (spread %.1f%%, %lld samples); baseline %.4g ms: %.2fx", t->median_ms.v, t->shape,
           100 * t->spread.v, (long long)t->samples.v, t->baseline_median_ms.v, t->speedup.v);
    if (t->roofline_share.set)
        printf("; %.1f%% of the roofline", 100 * t->roofline_share.v);
    printf("\n");
    if (t->warning)
        printf("warning    the timing: %s\n", t->warning);
    if (out)
        printf("written    %s\n", out);
}

int cmd_best(int argc, char **argv)
{
    static const struct option opts[] = {{"device", required_argument, 0, 'd'}, {"out", required_argument, 0, 'o'},
                                         {"json", no_argument, 0, 'j'},          {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *device = NULL, *out = NULL;
    int json = 0, c;
    while ((c = getopt_long(argc, argv, "d:o:h", opts, NULL)) != -1) {
        if (c == 'd')
            device = optarg;
        else if (c == 'o')
            out = optarg;
        else if (c == 'j')
            json = 1;
        else
            return cli_help_exit(best_help, c == 'h');
    }
    if (optind + 1 != argc) {
        fprintf(stderr, "usage: temper best TASK [--device D] [--out FILE] [--json]\n");
        return CLI_USAGE;
    }
    char msg[2048], task_hash[17], device_key[1024];
    /* Results count under the task's current content and the device's identity. */
    int err = temper_task_content_hash_named(temper_tasks_root(NULL), argv[optind], task_hash, msg, sizeof(msg));
    if (!err && device) /* "cuda:0" names a device here; its identity is asked of it */
        err = best_device_key(device, device_key, sizeof(device_key), msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    struct temper_store *store = NULL;
    char *source = NULL;
    json_t *r = NULL;
    err = cli_store_open_existing(&store, msg, sizeof(msg)); /* none yet: nothing found (1), none made */
    if (!err)
        err = temper_store_best(store, argv[optind], task_hash, device ? device_key : NULL, &r, &source, msg,
                                sizeof(msg));
    temper_store_close(store);
    if (err == TEMPER_ENOTFOUND) {
        fprintf(stderr, "temper: %s\n", msg);
        return CLI_NOT_OK;
    }
    /* The best comes from the store: it is read as stored, once. */
    struct temper_result best = {0};
    if (!err && temper_result_from_stored(r, &best))
        err = temper_fail(msg, sizeof(msg), TEMPER_ENOMEM, "out of memory reading the best result");
    if (!err && out && source)
        err = write_best(&best, source, out, msg, sizeof(msg));
    if (!err && json) {
        json_dumpf(r, stdout, JSON_INDENT(2));
        printf("\n");
    } else if (!err) {
        print_best(&best, argv[optind], out);
    }
    temper_result_free(&best);
    free(source);
    json_decref(r);
    return err ? cli_error(err, msg) : CLI_OK;
}
