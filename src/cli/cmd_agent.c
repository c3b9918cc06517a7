/* cmd_agent.c: `temper agent TASK`: a language model writes kernels for a task, judged, tuned
 * and recorded by temper (src/agent/agent.h, docs/agent.md); `--dry-run` prints the prompts,
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
#include "temper/result.h"
#include "agent/knowledge.h"
#include "agent/agent.h"
#include "temper/error.h"
#include "util/option.h"
#include "util/util.h"

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

/* Shows the proposal and its verdict. The result is the session's, in the one form: it is read
 * strictly (were it not, a bug of the session's, the reader's message stands for its own). */
static void show_proposal(const char *source, json_t *result)
{
    char msg[1024];
    struct temper_result r;
    const char *message = temper_result_from_json(result, &r, msg, sizeof(msg)) ? msg : r.message;
    const char *verdict = r.verdict;
    fprintf(stderr, "---- proposal ----\n%s%s---- verdict: %s%s%s ----\n", source,
            *source && source[strlen(source) - 1] == '\n' ? "" : "\n", verdict ? verdict : "?", message ? ": " : "",
            message ? message : "");
    temper_result_free(&r);
}

/* The person's review, on standard input: one answer per line. */
static void review(void *user, const char *source, json_t *result, struct temper_agent_review *rv)
{
    (void)user;
    show_proposal(source, result);
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

enum {
    O_ENDPOINT = 256, O_MODEL, O_API, O_KEYENV, O_TEMP, O_MAXTOK, O_TOKPARAM, O_TIMEOUT, O_RETRIES, O_BACKOFF,
    O_FROM, O_LANG, O_BUDGET, O_SAMPLES, O_ISLANDS, O_DEBUG, O_TUNE, O_TARGET, O_PLATEAU, O_MAXTOTAL, O_MAXCOST,
    O_PRICEIN, O_PRICEOUT, O_NOTIMING, O_TIMEBUDGET, O_CONSTRAINT, O_KNOWLEDGE, O_SEED, O_DEVICE, O_TASKS, O_OUT,
    O_JSON, O_DRY, O_REPLAY, O_INTERACTIVE, O_ISLANDSIZE, O_HISTORY, O_ERRCHARS, O_PROFILE, O_HELP
};

static const struct option agent_opts[] = {
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
    {"history", required_argument, 0, O_HISTORY}, {"profile", no_argument, 0, O_PROFILE},
    {"error-chars", required_argument, 0, O_ERRCHARS}, {"help", no_argument, 0, O_HELP},
    {0, 0, 0, 0}};

/* What an option parser returns for an option that is not one of its own. */
#define NOT_MINE 1

/* The command line of one agent run. The configuration points into constraints: the struct is
 * not copied once parsed. */
struct agent_options {
    struct temper_agent_config cfg; /* what temper_agent_run is given */
    const char *out;                /* --out FILE, or NULL */
    const char *constraints[65];    /* the --constraint texts, NULL after the last */
    int nconstraints;               /* how many */
    int json;                       /* --json */
    int tune_given;                 /* --tune-budget was given (0 then means none) */
};

/* The options of the model's endpoint and its calls: 0, an error (msg filled) or NOT_MINE. */
static int parse_chat_option(struct temper_chat_config *chat, int c, const char *arg, char *msg, size_t msg_size)
{
    switch (c) {
    case O_ENDPOINT: chat->endpoint = arg; return 0;
    case O_MODEL: chat->model = arg; return 0;
    case O_API: {
        int api = temper_chat_api_parse(arg);
        if (api < 0)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "--api %s: not openai or anthropic", arg);
        chat->api = (enum temper_chat_api)api;
        return 0;
    }
    case O_KEYENV: chat->key_env = arg; return 0;
    case O_TEMP: return temper_parse_double_option("--temperature", arg, 0, 2, &chat->temperature, msg, msg_size);
    case O_MAXTOK: return temper_parse_int_option("--max-tokens", arg, 1, 1 << 24, &chat->max_tokens, msg, msg_size);
    case O_TOKPARAM:
        if (!strcmp(arg, "auto"))
            chat->token_param = TEMPER_CHAT_TOKENS_AUTO;
        else if (!strcmp(arg, "max_tokens"))
            chat->token_param = TEMPER_CHAT_TOKENS_MAX;
        else if (!strcmp(arg, "max_completion_tokens"))
            chat->token_param = TEMPER_CHAT_TOKENS_COMPLETION;
        else
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "--token-param %s: not auto, max_tokens or max_completion_tokens", arg);
        return 0;
    case O_TIMEOUT: return temper_parse_double_option("--timeout", arg, 0.001, 86400, &chat->timeout_s, msg, msg_size);
    case O_RETRIES: return temper_parse_int_option("--retries", arg, 0, 100, &chat->retries, msg, msg_size);
    case O_BACKOFF: return temper_parse_double_option("--backoff", arg, 0.001, 3600, &chat->backoff_s, msg, msg_size);
    default: return NOT_MINE;
    }
}

/* The options of the search: its budget, population, stops and costs. 0, an error (msg filled)
 * or NOT_MINE. */
static int parse_search_option(struct temper_agent_config *cfg, int c, const char *arg, char *msg, size_t msg_size)
{
    int64_t i64 = 0;
    int bad;
    switch (c) {
    case O_BUDGET: return temper_parse_int_option("--budget", arg, 1, 100000, &cfg->budget, msg, msg_size);
    case O_SAMPLES: return temper_parse_int_option("--samples", arg, 1, 64, &cfg->samples, msg, msg_size);
    case O_ISLANDS: return temper_parse_int_option("--islands", arg, 1, 64, &cfg->islands, msg, msg_size);
    case O_ISLANDSIZE: return temper_parse_int_option("--island-size", arg, 1, 64, &cfg->island_size, msg, msg_size);
    case O_HISTORY: return temper_parse_int_option("--history", arg, 1, 100, &cfg->history, msg, msg_size);
    case O_ERRCHARS:
        return temper_parse_int_option("--error-chars", arg, 100, 100000, &cfg->error_chars, msg, msg_size);
    case O_DEBUG: return temper_parse_int_option("--debug-rounds", arg, 0, 16, &cfg->debug_rounds, msg, msg_size);
    case O_TARGET:
        return temper_parse_double_option("--target-share", arg, 0.001, 1, &cfg->target_share, msg, msg_size);
    case O_PLATEAU: return temper_parse_int_option("--plateau", arg, 1, 100000, &cfg->plateau, msg, msg_size);
    case O_MAXTOTAL:
        bad = temper_parse_i64_option("--max-total-tokens", arg, 1, INT64_MAX, &i64, msg, msg_size);
        cfg->max_tokens_total = i64;
        return bad;
    case O_MAXCOST: return temper_parse_double_option("--max-cost", arg, 0, 1e12, &cfg->max_cost, msg, msg_size);
    case O_PRICEIN: return temper_parse_double_option("--price-in", arg, 0, 1e9, &cfg->price_in, msg, msg_size);
    case O_PRICEOUT: return temper_parse_double_option("--price-out", arg, 0, 1e9, &cfg->price_out, msg, msg_size);
    case O_SEED:
        bad = temper_parse_i64_option("--seed", arg, 1, INT64_MAX, &i64, msg, msg_size);
        cfg->seed = (uint64_t)i64;
        return bad;
    default: return NOT_MINE;
    }
}

/* The rest: what to start from, how kernels are judged, where things are, and the modes. 0, an
 * error (msg filled) or NOT_MINE. */
static int parse_run_option(struct agent_options *o, int c, const char *arg, char *msg, size_t msg_size)
{
    struct temper_agent_config *cfg = &o->cfg;
    switch (c) {
    case O_FROM: cfg->from = arg; return 0;
    case O_LANG: cfg->lang = arg; return 0;
    case O_TUNE:
        o->tune_given = 1;
        return temper_parse_int_option("--tune-budget", arg, 0, 100000, &cfg->tune_budget, msg, msg_size);
    case O_NOTIMING: cfg->no_timing = 1; return 0;
    case O_PROFILE: cfg->profile = 1; return 0;
    case O_TIMEBUDGET:
        return temper_parse_double_option("--time-budget", arg, 0.001, 3600, &cfg->time_budget_s, msg, msg_size);
    case O_CONSTRAINT:
        if (o->nconstraints >= 64)
            return temper_fail(msg, msg_size, TEMPER_ERANGE, "--constraint: at most 64");
        o->constraints[o->nconstraints++] = arg;
        return 0;
    case O_KNOWLEDGE: cfg->knowledge_dir = arg; return 0;
    case O_DEVICE: cfg->device = arg; return 0;
    case O_TASKS: cfg->tasks_dir = arg; return 0;
    case O_OUT: o->out = arg; return 0;
    case O_JSON: o->json = 1; return 0;
    case O_DRY: cfg->dry_run = 1; return 0;
    case O_REPLAY: return temper_parse_i64_option("--replay", arg, 1, INT64_MAX, &cfg->replay_of, msg, msg_size);
    case O_INTERACTIVE: cfg->review = review; return 0;
    default: return NOT_MINE;
    }
}

/* Reads the options into o, the defaults first. Returns CLI_CONTINUE, or the exit status for
 * --help, an unknown option or a bad value (said on stderr). */
static int parse_agent_options(int argc, char **argv, struct agent_options *o)
{
    memset(o, 0, sizeof(*o));
    o->cfg.chat.temperature = 0.7;
    o->cfg.chat.retries = -1;
    o->cfg.debug_rounds = -1;
    char msg[4096] = "";
    int c, bad = 0;
    /* getopt still reads the option after a bad one, as it always has, before the loop stops */
    while ((c = getopt_long(argc, argv, "h", agent_opts, NULL)) != -1 && !bad) {
        bad = parse_chat_option(&o->cfg.chat, c, optarg, msg, sizeof(msg));
        if (bad == NOT_MINE)
            bad = parse_search_option(&o->cfg, c, optarg, msg, sizeof(msg));
        if (bad == NOT_MINE)
            bad = parse_run_option(o, c, optarg, msg, sizeof(msg));
        if (bad == NOT_MINE)
            return cli_help_exit(help, c == O_HELP);
    }
    if (bad)
        return cli_error(TEMPER_EINVALID, msg);
    return CLI_CONTINUE;
}

/* Checks the options against each other and the arguments, and finds the guides. Returns
 * CLI_CONTINUE, or the exit status of what is wrong (said on stderr). */
static int check_agent_options(int argc, char **argv, struct agent_options *o)
{
    struct temper_agent_config *cfg = &o->cfg;
    if (o->tune_given && cfg->tune_budget == 0)
        cfg->tune_budget = -1;
    if (cfg->replay_of ? optind != argc : optind + 1 != argc) {
        help(stderr);
        return CLI_USAGE;
    }
    if (!cfg->replay_of)
        cfg->task = argv[optind];
    if (!cfg->replay_of && !cfg->dry_run && (!cfg->chat.endpoint || !cfg->chat.model))
        return cli_error(TEMPER_EINVALID, "give the model's --endpoint URL and --model M (or --dry-run, or --replay RUN)");
    if (cfg->replay_of && cfg->dry_run)
        return cli_error(TEMPER_EINVALID, "--dry-run and --replay do not go together");
    /* The guides are not a must (the store's kernels still are examples), but a folder that is
     * not there is said, not passed over in silence; one named by --knowledge must exist. */
    struct temper_knowledge_config kc = {0};
    kc.dir = cfg->knowledge_dir;
    char where[4096];
    if (!temper_knowledge_dir(&kc, where, sizeof(where))) {
        if (cfg->knowledge_dir)
            return cli_error(TEMPER_ENOTFOUND, "--knowledge: no guides folder at that path");
        fprintf(stderr, "temper: warning: no guides folder at %s: the prompts get no guides (set "
                        "TEMPER_KNOWLEDGE or --knowledge DIR; in a checkout, TEMPER_KNOWLEDGE=$PWD/knowledge)\n",
                where);
    }
    return CLI_CONTINUE;
}

/* Runs the agent with a thread watching for Ctrl-C; as temper_agent_run. */
static int run_agent(struct temper_agent_config *cfg, json_t **summary, char **prompts, char *msg, size_t msg_size)
{
    /* SIGINT is blocked before any thread starts, so that every thread inherits the mask and only
     * the watcher takes it (workers are started with their own). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    struct interrupt in = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    pthread_t watcher;
    int watching = !pthread_create(&watcher, NULL, interrupt_main, &in);
    cfg->interrupted = interrupted;
    cfg->interrupt_user = &in;
    int err = temper_agent_run(cfg, summary, prompts, msg, msg_size);
    pthread_mutex_lock(&in.lock);
    in.done = 1;
    pthread_mutex_unlock(&in.lock);
    if (watching) {
        pthread_kill(watcher, SIGINT);
        pthread_join(watcher, NULL);
    }
    return err;
}

/* Writes the best kernel (--out), prints the summary and returns the exit status; takes
 * summary's reference. */
static int finish_agent(const struct agent_options *o, json_t *summary)
{
    char msg[4096] = "";
    if (o->out) {
        int err = temper_agent_write_best(summary, o->out, msg, sizeof(msg));
        if (err) {
            json_decref(summary);
            return cli_error(err, msg);
        }
        json_object_set_new(summary, "written", json_string(o->out));
    }
    int found = json_is_true(json_object_get(summary, "found_better"));
    if (o->json) {
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
                o->out ? "; written to " : "", o->out ? o->out : "");
    json_decref(summary);
    return stopped ? CLI_INTERRUPTED : found ? CLI_OK : CLI_NOT_OK;
}

int cmd_agent(int argc, char **argv)
{
    struct agent_options o;
    int status = parse_agent_options(argc, argv, &o);
    if (status == CLI_CONTINUE)
        status = check_agent_options(argc, argv, &o);
    if (status != CLI_CONTINUE)
        return status;
    o.cfg.constraints = o.constraints;
    o.cfg.on_line = print_line;
    json_t *summary = NULL;
    char *prompts = NULL;
    char msg[4096] = "";
    int err = run_agent(&o.cfg, &summary, &prompts, msg, sizeof(msg));
    if (err)
        return cli_error(err, msg);
    if (o.cfg.dry_run) {
        fputs(prompts, stdout);
        free(prompts);
        return CLI_OK;
    }
    return finish_agent(&o, summary);
}
