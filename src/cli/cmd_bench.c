/* cmd_bench.c: `temper bench`: every candidate of a folder of task folders (the way an agent
 * writes its samples) evaluated through the session, or a stored tune run's results, summed up
 * with the field's metrics per task and for the suite (include/temper/bench.h), stored under an
 * id, printed as a table or JSON; `--compare A B` shows what changed between two stored benches. */
#include <dirent.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "temper/bench.h"
#include "temper/result.h"
#include "util/option.h"
#include "temper/task.h"
#include "util/util.h"

#define BENCH_MAX_DEVICES 4

static void help(FILE *out)
{
    fprintf(out,
            "usage: temper bench --from DIR [--suite L1|L2|L3|all] [--device D ...] [--samples K] [--json]\n"
            "       temper bench --run ID [--samples K] [--json]\n"
            "       temper bench --compare A B [--json]\n"
            "       temper bench --show ID [--json]\n\n"
            "Evaluates every candidate in DIR, which holds one folder per task named by the task (the way an\n"
            "agent writes its samples: any number of .cl and .cu files each), and sums them up: per task the\n"
            "samples, how many are correct, the best speedup over the baseline and over the expert, and the\n"
            "best share of the roofline; for the suite pass@k (k = 1, 5, 10 where a task has k samples),\n"
            "fast_p (p = 0, 0.5, 0.8, 1, 1.5, 2), the geometric-mean speedup of the correct samples, speed\n"
            "against the expert and the share of tasks correct on both backends (docs/bench.md defines each).\n"
            "The bench is stored under the id it prints, with every evaluation. --run sums up a stored tune\n"
            "run's evaluations instead; --compare shows what got better and worse from bench A to bench B;\n"
            "--show prints a stored bench again.\n\n"
            "  --from DIR            the folder of task folders\n"
            "  --run ID              a tune run in the store (`temper tune --json` prints its run_id)\n"
            "  --compare A B         two stored benches\n"
            "  --show ID             a stored bench\n"
            "  --suite L             L1, L2, L3 or all (default): the tasks of that level; folders of other\n"
            "                        levels are passed over\n"
            "  --device D            cuda[:N] or opencl[:N]; repeatable (each candidate runs on the device of\n"
            "                        its language; with both backends, the both-backends share is reported)\n"
            "  --samples K           at most K candidates per task (the first K by name that a device of the\n"
            "                        bench takes)\n"
            "  --no-timing           correctness only (speedups are not measured)\n"
            "  --time-budget S       timing budget per bench shape (default 2 s)\n"
            "  --tasks DIR           where tasks are looked up\n"
            "  --jobs N              compile processes at a time (default: one per core)\n"
            "  --json                print the bench as one JSON object\n\n"
            "exit status: 0 the bench was made (whatever its verdicts), 2 bad usage or input (a missing\n"
            "folder, a folder named after no task, an unknown run or bench), 3 no usable device, 4 the store\n"
            "failed\n");
}

/* What the command line asked for. */
struct bench_args {
    const char *from;         /* --from DIR, or NULL */
    int64_t run;              /* --run ID, or 0 */
    int64_t compare[2];       /* --compare A B, or 0 0 */
    int64_t show;             /* --show ID, or 0 */
    const char *level;        /* "L1", "L2", "L3" or "all" */
    const char *devices[BENCH_MAX_DEVICES]; /* --device values */
    int ndevices;             /* how many */
    int samples;              /* --samples K, 0: all */
    int no_timing;            /* --no-timing */
    double time_budget_s;     /* --time-budget, 0: the default */
    const char *tasks_dir;    /* --tasks */
    int jobs;                 /* --jobs */
    int json;                 /* --json */
};

/* The level a --suite value selects: 1-3, 0 for all, -1 for anything else. */
static int suite_level(const char *suite)
{
    if (!strcmp(suite, "all"))
        return 0;
    if ((suite[0] == 'L' || suite[0] == 'l') && suite[1] >= '1' && suite[1] <= '3' && !suite[2])
        return suite[1] - '0';
    return -1;
}

/* Prints the bench (table or JSON). */
static void print_bench(json_t *bench, int json)
{
    if (json) {
        /* "id" first, for people reading it */
        json_t *ordered = json_pack("{s:O?}", "id", json_object_get(bench, "id"));
        json_object_update(ordered, bench);
        json_dumpf(ordered, stdout, JSON_INDENT(2));
        json_decref(ordered);
        printf("\n");
    } else {
        temper_bench_print(stdout, bench);
    }
}

/* Stores the bench and prints it; returns the exit status. */
static int store_and_print(json_t *bench, const struct bench_args *a, int store_failed)
{
    struct temper_store *store = NULL;
    char msg[2048];
    int64_t same = 0;
    int err = temper_store_open(NULL, &store, msg, sizeof(msg));
    /* The same bench stored before (a run's again, unchanged) is that one: not a second copy. */
    if (!err && !store_failed)
        err = temper_store_bench_find(store, bench, &same, msg, sizeof(msg));
    if (!err && same) {
        json_object_set_new(bench, "id", json_integer(same));
        fprintf(stderr, "temper: this bench is stored already, as bench %lld: not stored again\n", (long long)same);
    } else if (!err) {
        err = temper_store_bench_put(store, bench, NULL, msg, sizeof(msg));
    }
    temper_store_close(store);
    print_bench(bench, a->json);
    if (err)
        return cli_error(err, msg);
    if (store_failed) {
        fprintf(stderr, "temper: %d evaluation%s not stored (the store's message is above); the bench lists %s "
                        "without a store id\n", store_failed, store_failed == 1 ? " was" : "s were",
                store_failed == 1 ? "it" : "them");
        return CLI_STORE;
    }
    return CLI_OK;
}

static int run_compare(const struct bench_args *a)
{
    struct temper_store *store = NULL;
    json_t *b[2] = {NULL, NULL};
    char msg[2048];
    int err = cli_store_open_existing(&store, msg, sizeof(msg)); /* none yet: the id names nothing (2) */
    for (int i = 0; i < 2 && !err; i++)
        err = temper_store_bench_get(store, a->compare[i], &b[i], msg, sizeof(msg));
    temper_store_close(store);
    if (err) {
        json_decref(b[0]);
        return cli_error(err, msg);
    }
    json_t *cmp = temper_bench_compare(b[0], b[1], 0.05);
    if (a->json) {
        json_dumpf(cmp, stdout, JSON_INDENT(2));
        printf("\n");
    } else {
        temper_bench_print_compare(stdout, cmp);
    }
    json_decref(cmp);
    json_decref(b[0]);
    json_decref(b[1]);
    return CLI_OK;
}

static int run_show(const struct bench_args *a)
{
    struct temper_store *store = NULL;
    json_t *bench = NULL;
    char msg[2048];
    int err = cli_store_open_existing(&store, msg, sizeof(msg)); /* none yet: the id names nothing (2) */
    if (!err)
        err = temper_store_bench_get(store, a->show, &bench, msg, sizeof(msg));
    temper_store_close(store);
    if (err)
        return cli_error(err, msg);
    print_bench(bench, a->json);
    json_decref(bench);
    return CLI_OK;
}

/* A task's level by name on the search path, or 0 when it cannot be loaded (msg says why). */
static int task_level(const char *root, const char *name, char *msg, size_t msg_size)
{
    char dir[PATH_MAX];
    if (temper_task_find(root, name, dir, sizeof(dir), msg, msg_size))
        return 0;
    struct temper_task *task = malloc(sizeof(*task));
    int level = task && !temper_task_load(dir, task, msg, msg_size) ? task->level : 0;
    free(task);
    return level;
}

/* Groups a stored result r under its task in by_task (its task's level in levels, its device in
 * devices), unless the task has a->samples results already. The result is read as stored. Returns 0,
 * or TEMPER_ENOMEM. */
static int add_stored(const struct bench_args *a, const char *root, json_t *r, json_t *by_task, json_t *levels,
                      json_t *devices)
{
    struct temper_result one;
    if (temper_result_from_stored(r, &one))
        return TEMPER_ENOMEM;
    const char *task = one.task ?: "";
    const char *device = one.device;
    char msg[2048];
    json_t *list = json_object_get(by_task, task);
    if (!list) {
        json_object_set_new(by_task, task, list = json_array());
        int level = task_level(root, task, msg, sizeof(msg));
        if (level)
            json_object_set_new(levels, task, json_integer(level));
    }
    if (!a->samples || json_array_size(list) < (size_t)a->samples) {
        json_array_append(list, r);
        int seen = 0;
        size_t j;
        json_t *d;
        json_array_foreach(devices, j, d) seen |= device && !strcmp(json_string_value(d), device);
        if (device && !seen)
            json_array_append_new(devices, json_string(device));
    }
    temper_result_free(&one);
    return 0;
}

static int run_stored(const struct bench_args *a)
{
    struct temper_store *store = NULL;
    json_t *results = NULL;
    char msg[2048];
    int err = cli_store_open_existing(&store, msg, sizeof(msg)); /* none yet: the id names nothing (2) */
    if (!err)
        err = temper_store_run_evaluations(store, a->run, &results, msg, sizeof(msg));
    temper_store_close(store);
    if (err)
        return cli_error(err, msg);
    json_t *by_task = json_object(), *levels = json_object(), *devices = json_array();
    const char *root = temper_tasks_root(a->tasks_dir);
    size_t i;
    json_t *r;
    json_array_foreach(results, i, r) {
        if ((err = add_stored(a, root, r, by_task, levels, devices)))
            break;
    }
    json_decref(results);
    json_t *bench = err ? NULL : temper_bench_compute(by_task, levels);
    json_decref(by_task);
    json_decref(levels);
    if (!bench) {
        json_decref(devices);
        return cli_error(TEMPER_ENOMEM, NULL);
    }
    json_object_set_new(bench, "source", json_pack("{s:I}", "run", (json_int_t)a->run));
    json_object_set_new(bench, "level", json_string("all"));
    json_object_set_new(bench, "devices", devices);
    json_object_set_new(bench, "settings", json_pack("{s:o}", "samples", a->samples ? json_integer(a->samples) : json_null()));
    json_object_set_new(bench, "missing_tasks", json_array());
    json_object_set_new(bench, "left_out", json_array());
    int status = store_and_print(bench, a, 0);
    json_decref(bench);
    return status;
}

/* One candidate file to evaluate. */
struct bench_file {
    char path[PATH_MAX];  /* DIR/task/file */
    char task[64];        /* its folder's name */
    int cuda;             /* 1: a .cu file (CUDA), 0: a .cl file (OpenCL) */
    int session;          /* the session (device) it runs on, -1 until assigned */
    int64_t id;           /* its request id there */
};

/* The candidates found under DIR. */
struct bench_plan {
    struct bench_file *files; /* growable */
    int n, cap;               /* used, allocated */
    json_t *levels;           /* task name -> level */
    json_t *left_out;         /* what is not evaluated, with why: [{"path", "why"}] */
};

static int keep_candidate(const struct dirent *e)
{
    size_t n = strlen(e->d_name);
    return e->d_name[0] != '.' && n > 3 && (!strcmp(e->d_name + n - 3, ".cl") || !strcmp(e->d_name + n - 3, ".cu"));
}

static int keep_folder(const struct dirent *e)
{
    return e->d_name[0] != '.';
}

/* Adds a task folder's candidates (.cl and .cu files, by name) to the plan; returns 0 or an exit
 * status. */
static int plan_task(struct bench_plan *p, const char *folder, const char *task)
{
    struct dirent **names = NULL;
    int n = scandir(folder, &names, keep_candidate, alphasort);
    if (n < 0) {
        fprintf(stderr, "temper: %s: cannot read the folder: %m\n", folder);
        return CLI_USAGE;
    }
    int status = 0;
    for (int i = 0; i < n && !status; i++) {
        char path[PATH_MAX];
        if (snprintf(path, sizeof(path), "%s/%s", folder, names[i]->d_name) >= (int)sizeof(path)) {
            fprintf(stderr, "temper: %s/%s: the path is too long\n", folder, names[i]->d_name);
            status = CLI_USAGE;
            break;
        }
        struct stat st;
        if (stat(path, &st) || !S_ISREG(st.st_mode)) {
            json_array_append_new(p->left_out, json_pack("{s:s, s:s}", "path", path, "why", "not a regular file"));
            continue;
        }
        if (p->n == p->cap) {
            int cap = p->cap ? 2 * p->cap : 64;
            struct bench_file *grown = realloc(p->files, (size_t)cap * sizeof(*grown));
            if (!grown) {
                status = cli_error(TEMPER_ENOMEM, NULL);
                break;
            }
            p->files = grown;
            p->cap = cap;
        }
        struct bench_file *f = &p->files[p->n++];
        memcpy(f->path, path, sizeof(f->path));
        if (snprintf(f->task, sizeof(f->task), "%s", task) >= (int)sizeof(f->task))
            f->task[0] = 0; /* not reached: task names are checked (temper_task_name_ok) */
        f->cuda = !strcmp(path + strlen(path) - 3, ".cu");
        f->session = -1;
        f->id = 0;
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return status;
}

/* Gives each planned file the session of its language (langs[i] is session i's), keeping at most
 * --samples per task of those a device takes; the others move to left_out, with why. */
static void plan_assign(struct bench_plan *p, const struct bench_args *a, const char *const *langs, int nsessions)
{
    int kept = 0, taken = 0;
    for (int i = 0; i < p->n; i++) {
        struct bench_file *f = &p->files[i];
        if (i == 0 || strcmp(f->task, p->files[i - 1].task))
            taken = 0;
        int session = -1;
        for (int s = 0; s < nsessions && session < 0; s++)
            if (!strcmp(langs[s], f->cuda ? "cuda" : "opencl"))
                session = s;
        const char *why = session < 0 ? (f->cuda ? "CUDA: no CUDA device in this bench" :
                                                   "OpenCL: no OpenCL device in this bench") :
                          a->samples && taken >= a->samples ? "past --samples" : NULL;
        if (why) {
            json_array_append_new(p->left_out, json_pack("{s:s, s:s}", "path", f->path, "why", why));
            continue;
        }
        taken++;
        f->session = session;
        p->files[kept++] = *f;
    }
    p->n = kept;
}

/* The tasks of a level that have no folder in DIR, collected by add_missing. */
struct missing_list {
    json_t *levels;  /* the tasks that have a folder (borrowed) */
    json_t *missing; /* the names of those that have none (borrowed) */
    int want;        /* the level, 0 for all */
};

/* temper_task_each's callback: a task of the level that has no folder. */
static int add_missing(void *user, const char *dir)
{
    struct missing_list *list = user;
    char level_dir[PATH_MAX];
    const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir;
    temper_dirname(dir, level_dir, sizeof(level_dir));
    const char *level = strrchr(level_dir, '/') ? strrchr(level_dir, '/') + 1 : level_dir;
    int lv = level[0] == 'L' ? atoi(level + 1) : 0;
    if ((!list->want || lv == list->want) && !json_object_get(list->levels, name))
        json_array_append_new(list->missing, json_string(name));
    return 0;
}

/* Reads DIR: every folder must name a task; those of the selected level are planned, and the
 * level's tasks without a folder listed in *missing. Returns 0 or an exit status. */
static int plan_from(struct bench_plan *p, const struct bench_args *a, json_t *missing)
{
    struct stat st;
    if (stat(a->from, &st) || !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "temper: bench --from %s: %s\n", a->from,
                stat(a->from, &st) ? "no such folder" : "not a folder (it should hold one folder per task)");
        return CLI_USAGE;
    }
    struct dirent **names = NULL;
    int n = scandir(a->from, &names, keep_folder, alphasort);
    if (n < 0) {
        fprintf(stderr, "temper: bench --from %s: cannot read the folder: %m\n", a->from);
        return CLI_USAGE;
    }
    const char *root = temper_tasks_root(a->tasks_dir);
    int want = suite_level(a->level), status = 0, folders = 0;
    char msg[2048];
    /* DIR without its trailing slashes, so that the paths stored ("DIR/task/file.cl") have one ("/" is "") */
    int from_len = (int)strlen(a->from);
    while (from_len > 0 && a->from[from_len - 1] == '/')
        from_len--;
    for (int i = 0; i < n && !status; i++) {
        char folder[PATH_MAX];
        if (snprintf(folder, sizeof(folder), "%.*s/%s", from_len, a->from, names[i]->d_name) >= (int)sizeof(folder))
            continue; /* too long to be a task folder */
        if (stat(folder, &st) || !S_ISDIR(st.st_mode))
            continue; /* files beside the task folders (a README, logs) are not samples */
        folders++;
        const char *name = names[i]->d_name;
        int level = temper_task_name_ok(name) ? task_level(root, name, msg, sizeof(msg)) : 0;
        if (!level) {
            fprintf(stderr, "temper: bench --from %s: the folder '%s' is named after no task (%s); each folder "
                            "must be named by its task (`temper tasks` lists them)\n",
                    a->from, name, temper_task_name_ok(name) ? msg : "not a task name");
            status = CLI_USAGE;
            break;
        }
        if (want && level != want)
            continue;
        json_object_set_new(p->levels, name, json_integer(level));
        status = plan_task(p, folder, name);
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (!status && !folders) {
        fprintf(stderr, "temper: bench --from %s: no task folders in it (it should hold one folder per task, named by "
                        "the task, with the candidates inside)\n", a->from);
        status = CLI_USAGE;
    }
    if (!status && !json_object_size(p->levels)) {
        fprintf(stderr, "temper: bench --from %s: no folder of a task of level %s\n", a->from, a->level);
        status = CLI_USAGE;
    }
    /* The level's tasks with no folder: listed, so that a bench of part of a suite says so. */
    struct missing_list list = {p->levels, missing, want};
    if (!status)
        temper_task_each(root, add_missing, &list);
    return status;
}

/* Closes the sessions opened so far. */
static void close_sessions(struct temper_session **sessions, int n)
{
    for (int i = 0; i < n; i++)
        temper_session_close(sessions[i]);
}

/* Says why a result was not evaluated at all (temper_session_result_error). The session's result is
 * in the one form: it is read strictly (were it not, a bug of the session's, the reader says why). */
static void print_unevaluated(json_t *result)
{
    char msg[1024];
    struct temper_result r;
    const char *message = temper_result_from_json(result, &r, msg, sizeof(msg)) ? msg : r.message;
    fprintf(stderr, "temper: %s (counted as a sample that is not correct)\n", message);
    temper_result_free(&r);
}

/* Waits for every planned file's result and groups them by task in by_task; returns how many
 * could not be stored, or -1 (msg filled) when waiting failed. */
static int collect(struct bench_plan *p, struct temper_session **sessions, json_t *by_task, char *msg,
                   size_t msg_size)
{
    int store_failed = 0;
    for (int i = 0; i < p->n; i++) {
        struct bench_file *f = &p->files[i];
        json_t *result = NULL;
        cli_progress("bench: %d of %d candidates evaluated...", i, p->n);
        if (temper_session_wait(sessions[f->session], f->id, &result, msg, msg_size))
            return -1;
        cli_progress_done();
        const char *task_error = temper_session_result_task_error(result);
        if (task_error)
            fprintf(stderr, "temper: warning: %s: %s\n", f->path, task_error);
        else if (temper_session_result_error(result))
            print_unevaluated(result);
        const char *store_error = temper_session_result_store_error(result);
        if (store_error) {
            fprintf(stderr, "temper: %s\n", store_error);
            store_failed++;
        }
        json_array_append_new(json_object_get(by_task, f->task), result);
    }
    return store_failed;
}

/* Opens a session on each device of --device (or the default one), one per language. Returns 0
 * with sessions[0..nsessions) open and langs[] their languages, or the exit status (said on
 * stderr) with none open. */
static int open_bench_sessions(const struct bench_args *a, struct temper_session **sessions, const char **langs,
                               int nsessions)
{
    struct temper_limits limits;
    temper_limits_default(&limits);
    char msg[4096];
    for (int i = 0; i < nsessions; i++) {
        int err = cli_session_open(&sessions[i], a->ndevices ? a->devices[i] : NULL, &limits, a->tasks_dir, 0,
                                   a->jobs, msg, sizeof(msg));
        if (err) {
            close_sessions(sessions, i);
            return cli_error(err, msg);
        }
        langs[i] = json_string_value(json_object_get(temper_session_device_info(sessions[i]), "language")) ?: "";
        for (int j = 0; j < i; j++)
            if (!strcmp(langs[i], langs[j])) {
                fprintf(stderr, "temper: bench: --device %s and --device %s both take %s candidates: give one "
                                "device per backend\n", a->devices[j], a->devices[i], langs[i]);
                close_sessions(sessions, i + 1);
                return CLI_USAGE;
            }
    }
    return 0;
}

/* Frees what a plan holds and the list of missing tasks. */
static void plan_free(struct bench_plan *p, json_t *missing)
{
    json_decref(missing);
    json_decref(p->levels);
    json_decref(p->left_out);
    free(p->files);
}

/* Queues every planned file on its session, all before the first wait, so that compiles overlap
 * device runs across all of them; one secret seed for the bench, drawn now. Returns 0, or the
 * exit status of the submission that failed (said on stderr). */
static int submit_plan(struct bench_plan *p, struct temper_session **sessions, const struct bench_args *a)
{
    uint64_t secret = temper_secret_seed() & 0x7fffffffffffffffull;
    char msg[4096];
    int status = 0, err;
    for (int i = 0; i < p->n && !status; i++) {
        struct temper_session_request req = {0};
        req.path = p->files[i].path;
        req.no_timing = a->no_timing;
        req.time_budget_s = a->time_budget_s;
        req.seed = 1;
        req.secret_seed = secret ? secret : 1;
        if ((err = temper_session_submit(sessions[p->files[i].session], &req, &p->files[i].id, msg, sizeof(msg))))
            status = cli_error(err, msg);
    }
    return status;
}

/* Adds to bench what it was run on and with: the folder, the level, the devices, the settings,
 * and the tasks and files it did not cover. */
static void describe_bench(json_t *bench, const struct bench_args *a, json_t *devices, json_t *missing,
                           const struct bench_plan *p)
{
    char real[PATH_MAX];
    json_object_set_new(bench, "source", json_pack("{s:s}", "from", realpath(a->from, real) ? real : a->from));
    json_object_set_new(bench, "level", json_string(a->level));
    json_object_set_new(bench, "devices", json_incref(devices));
    json_object_set_new(bench, "settings",
                        json_pack("{s:o, s:b, s:o}", "samples", a->samples ? json_integer(a->samples) : json_null(),
                                  "no_timing", a->no_timing, "time_budget_s",
                                  a->time_budget_s > 0 ? json_real(a->time_budget_s) : json_null()));
    json_object_set_new(bench, "missing_tasks", json_incref(missing));
    json_object_set_new(bench, "left_out", json_incref(p->left_out));
}

static int run_from(const struct bench_args *a)
{
    struct temper_session *sessions[BENCH_MAX_DEVICES] = {0};
    const char *langs[BENCH_MAX_DEVICES];
    int nsessions = a->ndevices ? a->ndevices : 1;
    char msg[4096];
    /* The folder first: bad input is said before a device is started. */
    struct bench_plan plan = {NULL, 0, 0, json_object(), json_array()};
    json_t *missing = json_array();
    int status = plan_from(&plan, a, missing);
    if (!status)
        status = open_bench_sessions(a, sessions, langs, nsessions);
    if (status) {
        plan_free(&plan, missing);
        return status;
    }
    plan_assign(&plan, a, langs, nsessions);
    /* What the bench leaves out is said, not only listed in its JSON; a bench with no sample a
     * device here takes has nothing to measure. */
    size_t k;
    json_t *out_one;
    json_array_foreach(plan.left_out, k, out_one)
        fprintf(stderr, "temper: left out %s: %s\n", json_string_value(json_object_get(out_one, "path")),
                json_string_value(json_object_get(out_one, "why")));
    if (!plan.n) {
        fprintf(stderr, "temper: no sample in %s can be evaluated here (%zu left out)\n", a->from,
                json_array_size(plan.left_out));
        close_sessions(sessions, nsessions);
        plan_free(&plan, missing);
        return CLI_NOT_OK;
    }
    json_t *by_task = json_object();
    const char *name;
    json_t *v;
    json_object_foreach(plan.levels, name, v) json_object_set_new(by_task, name, json_array());
    cli_progress_start();
    status = submit_plan(&plan, sessions, a);
    int store_failed = status ? 0 : collect(&plan, sessions, by_task, msg, sizeof(msg));
    cli_progress_done();
    if (store_failed < 0)
        status = cli_error(TEMPER_EINVALID, msg);
    json_t *devices = json_array();
    for (int i = 0; i < nsessions; i++)
        json_array_append(devices, json_object_get(temper_session_device_info(sessions[i]), "id"));
    close_sessions(sessions, nsessions);
    json_t *bench = status ? NULL : temper_bench_compute(by_task, plan.levels);
    if (!status && !bench)
        status = cli_error(TEMPER_ENOMEM, NULL);
    if (!status) {
        describe_bench(bench, a, devices, missing, &plan);
        status = store_and_print(bench, a, store_failed);
    }
    json_decref(bench);
    json_decref(devices);
    json_decref(by_task);
    plan_free(&plan, missing);
    return status;
}

int cmd_bench(int argc, char **argv)
{
    static const struct option opts[] = {
        {"from", required_argument, 0, 'f'},     {"run", required_argument, 0, 'r'},
        {"compare", no_argument, 0, 'c'},        {"suite", required_argument, 0, 'S'},
        {"device", required_argument, 0, 'd'},   {"samples", required_argument, 0, 'k'},
        {"no-timing", no_argument, 0, 'n'},      {"time-budget", required_argument, 0, 'B'},
        {"tasks", required_argument, 0, 't'},    {"jobs", required_argument, 0, 'J'},
        {"json", no_argument, 0, 'j'},           {"help", no_argument, 0, 'h'},
        {"show", required_argument, 0, 's'},     {0, 0, 0, 0}};
    struct bench_args a = {0};
    a.level = "all";
    int compare = 0, c;
    char optmsg[256];
    while ((c = getopt_long(argc, argv, "d:h", opts, NULL)) != -1) {
        int bad = 0;
        switch (c) {
        case 'f':
            a.from = optarg;
            break;
        case 'r':
            bad = temper_parse_i64_option("--run", optarg, 1, INT64_MAX, &a.run, optmsg, sizeof(optmsg));
            break;
        case 'c':
            compare = 1;
            break;
        case 's':
            bad = temper_parse_i64_option("--show", optarg, 1, INT64_MAX, &a.show, optmsg, sizeof(optmsg));
            break;
        case 'S':
            if (suite_level(optarg) < 0) {
                fprintf(stderr, "temper: --suite: '%s' is not a level (L1, L2, L3 or all)\n", optarg);
                return CLI_USAGE;
            }
            a.level = optarg;
            break;
        case 'd':
            if (a.ndevices == BENCH_MAX_DEVICES) {
                fprintf(stderr, "temper: --device: at most %d devices\n", BENCH_MAX_DEVICES);
                return CLI_USAGE;
            }
            a.devices[a.ndevices++] = optarg;
            break;
        case 'k':
            bad = temper_parse_int_option("--samples", optarg, 1, 1000000, &a.samples, optmsg, sizeof(optmsg));
            break;
        case 'n':
            a.no_timing = 1;
            break;
        case 'B':
            bad = temper_parse_double_option("--time-budget", optarg, 0.01, 3600, &a.time_budget_s, optmsg,
                                             sizeof(optmsg));
            break;
        case 't':
            a.tasks_dir = optarg;
            break;
        case 'J':
            bad = temper_parse_int_option("--jobs", optarg, 1, 1024, &a.jobs, optmsg, sizeof(optmsg));
            break;
        case 'j':
            a.json = 1;
            break;
        case 'h':
        default:
            return cli_help_exit(help, c == 'h');
        }
        if (bad)
            return cli_usage_error(optmsg);
    }
    int modes = !!a.from + !!a.run + compare + !!a.show;
    if (modes != 1) {
        fprintf(stderr, "temper: bench: give one of --from DIR, --run ID, --compare A B or --show ID\n");
        help(stderr);
        return CLI_USAGE;
    }
    if (compare) {
        if (argc - optind != 2) {
            fprintf(stderr, "temper: bench --compare: give two bench ids, A and B\n");
            return CLI_USAGE;
        }
        for (int i = 0; i < 2; i++)
            if (temper_parse_i64_option("--compare", argv[optind + i], 1, INT64_MAX, &a.compare[i], optmsg,
                                        sizeof(optmsg)))
                return cli_usage_error(optmsg);
        return run_compare(&a);
    }
    if (optind != argc) {
        fprintf(stderr, "temper: bench: unexpected argument '%s'\n", argv[optind]);
        return CLI_USAGE;
    }
    return a.show ? run_show(&a) : a.run ? run_stored(&a) : run_from(&a);
}
