/* find.c: where tasks are found: the search path (--tasks, $TEMPER_TASKS, the installed suite, or
 * the suite beside a moved install), walking it level by level, and finding a task by name (the
 * first folder of the path that holds it wins; later ones are shadowed). */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "temper/task.h"
#include "util/util.h"

const char *temper_tasks_root(const char *tasks_dir)
{
    if (tasks_dir && *tasks_dir)
        return tasks_dir;
    const char *env = getenv("TEMPER_TASKS");
    if (env && *env)
        return env;
#ifdef TEMPER_TASKS_DATADIR
    return TEMPER_TASKS_DATADIR;
#else
    return "tasks";
#endif
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Lists subfolder names of dir, sorted; caller frees each and the array. */
static int list_dirs(const char *dir, char ***names, int *count)
{
    *names = NULL;
    *count = 0;
    DIR *d = opendir(dir);
    if (!d)
        return TEMPER_ENOTFOUND;
    struct dirent *e;
    int cap = 0;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[TEMPER_PATH_MAX];
        struct stat st;
        snprintf(path, sizeof(path), "%.3000s/%s", dir, e->d_name);
        if (stat(path, &st) || !S_ISDIR(st.st_mode))
            continue;
        if (*count == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(*names, (size_t)cap * sizeof(char *));
            if (!grown)
                break;
            *names = grown;
        }
        (*names)[(*count)++] = strdup(e->d_name);
    }
    closedir(d);
    if (*count)
        qsort(*names, (size_t)*count, sizeof(char *), name_cmp);
    return 0;
}

/* Calls fn with each task folder under one tasks folder; stops on nonzero. */
static int each_in(const char *root, int (*fn)(void *user, const char *dir), void *user)
{
    char **levels;
    int nlevels, stop = 0;
    if (list_dirs(root, &levels, &nlevels))
        return TEMPER_ENOTFOUND;
    for (int l = 0; l < nlevels; l++) {
        char level_dir[TEMPER_PATH_MAX];
        snprintf(level_dir, sizeof(level_dir), "%.3000s/%s", root, levels[l]);
        char **tasks;
        int ntasks;
        if (!stop && levels[l][0] == 'L' && !list_dirs(level_dir, &tasks, &ntasks)) {
            for (int t = 0; t < ntasks; t++) {
                char task_dir[TEMPER_PATH_MAX], json[TEMPER_PATH_MAX + 16];
                snprintf(task_dir, sizeof(task_dir), "%.3000s/%s", level_dir, tasks[t]);
                snprintf(json, sizeof(json), "%s/task.json", task_dir);
                if (!stop && !access(json, R_OK))
                    stop = fn(user, task_dir);
                free(tasks[t]);
            }
            free(tasks);
        }
        free(levels[l]);
    }
    free(levels);
    return stop;
}

#ifdef TEMPER_TASKS_DATADIR
/* An install made with `cmake --install --prefix P`, or moved as a whole, holds its tasks in
 * ../share/temper/tasks from its programs (P/bin), not where the build meant to put them: writes
 * that folder to out and returns 1 when the running program has one there. */
static int relocated_datadir(char *out, size_t out_size)
{
    char self[TEMPER_PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0)
        return 0;
    self[n] = 0;
    char *slash = strrchr(self, '/');
    if (!slash)
        return 0;
    *slash = 0;
    char path[TEMPER_PATH_MAX + 32], real[PATH_MAX];
    struct stat st;
    snprintf(path, sizeof(path), "%s/../share/temper/tasks", self);
    return realpath(path, real) && !stat(real, &st) && S_ISDIR(st.st_mode) &&
           snprintf(out, out_size, "%s", real) < (int)out_size;
}
#endif

/* A walk of every folder of a search path: the task visitor and whether any folder held tasks. */
struct each_state {
    int (*fn)(void *user, const char *dir); /* called with each task folder */
    void *user;                             /* passed to fn */
    int found;                              /* 1 once a folder of the path held tasks */
    char **seen;                            /* names of the tasks visited so far (owned) */
    size_t nseen, cap;                      /* how many, and room for how many */
};

/* Visits a task folder unless a task of the same name came earlier in the path (which shadows it:
 * temper_task_find would never reach this one). */
static int each_unshadowed(void *user, const char *dir)
{
    struct each_state *e = user;
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    for (size_t i = 0; i < e->nseen; i++)
        if (!strcmp(e->seen[i], base))
            return 0;
    if (e->nseen == e->cap) {
        size_t cap = e->cap ? 2 * e->cap : 64;
        char **grown = realloc(e->seen, cap * sizeof(*grown));
        if (!grown)
            return TEMPER_ENOMEM;
        e->seen = grown;
        e->cap = cap;
    }
    if (!(e->seen[e->nseen] = strdup(base)))
        return TEMPER_ENOMEM;
    e->nseen++;
    return e->fn(e->user, dir);
}

static int each_folder(void *user, const char *folder)
{
    struct each_state *e = user;
    int r = each_in(folder, each_unshadowed, e);
    if (r == TEMPER_ENOTFOUND)
        return 0;
    e->found = 1;
    return r;
}

/* The search path as it is read: the installed data folder becomes the suite beside a moved
 * install (relocated, of TEMPER_PATH_MAX bytes) where there is one. */
static const char *effective_root(const char *root, char *relocated)
{
#ifdef TEMPER_TASKS_DATADIR
    if (!strcmp(root, TEMPER_TASKS_DATADIR) && relocated_datadir(relocated, TEMPER_PATH_MAX))
        return relocated;
#else
    (void)relocated;
#endif
    return root;
}

int temper_task_each(const char *root, int (*fn)(void *user, const char *dir), void *user)
{
    char relocated[TEMPER_PATH_MAX];
    root = effective_root(root, relocated);
    struct each_state e = {fn, user, 0, NULL, 0, 0};
    int r = temper_search_path_each(root, each_folder, &e);
    for (size_t i = 0; i < e.nseen; i++)
        free(e.seen[i]);
    free(e.seen);
    if (r)
        return r;
    return e.found ? 0 : TEMPER_ENOTFOUND;
}

/* State for temper_task_find's walk. */
struct find_state {
    const char *name; /* the task wanted */
    char *out;        /* where its folder goes */
    size_t out_size;  /* size of out */
};

static int find_one(void *user, const char *dir)
{
    struct find_state *f = user;
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    if (strcmp(base, f->name))
        return 0;
    snprintf(f->out, f->out_size, "%s", dir);
    return 1;
}

int temper_task_find(const char *root, const char *name, char *out, size_t out_size, char *msg, size_t msg_size)
{
    struct find_state f = {name, out, out_size};
    int r = temper_task_each(root, find_one, &f);
    if (r == 1)
        return 0;
    char relocated[TEMPER_PATH_MAX];
    root = effective_root(root, relocated); /* the messages name the folders that were read */
    if (r == TEMPER_ENOTFOUND)
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND,
                           "no tasks folder at '%s' (set --tasks DIR or TEMPER_TASKS, folders separated by ':')", root);
    return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "no task named '%s' under %s", name, root);
}
