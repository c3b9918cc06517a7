/* cmd_agent.c: `temper agent TASK`: a language model writes kernels for a task, judged, tuned
 * and recorded by temper (include/temper/agent.h, docs/agent.md); `--dry-run` prints the prompts,
 * `--replay RUN` re-evaluates a recorded session's replies, `--interactive` lets a person review
 * each proposal. */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "temper/knowledge.h"
#include "temper/agent.h"
#include "temper/error.h"
#include "temper/option.h"
#include "temper/util.h"

extern char **environ;

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper agent TASK --endpoint URL --model M [--api openai|anthropic] [--key-env NAME]\n"
            "                   [--from CANDIDATE] [--lang cuda|opencl] [--budget N] [--samples K]\n"
            "                   [--device D] [--out FILE] [--json]\n"
            "       temper agent TASK --dry-run [--device D] [--from CANDIDATE]\n"
            "       temper agent --replay RUN [--out FILE] [--json]\n\n"
            "A language model writes kernels for TASK: a planner proposes a strategy, a coder writes it, a\n"
            "debugger repairs a kernel that failed to compile or failed a check from temper's feedback, and a\n"
            "judge names the bottleneck of a correct one and writes a reflection for the next prompts.\n"
            "Correct kernels live in a population of islands kept diverse by their features, from which\n"
            "parents are drawn; their knobs are tuned before they are judged. Every prompt, model call\n"
            "(with its tokens and latency) and kernel is recorded in the store with its lineage.\n\n"
            "  --endpoint URL        the model's base URL (OpenAI API: .../v1; Anthropic: https://api.anthropic.com)\n"
            "  --model M             the model's name\n"
            "  --api A               openai (chat completions; default) or anthropic (Messages API)\n"
            "  --key-env NAME        the environment variable holding the API key (never stored or logged)\n"
            "  --temperature T       sampling temperature (default 0.7)\n"
            "  --max-tokens N        token limit of one reply (default 8192)\n"
            "  --token-param P       auto (default), max_tokens or max_completion_tokens\n"
            "  --timeout S           limit on one HTTP request (default 600 s)\n"
            "  --retries N           retries on 429, 5xx and connection errors (default 4)\n"
            "  --backoff S           base of the exponential backoff with full jitter (default 1 s)\n"
            "  --from CANDIDATE      the kernel to start from (default: the task's baseline)\n"
            "  --lang L              cuda or opencl (default: the device's)\n"
            "  --budget N            kernels the model writes at most, repairs included (default 12)\n"
            "  --samples K           coder replies per plan (default 1)\n"
            "  --islands N           islands of the population (default 2)\n"
            "  --island-size N       kernels an island keeps (default 4)\n"
            "  --history N           recent attempts a prompt shows (default 6)\n"
            "  --error-chars N       characters of compiler output or failed checks a prompt shows (default 1500)\n"
            "  --debug-rounds N      repairs of one failing kernel (default 1)\n"
            "  --tune-budget N       evaluations of the tune of a correct kernel with knobs (default 8; 0: none)\n"
            "  --target-share F      stop when the best reaches this roofline share (default 0.8)\n"
            "  --plateau N           stop after N kernels without a better one (default 6)\n"
            "  --max-total-tokens N  stop past N tokens read and written\n"
            "  --max-cost C          stop past this cost, with --price-in and --price-out (per million tokens)\n"
            "  --no-timing           correctness only: no timing, tuning or judge\n"
            "  --time-budget S       timing budget per bench shape\n"
            "  --profile             CUDA: profile correct kernels with Nsight Compute; prompts carry its metrics\n"
            "  --constraint TEXT     a constraint every prompt carries (repeatable)\n"
            "  --knowledge DIR       the guides retrieved into prompts (default: the installed knowledge/)\n"
            "  --seed N              draws parents (default 1)\n"
            "  --device D            cuda[:N] or opencl[:N]\n"
            "  --tasks DIR           where tasks are looked up\n"
            "  --out FILE            write the best kernel, its tuned knobs fixed\n"
            "  --json                print the summary as one JSON object\n"
            "  --dry-run             print the prompts the first iteration would send; call no model\n"
            "  --replay RUN          re-evaluate agent session RUN's recorded replies, with its settings,\n"
            "                        without an endpoint\n"
            "  --interactive         show each proposal with its verdict: accept, reject, edit ($EDITOR),\n"
            "                        add a constraint, or stop (answers are read from standard input)\n\n"
            "exit status: 0 a correct kernel faster than the starting one was found (with --no-timing: a\n"
            "correct kernel; --dry-run: the prompts were printed), 1 none was, 2 bad usage or input (or an\n"
            "endpoint that never answered), 3 no usable device, 4 the store failed, 130 interrupted by Ctrl-C\n"
            "(the loop stops after the model call or evaluation in progress, and the session is recorded as\n"
            "interrupted with what it found; a second Ctrl-C exits at once)\n");
}

static void print_line(void *user, const char *line)
{
    (void)user;
    fprintf(stderr, "%s\n", line);
}

/* Ctrl-C: a thread waits for SIGINT (blocked in every other thread, so that no model call or
 * evaluation is cut short) and sets the flag the loop polls between steps; a second SIGINT
 * exits at once. */
struct interrupt {
    pthread_mutex_t lock; /* guards what follows */
    int interrupted;      /* 1 once Ctrl-C came */
    int done;             /* 1: the run is over, the watcher ends without a word */
};

static void *interrupt_main(void *arg)
{
    struct interrupt *in = arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    for (;;) {
        int sig = 0;
        sigwait(&set, &sig);
        pthread_mutex_lock(&in->lock);
        int done = in->done, again = in->interrupted;
        in->interrupted = !done;
        pthread_mutex_unlock(&in->lock);
        if (done)
            return NULL;
        if (again) {
            fprintf(stderr, "temper: agent: interrupted again: exiting now (the session stays unfinished in the "
                            "store, with every step recorded so far)\n");
            _exit(CLI_INTERRUPTED);
        }
        fprintf(stderr, "temper: agent: interrupted: stopping after the step in progress (Ctrl-C again to exit "
                        "at once)\n");
    }
}

static int interrupted(void *user)
{
    struct interrupt *in = user;
    pthread_mutex_lock(&in->lock);
    int yes = in->interrupted;
    pthread_mutex_unlock(&in->lock);
    return yes;
}

/* Runs $EDITOR (default vi) on a file. */
static int run_editor(const char *path)
{
    char *argv[] = {"sh", "-c", "${EDITOR:-vi} \"$1\"", "sh", (char *)path, NULL};
    pid_t pid;
    if (posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ))
        return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* The person's review, on standard input: one answer per line. */
static void review(void *user, const char *source, json_t *result, struct temper_agent_review *rv)
{
    (void)user;
    const char *verdict = json_string_value(json_object_get(result, "verdict"));
    const char *message = json_string_value(json_object_get(result, "message"));
    fprintf(stderr, "---- proposal ----\n%s%s---- verdict: %s%s%s ----\n", source,
            *source && source[strlen(source) - 1] == '\n' ? "" : "\n", verdict ? verdict : "?", message ? ": " : "",
            message ? message : "");
    for (;;) {
        fprintf(stderr, "[a]ccept, [r]eject, [e]dit, [c]onstraint TEXT, [s]top? ");
        char line[2048];
        if (!fgets(line, sizeof(line), stdin)) {
            fprintf(stderr, "(end of input: accepted)\n");
            rv->decision = TEMPER_AGENT_ACCEPT;
            return;
        }
        line[strcspn(line, "\r\n")] = 0;
        switch (line[0]) {
        case 'a':
            rv->decision = TEMPER_AGENT_ACCEPT;
            return;
        case 'r':
            rv->decision = TEMPER_AGENT_REJECT;
            return;
        case 's':
            rv->decision = TEMPER_AGENT_STOP;
            return;
        case 'c': {
            /* "c TEXT" or "constraint TEXT" */
            const char *text = strchr(line, ' ');
            if (!text || !text[1]) {
                fprintf(stderr, "a constraint needs its text: c keep shared memory under 48 KB\n");
                continue;
            }
            free(rv->constraint);
            rv->constraint = strdup(text + 1);
            fprintf(stderr, "constraint noted; now accept, reject or edit the proposal\n");
            continue;
        }
        case 'e': {
            char path[] = "/tmp/temper-agent-XXXXXX.kernel";
            int fd = mkstemps(path, 7);
            if (fd < 0) {
                fprintf(stderr, "cannot make a temporary file to edit\n");
                continue;
            }
            close(fd);
            char msg[512];
            char *edited = NULL;
            if (temper_write_file_atomic(path, source, strlen(source), msg, sizeof(msg)) || run_editor(path) ||
                temper_read_file(path, 1u << 20, &edited, NULL, msg, sizeof(msg))) {
                fprintf(stderr, "the edit failed (the editor exited with an error, or the file could not be read)\n");
                unlink(path);
                continue;
            }
            unlink(path);
            rv->decision = TEMPER_AGENT_EDIT;
            rv->edited = edited;
            return;
        }
        default:
            fprintf(stderr, "answer a, r, e, c TEXT or s\n");
        }
    }
}

static void print_summary(json_t *s)
{
    json_t *best = json_object_get(s, "best");
    printf("agent      session %lld, %s on %s: %s\n", (long long)json_integer_value(json_object_get(s, "session_id")),
           json_string_value(json_object_get(s, "task")), json_string_value(json_object_get(s, "device")),
           json_string_value(json_object_get(s, "stop_reason")));
    printf("kernels    %lld written, %lld model calls, %lld tokens read, %lld written\n",
           (long long)json_integer_value(json_object_get(s, "kernels")),
           (long long)json_integer_value(json_object_get(s, "model_calls")),
           (long long)json_integer_value(json_object_get(s, "tokens_in")),
           (long long)json_integer_value(json_object_get(s, "tokens_out")));
    char *outcomes = json_dumps(json_object_get(s, "outcomes"), JSON_COMPACT | JSON_SORT_KEYS);
    printf("outcomes   %s\n", outcomes ? outcomes : "{}");
    free(outcomes);
    json_t *ms = json_object_get(best, "median_ms");
    printf("best       eval %lld by %s%s", (long long)json_integer_value(json_object_get(best, "eval_id")),
           json_string_value(json_object_get(best, "made_by")), json_is_number(ms) ? "" : " (not timed)");
    if (json_is_number(ms))
        printf(", %.4g ms", json_number_value(ms));
    if (json_is_number(json_object_get(best, "speedup")))
        printf(", %.3gx the baseline", json_number_value(json_object_get(best, "speedup")));
    if (json_is_number(json_object_get(best, "roofline_share")))
        printf(", %.1f%% of the roofline", json_number_value(json_object_get(best, "roofline_share")) * 100);
    printf("; %s\n", json_string_value(json_object_get(best, "features")));
    printf("found      %s\n", json_is_true(json_object_get(s, "found_better"))
                                  ? "a correct kernel better than the starting one"
                                  : "no kernel better than the starting one");
}

int cmd_agent(int argc, char **argv)
{
    enum {
        O_ENDPOINT = 256, O_MODEL, O_API, O_KEYENV, O_TEMP, O_MAXTOK, O_TOKPARAM, O_TIMEOUT, O_RETRIES, O_BACKOFF,
        O_FROM, O_LANG, O_BUDGET, O_SAMPLES, O_ISLANDS, O_DEBUG, O_TUNE, O_TARGET, O_PLATEAU, O_MAXTOTAL, O_MAXCOST,
        O_PRICEIN, O_PRICEOUT, O_NOTIMING, O_TIMEBUDGET, O_CONSTRAINT, O_KNOWLEDGE, O_SEED, O_DEVICE, O_TASKS, O_OUT,
        O_JSON, O_DRY, O_REPLAY, O_INTERACTIVE, O_ISLANDSIZE, O_HISTORY, O_ERRCHARS, O_PROFILE, O_HELP
    };
    static const struct option opts[] = {
        {"endpoint", required_argument, 0, O_ENDPOINT}, {"model", required_argument, 0, O_MODEL},
        {"api", required_argument, 0, O_API}, {"key-env", required_argument, 0, O_KEYENV},
        {"temperature", required_argument, 0, O_TEMP}, {"max-tokens", required_argument, 0, O_MAXTOK},
        {"token-param", required_argument, 0, O_TOKPARAM}, {"timeout", required_argument, 0, O_TIMEOUT},
        {"retries", required_argument, 0, O_RETRIES}, {"backoff", required_argument, 0, O_BACKOFF},
        {"from", required_argument, 0, O_FROM}, {"lang", required_argument, 0, O_LANG},
        {"budget", required_argument, 0, O_BUDGET}, {"samples", required_argument, 0, O_SAMPLES},
        {"islands", required_argument, 0, O_ISLANDS}, {"debug-rounds", required_argument, 0, O_DEBUG},
        {"tune-budget", required_argument, 0, O_TUNE}, {"target-share", required_argument, 0, O_TARGET},
        {"plateau", required_argument, 0, O_PLATEAU}, {"max-total-tokens", required_argument, 0, O_MAXTOTAL},
        {"max-cost", required_argument, 0, O_MAXCOST}, {"price-in", required_argument, 0, O_PRICEIN},
        {"price-out", required_argument, 0, O_PRICEOUT}, {"no-timing", no_argument, 0, O_NOTIMING},
        {"time-budget", required_argument, 0, O_TIMEBUDGET}, {"constraint", required_argument, 0, O_CONSTRAINT},
        {"knowledge", required_argument, 0, O_KNOWLEDGE}, {"seed", required_argument, 0, O_SEED},
        {"device", required_argument, 0, O_DEVICE}, {"tasks", required_argument, 0, O_TASKS},
        {"out", required_argument, 0, O_OUT}, {"json", no_argument, 0, O_JSON},
        {"dry-run", no_argument, 0, O_DRY}, {"replay", required_argument, 0, O_REPLAY},
        {"interactive", no_argument, 0, O_INTERACTIVE}, {"island-size", required_argument, 0, O_ISLANDSIZE},
        {"history", required_argument, 0, O_HISTORY}, {"profile", no_argument, 0, O_PROFILE}, {"error-chars", required_argument, 0, O_ERRCHARS},
        {"help", no_argument, 0, O_HELP},
        {0, 0, 0, 0}};
    struct temper_agent_config cfg;
    memset(&cfg, 0, sizeof(cfg));
    cfg.chat.temperature = 0.7;
    cfg.chat.retries = -1;
    cfg.debug_rounds = -1;
    const char *out = NULL, *constraints[65] = {0};
    int json = 0, nconstraints = 0, tune_given = 0;
    char msg[4096] = "";
    int c, bad = 0;
    int64_t i64;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1 && !bad) {
        switch (c) {
        case O_ENDPOINT: cfg.chat.endpoint = optarg; break;
        case O_MODEL: cfg.chat.model = optarg; break;
        case O_API: {
            int api = temper_chat_api_parse(optarg);
            if (api < 0)
                bad = temper_fail(msg, sizeof(msg), TEMPER_EINVALID, "--api %s: not openai or anthropic", optarg);
            else
                cfg.chat.api = (enum temper_chat_api)api;
            break;
        }
        case O_KEYENV: cfg.chat.key_env = optarg; break;
        case O_TEMP: bad = temper_parse_double_option("--temperature", optarg, 0, 2, &cfg.chat.temperature, msg, sizeof(msg)); break;
        case O_MAXTOK: bad = temper_parse_int_option("--max-tokens", optarg, 1, 1 << 24, &cfg.chat.max_tokens, msg, sizeof(msg)); break;
        case O_TOKPARAM:
            if (!strcmp(optarg, "auto"))
                cfg.chat.token_param = TEMPER_CHAT_TOKENS_AUTO;
            else if (!strcmp(optarg, "max_tokens"))
                cfg.chat.token_param = TEMPER_CHAT_TOKENS_MAX;
            else if (!strcmp(optarg, "max_completion_tokens"))
                cfg.chat.token_param = TEMPER_CHAT_TOKENS_COMPLETION;
            else
                bad = temper_fail(msg, sizeof(msg), TEMPER_EINVALID,
                                  "--token-param %s: not auto, max_tokens or max_completion_tokens", optarg);
            break;
        case O_TIMEOUT: bad = temper_parse_double_option("--timeout", optarg, 0.001, 86400, &cfg.chat.timeout_s, msg, sizeof(msg)); break;
        case O_RETRIES: bad = temper_parse_int_option("--retries", optarg, 0, 100, &cfg.chat.retries, msg, sizeof(msg)); break;
        case O_BACKOFF: bad = temper_parse_double_option("--backoff", optarg, 0.001, 3600, &cfg.chat.backoff_s, msg, sizeof(msg)); break;
        case O_FROM: cfg.from = optarg; break;
        case O_LANG: cfg.lang = optarg; break;
        case O_BUDGET: bad = temper_parse_int_option("--budget", optarg, 1, 100000, &cfg.budget, msg, sizeof(msg)); break;
        case O_SAMPLES: bad = temper_parse_int_option("--samples", optarg, 1, 64, &cfg.samples, msg, sizeof(msg)); break;
        case O_ISLANDS: bad = temper_parse_int_option("--islands", optarg, 1, 64, &cfg.islands, msg, sizeof(msg)); break;
        case O_ISLANDSIZE: bad = temper_parse_int_option("--island-size", optarg, 1, 64, &cfg.island_size, msg, sizeof(msg)); break;
        case O_HISTORY: bad = temper_parse_int_option("--history", optarg, 1, 100, &cfg.history, msg, sizeof(msg)); break;
        case O_ERRCHARS: bad = temper_parse_int_option("--error-chars", optarg, 100, 100000, &cfg.error_chars, msg, sizeof(msg)); break;
        case O_DEBUG: bad = temper_parse_int_option("--debug-rounds", optarg, 0, 16, &cfg.debug_rounds, msg, sizeof(msg)); break;
        case O_TUNE:
            bad = temper_parse_int_option("--tune-budget", optarg, 0, 100000, &cfg.tune_budget, msg, sizeof(msg));
            tune_given = 1;
            break;
        case O_TARGET: bad = temper_parse_double_option("--target-share", optarg, 0.001, 1, &cfg.target_share, msg, sizeof(msg)); break;
        case O_PLATEAU: bad = temper_parse_int_option("--plateau", optarg, 1, 100000, &cfg.plateau, msg, sizeof(msg)); break;
        case O_MAXTOTAL:
            bad = temper_parse_i64_option("--max-total-tokens", optarg, 1, INT64_MAX, &i64, msg, sizeof(msg));
            cfg.max_tokens_total = i64;
            break;
        case O_MAXCOST: bad = temper_parse_double_option("--max-cost", optarg, 0, 1e12, &cfg.max_cost, msg, sizeof(msg)); break;
        case O_PRICEIN: bad = temper_parse_double_option("--price-in", optarg, 0, 1e9, &cfg.price_in, msg, sizeof(msg)); break;
        case O_PRICEOUT: bad = temper_parse_double_option("--price-out", optarg, 0, 1e9, &cfg.price_out, msg, sizeof(msg)); break;
        case O_NOTIMING: cfg.no_timing = 1; break;
        case O_PROFILE: cfg.profile = 1; break;
        case O_TIMEBUDGET: bad = temper_parse_double_option("--time-budget", optarg, 0.001, 3600, &cfg.time_budget_s, msg, sizeof(msg)); break;
        case O_CONSTRAINT:
            if (nconstraints >= 64)
                bad = temper_fail(msg, sizeof(msg), TEMPER_ERANGE, "--constraint: at most 64");
            else
                constraints[nconstraints++] = optarg;
            break;
        case O_KNOWLEDGE: cfg.knowledge_dir = optarg; break;
        case O_SEED:
            bad = temper_parse_i64_option("--seed", optarg, 1, INT64_MAX, &i64, msg, sizeof(msg));
            cfg.seed = (uint64_t)i64;
            break;
        case O_DEVICE: cfg.device = optarg; break;
        case O_TASKS: cfg.tasks_dir = optarg; break;
        case O_OUT: out = optarg; break;
        case O_JSON: json = 1; break;
        case O_DRY: cfg.dry_run = 1; break;
        case O_REPLAY:
            bad = temper_parse_i64_option("--replay", optarg, 1, INT64_MAX, &cfg.replay_of, msg, sizeof(msg));
            break;
        case O_INTERACTIVE: cfg.review = review; break;
        case O_HELP:
        default: return cli_help_exit(help, c == O_HELP);
        }
    }
    if (bad)
        return cli_error(TEMPER_EINVALID, msg);
    if (tune_given && cfg.tune_budget == 0)
        cfg.tune_budget = -1;
    if (cfg.replay_of ? optind != argc : optind + 1 != argc) {
        help(stderr);
        return CLI_USAGE;
    }
    if (!cfg.replay_of)
        cfg.task = argv[optind];
    if (!cfg.replay_of && !cfg.dry_run && (!cfg.chat.endpoint || !cfg.chat.model))
        return cli_error(TEMPER_EINVALID, "give the model's --endpoint URL and --model M (or --dry-run, or --replay RUN)");
    if (cfg.replay_of && cfg.dry_run)
        return cli_error(TEMPER_EINVALID, "--dry-run and --replay do not go together");
    {
        /* The guides are not a must (the store's kernels still are examples), but a folder that is
         * not there is said, not passed over in silence; one named by --knowledge must exist. */
        struct temper_knowledge_config kc = {0};
        kc.dir = cfg.knowledge_dir;
        char where[4096];
        if (!temper_knowledge_dir(&kc, where, sizeof(where))) {
            if (cfg.knowledge_dir)
                return cli_error(TEMPER_ENOTFOUND, "--knowledge: no guides folder at that path");
            fprintf(stderr, "temper: warning: no guides folder at %s: the prompts get no guides (set "
                            "TEMPER_KNOWLEDGE or --knowledge DIR; in a checkout, TEMPER_KNOWLEDGE=$PWD/knowledge)\n",
                    where);
        }
    }
    cfg.constraints = constraints;
    cfg.on_line = print_line;
    /* SIGINT is blocked before any thread starts, so that every thread inherits the mask and only
     * the watcher takes it (workers are started with their own). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct interrupt in = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    pthread_t watcher;
    int watching = !pthread_create(&watcher, NULL, interrupt_main, &in);
    cfg.interrupted = interrupted;
    cfg.interrupt_user = &in;
    json_t *summary = NULL;
    char *prompts = NULL;
    int err = temper_agent_run(&cfg, &summary, &prompts, msg, sizeof(msg));
    pthread_mutex_lock(&in.lock);
    in.done = 1;
    pthread_mutex_unlock(&in.lock);
    if (watching) {
        pthread_kill(watcher, SIGINT);
        pthread_join(watcher, NULL);
    }
    if (err)
        return cli_error(err, msg);
    if (cfg.dry_run) {
        fputs(prompts, stdout);
        free(prompts);
        return CLI_OK;
    }
    if (out) {
        err = temper_agent_write_best(summary, out, msg, sizeof(msg));
        if (err) {
            json_decref(summary);
            return cli_error(err, msg);
        }
        json_object_set_new(summary, "written", json_string(out));
    }
    int found = json_is_true(json_object_get(summary, "found_better"));
    if (json) {
        json_dumpf(summary, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("\n");
    } else {
        print_summary(summary);
    }
    int stopped = json_is_true(json_object_get(summary, "interrupted"));
    if (stopped) /* where it stopped, and where it is kept */
        fprintf(stderr, "temper: agent session %lld %s; recorded in the store as interrupted, with its best "
                        "(eval %lld)%s%s\n",
                (long long)json_integer_value(json_object_get(summary, "session_id")),
                json_string_value(json_object_get(summary, "stop_reason")),
                (long long)json_integer_value(json_object_get(json_object_get(summary, "best"), "eval_id")),
                out ? "; written to " : "", out ? out : "");
    json_decref(summary);
    return stopped ? CLI_INTERRUPTED : found ? CLI_OK : CLI_NOT_OK;
}
