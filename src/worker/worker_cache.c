/* worker_cache.c: the worker's side of the calling program's cache service (descriptor 5; see
 * cache_service.c). A worker runs candidates, so it writes no cache and reads none: kernel
 * binaries and task references come from the calling program, which checks their seals; what the
 * worker had to build itself, and which specialised work-group functions PoCL compiled for it at
 * launch (in its private PoCL cache, under its scratch folder), it reports after each job, so that
 * a process that runs no candidate builds them for the next worker. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "temper/kernel.h"
#include "task/task_torch.h"
#include "temper/task.h"
#include "util/util.h"
#include "worker_cache.h"
#include "eval/worker_impl.h"

#define NOTES_MAX 16
#define DIRS_MAX 256
#define SPECS_TEXT 2048

/* A module the worker built or loaded during the current job. */
struct note {
    uint64_t key;              /* its build key */
    char *source;              /* its source (owned) */
    size_t len;                /* bytes of source */
    char *options;             /* its options (owned) */
    char device[4][256];       /* the backend, name, arch and compiler version it is built for */
    int missed;                /* 1: the calling program had no binary for it */
    char loaded[SPECS_TEXT];   /* specialisations the binary it got holds, comma-separated */
    char dirs[4][4800];        /* PoCL program folders that appeared while it was built */
    int ndirs;                 /* how many */
};

static int svc = -1;                 /* the service's socket */
static char kcache[4096];            /* PoCL's kernel cache folder ($POCL_CACHE_DIR, in the scratch folder) */
static struct note notes[NOTES_MAX]; /* this job's modules */
static int nnotes;
static char *seen[DIRS_MAX];         /* PoCL program folders seen so far (owned) */
static int nseen;

static json_t *call(json_t *req)
{
    int err = worker_send(svc, req);
    json_decref(req);
    return err ? NULL : worker_recv(svc);
}

static int fetch_binary(void *user, uint64_t key, void **data, size_t *size, char *specs, size_t specs_size)
{
    (void)user;
    char hex[17];
    temper_hash_hex(key, hex);
    json_t *r = call(json_pack("{s:s, s:s}", "op", "binary", "key", hex));
    json_t *bin = json_object_get(r, "binary");
    const char *sp = json_string_value(json_object_get(r, "specs"));
    int found = json_is_string(bin);
    if (found) {
        size_t n = json_string_length(bin);
        *data = malloc(n + 1);
        if (*data) {
            memcpy(*data, json_string_value(bin), n);
            ((char *)*data)[n] = 0;
            *size = n;
        }
        found = *data != NULL;
    }
    snprintf(specs, specs_size, "%s", sp ? sp : "");
    for (int i = 0; i < nnotes; i++)
        if (notes[i].key == key) {
            notes[i].missed = !found;
            snprintf(notes[i].loaded, sizeof(notes[i].loaded), "%s", found && sp ? sp : "");
        }
    json_decref(r);
    return found ? 0 : TEMPER_ENOTFOUND;
}

/* PoCL's program folders (XX/HASH) not seen before, into n's dirs (n may be NULL). */
static void claim_new_dirs(struct note *n)
{
    DIR *top = opendir(kcache);
    for (struct dirent *a; top && (a = readdir(top));) {
        if (strlen(a->d_name) != 2 || a->d_name[0] == '.')
            continue;
        char sub[4400];
        snprintf(sub, sizeof(sub), "%s/%s", kcache, a->d_name);
        DIR *d = opendir(sub);
        for (struct dirent *b; d && (b = readdir(d));) {
            if (b->d_name[0] == '.')
                continue;
            char path[4700];
            snprintf(path, sizeof(path), "%s/%s", sub, b->d_name);
            int known = 0;
            for (int i = 0; i < nseen && !known; i++)
                known = !strcmp(seen[i], path);
            if (known || nseen == DIRS_MAX)
                continue;
            seen[nseen++] = strdup(path);
            if (n && n->ndirs < 4)
                snprintf(n->dirs[n->ndirs++], sizeof(n->dirs[0]), "%s", path);
        }
        if (d)
            closedir(d);
    }
    if (top)
        closedir(top);
}

static void note_build(void *user, uint64_t key, const char *source, size_t len, const char *options,
                       const char *backend, const char *name, const char *arch, const char *compiler)
{
    (void)user;
    claim_new_dirs(nnotes ? &notes[nnotes - 1] : NULL);
    if (nnotes == NOTES_MAX)
        return;
    struct note *n = &notes[nnotes];
    memset(n, 0, sizeof(*n));
    n->key = key;
    n->source = malloc(len + 1);
    n->options = strdup(options);
    if (!n->source || !n->options) {
        free(n->source);
        free(n->options);
        return;
    }
    memcpy(n->source, source, len);
    n->source[len] = 0;
    n->len = len;
    const char *device[4] = {backend, name, arch, compiler};
    for (int i = 0; i < 4; i++)
        snprintf(n->device[i], sizeof(n->device[i]), "%s", device[i] ? device[i] : "");
    nnotes++;
}

/* Whether spec is one of the comma-separated list. */
static int listed(const char *list, const char *spec)
{
    size_t n = strlen(spec);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, spec, n))
            return 1;
        p += len + (end != NULL);
    }
    return 0;
}

/* A folder name PoCL gives a specialisation: digits, letters and dashes ("256-1-1-goffs0"). */
static int spec_name_ok(const char *s)
{
    if (!*s || strlen(s) > 64)
        return 0;
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') || *s == '-'))
            return 0;
    return 1;
}

/* The specialisations in n's program folders (each kernel's subfolders) into out; returns 1 if
 * one is not in what its binary held. */
static int specs_of(const struct note *n, char *out, size_t size)
{
    int fresh = 0;
    out[0] = 0;
    for (int i = 0; i < n->ndirs; i++) {
        DIR *d = opendir(n->dirs[i]);
        for (struct dirent *k; d && (k = readdir(d));) {
            if (k->d_name[0] == '.')
                continue;
            char kdir[5200];
            snprintf(kdir, sizeof(kdir), "%s/%s", n->dirs[i], k->d_name);
            DIR *s = opendir(kdir);
            for (struct dirent *e; s && (e = readdir(s));) {
                if (e->d_name[0] == '.' || !strcmp(e->d_name, "0-0-0") || !spec_name_ok(e->d_name) ||
                    listed(out, e->d_name) || strlen(out) + strlen(e->d_name) + 2 > size)
                    continue;
                snprintf(out + strlen(out), size - strlen(out), "%s%s", out[0] ? "," : "", e->d_name);
                fresh |= !listed(n->loaded, e->d_name);
            }
            if (s)
                closedir(s);
        }
        if (d)
            closedir(d);
    }
    return fresh;
}

static void job_done(void)
{
    if (svc < 0)
        return;
    claim_new_dirs(nnotes ? &notes[nnotes - 1] : NULL);
    json_t *mods = json_array();
    for (int i = 0; i < nnotes; i++) {
        struct note *n = &notes[i];
        char specs[SPECS_TEXT], hex[17];
        int fresh = specs_of(n, specs, sizeof(specs));
        if (n->missed || fresh) {
            temper_hash_hex(n->key, hex);
            json_t *m = json_pack("{s:s, s:s, s:s, s:b, s:s, s:s, s:s, s:s}", "key", hex, "options", n->options,
                                  "specs", specs, "missed", n->missed, "backend", n->device[0], "name", n->device[1],
                                  "arch", n->device[2], "compiler", n->device[3]);
            json_object_set_new(m, "source", json_stringn_nocheck(n->source, n->len));
            json_array_append_new(mods, m);
        }
        free(n->source);
        free(n->options);
    }
    nnotes = 0;
    if (json_array_size(mods)) {
        /* Fire and forget: the calling program builds them after this worker's jobs. */
        json_t *req = json_pack("{s:s, s:o}", "op", "built", "modules", mods);
        worker_send(svc, req);
        json_decref(req);
    } else {
        json_decref(mods);
    }
}

static int fetch_reference(void *user, const struct temper_task *task, void **data, size_t *size, char *msg,
                           size_t msg_size)
{
    (void)user;
    json_t *r = call(json_pack("{s:s, s:s}", "op", "reference", "task_dir", task->dir));
    json_t *bytes = json_object_get(r, "reference");
    if (!json_is_string(bytes)) {
        const char *why = json_string_value(json_object_get(r, "error"));
        int code = (int)json_integer_value(json_object_get(r, "code"));
        int err = temper_fail(msg, msg_size, code < 0 ? code : TEMPER_EIO, "%s",
                              why ? why : "the calling program sent no reference");
        json_decref(r);
        return err;
    }
    size_t n = json_string_length(bytes);
    *data = malloc(n ? n : 1);
    if (!*data) {
        json_decref(r);
        return TEMPER_ENOMEM;
    }
    memcpy(*data, json_string_value(bytes), n);
    *size = n;
    json_decref(r);
    return 0;
}

/* The elements of each array argument at the shape the scalars give, into elems; 0, or an error. */
static int arg_elems(const struct temper_task *task, const long long *scalars, int64_t *elems, char *msg,
                     size_t msg_size)
{
    struct temper_shape shape;
    temper_task_shape_of_scalars(task, scalars, &shape);
    for (int i = 0; i < task->nargs; i++) {
        elems[i] = 0;
        int err = task->args[i].role == TEMPER_ROLE_SCALAR
                      ? 0
                      : temper_task_arg_elems(task, i, &shape, &elems[i], msg, msg_size);
        if (err)
            return err;
    }
    return 0;
}

/* A Python reference's outputs (task_torch.h), computed by the calling program from the inputs this
 * worker drew, which it hands over with the scalars. */
static int compute_python(const struct temper_task *task, double **out, const double **in, const long long *scalars,
                          char *msg, size_t msg_size)
{
    int64_t elems[TEMPER_MAX_ARGS];
    int err = arg_elems(task, scalars, elems, msg, msg_size);
    if (err)
        return err;
    struct temper_buf buf;
    temper_buf_init(&buf, (size_t)1 << 34);
    json_t *sc = json_array();
    for (int i = 0, k = 0, s = 0; i < task->nargs; i++) {
        if (task->args[i].role == TEMPER_ROLE_INPUT)
            temper_buf_append(&buf, in[k++], (size_t)elems[i] * sizeof(double));
        else if (task->args[i].role == TEMPER_ROLE_SCALAR)
            json_array_append_new(sc, json_integer(scalars[s++]));
    }
    json_t *req = json_pack("{s:s, s:s, s:o}", "op", "torch_reference", "task_dir", task->dir, "scalars", sc);
    json_object_set_new(req, "inputs", json_stringn_nocheck(buf.data ? buf.data : "", buf.len));
    temper_buf_free(&buf);
    json_t *r = call(req);
    json_t *got = json_object_get(r, "outputs");
    size_t want = 0;
    for (int i = 0; i < task->nargs; i++)
        want += task->args[i].role == TEMPER_ROLE_OUTPUT ? (size_t)elems[i] * sizeof(double) : 0;
    if (!json_is_string(got) || json_string_length(got) != want) {
        const char *why = json_string_value(json_object_get(r, "error"));
        int code = (int)json_integer_value(json_object_get(r, "code"));
        err = temper_fail(msg, msg_size, code < 0 ? code : TEMPER_EIO, "%s",
                          why ? why : "the calling program sent no outputs for the Python reference");
        json_decref(r);
        return err;
    }
    const char *p = json_string_value(got);
    for (int i = 0, k = 0; i < task->nargs; i++)
        if (task->args[i].role == TEMPER_ROLE_OUTPUT) {
            memcpy(out[k++], p, (size_t)elems[i] * sizeof(double));
            p += elems[i] * (int64_t)sizeof(double);
        }
    json_decref(r);
    return 0;
}

void worker_cache_init(int fd, const char *scratch)
{
    svc = fd;
    /* PoCL keeps its programs in $POCL_CACHE_DIR/XX/HASH (without a kcache level when the
     * variable is set). */
    snprintf(kcache, sizeof(kcache), "%s/pocl", scratch);
    static const struct temper_build_cache_remote remote = {fetch_binary, note_build, NULL};
    static const struct temper_reference_remote ref = {fetch_reference, NULL};
    temper_build_cache_set_remote(&remote);
    temper_task_reference_set_remote(&ref);
    temper_task_python_set_compute(compute_python);
    worker_job_done_hook = job_done;
}
