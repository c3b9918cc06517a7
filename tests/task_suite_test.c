/* task_suite_test.c: rules every task of the suite and every CUDA kernel shipped with it must keep.
 *  - Every task loads (and so passes the loader's validation).
 *  - The 65,536 rule (docs/task.md): for each size parameter, some check shape takes it past
 *    TEMPER_LARGE_SIZE, unless the task declares the parameter small (`max` <= 65,536: a flag, an
 *    exponent, a head dimension) or says why not (`large_exempt`).
 *  - CUDA grids: no CUDA candidate under the tasks folder or the CUDA verdict cases puts more than
 *    65,535 blocks in grid y or z, or more than 2^31 - 1 in grid x, at any check or bench shape of
 *    its task, for any knob setting its `require` lines allow. CUDA kernels cannot run here, but
 *    their launch lines can be evaluated; device attributes (SMS, WARP, ...) take an H200's values,
 *    as the device query gives them there.
 *
 * usage: task_suite_test TASKS_DIR CUDA_CASES_DIR */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "device/device.h"
#include "temper/error.h"
#include "kernel/kernel_internal.h"
#include "temper/task.h"

#include "candidate_files.h"

/* Knob settings tried per candidate at most: beyond it, an even stride over them. */
#define KNOB_SETTINGS_MAX 20000

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("FAIL ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures++;
}

/* What the walk over the suite needs. */
struct suite {
    const char *root; /* the tasks folder */
    int tasks;        /* tasks loaded */
    int kernels;      /* CUDA kernels checked */
};

/* Checks one task against the 65,536 rule. */
static void check_large_shapes(const struct temper_task *t)
{
    for (int a = 0; a < t->nargs; a++) {
        const struct temper_task_arg *arg = &t->args[a];
        if (arg->role != TEMPER_ROLE_SCALAR)
            continue;
        int64_t largest = -1;
        for (int s = 0; s < t->ncheck; s++)
            for (int i = 0; i < t->check[s].n; i++)
                if (!strcmp(t->check[s].names[i], arg->name) && t->check[s].values[i] > largest)
                    largest = t->check[s].values[i];
        if (largest > TEMPER_LARGE_SIZE || arg->max <= TEMPER_LARGE_SIZE || arg->large_exempt[0])
            continue;
        fail("%s: no check shape takes %s past %d (the largest is %lld): add one that keeps the total work "
             "small, or give %s a max or a large_exempt reason (docs/task.md)",
             t->name, arg->name, TEMPER_LARGE_SIZE, (long long)largest, arg->name);
    }
}

/* The device attributes of an H200 (132 SMs, compute capability 9.0) as bench/RESULTS.md records
 * them from its device query, and its 143,771 MiB of memory: what grid(...) expressions naming
 * SMS and the like are evaluated with. */
static void h200_attrs(struct temper_dev_attrs *attrs)
{
    struct temper_device_info info;
    memset(&info, 0, sizeof(info));
    info.compute_units = 132;
    info.cc_major = 9;
    info.cc_minor = 0;
    info.global_mem_bytes = 150754820096ull;
    info.local_mem_bytes = 49152;
    info.local_mem_optin_bytes = 232448;
    info.local_mem_per_cu_bytes = 233472;
    info.cache_bytes = 62914560;
    info.warp_size = 32;
    info.max_work_group = 1024;
    temper_dev_attrs_fill(&info, attrs);
}

/* Checks every launch of cand at every shape for one knob setting; returns 1 on the first
 * failure (one message per candidate is enough). */
static int check_grids_at(const struct temper_candidate *cand, const struct temper_task *t,
                          const struct temper_knobs *knobs)
{
    struct temper_dev_attrs attrs;
    h200_attrs(&attrs);
    const struct temper_shape *lists[3] = {t->check, t->bench_gpu, t->bench_cpu};
    const int counts[3] = {t->ncheck, t->nbench_gpu, t->nbench_cpu};
    static const char *const axis[3] = {"x", "y", "z"};
    for (int l = 0; l < 3; l++)
        for (int s = 0; s < counts[l]; s++)
            for (int li = 0; li < cand->nlaunches; li++) {
                const struct temper_launch *launch = &cand->launches[li];
                for (int d = 0; d < launch->grid_n; d++) {
                    int64_t v;
                    char msg[512], shape[256];
                    temper_shape_format(&lists[l][s], shape, sizeof(shape));
                    if (temper_launch_eval_dev(&lists[l][s], knobs, &attrs, launch->grid[d], &v, msg, sizeof(msg))) {
                        fail("%s:%d: grid %s at %s: %s", cand->path, launch->line, axis[d], shape, msg);
                        return 1;
                    }
                    int64_t limit = d ? 65535 : 2147483647;
                    if (v > limit) {
                        char knob_text[512] = "";
                        for (int k = 0; k < knobs->n; k++)
                            snprintf(knob_text + strlen(knob_text), sizeof(knob_text) - strlen(knob_text),
                                     " %s=%s", knobs->names[k], knobs->values[k]);
                        fail("%s:%d: grid %s is %lld at %s (knobs%s): CUDA allows at most %lld", cand->path,
                             launch->line, axis[d], (long long)v, shape, knob_text[0] ? knob_text : " default",
                             (long long)limit);
                        return 1;
                    }
                }
            }
    return 0;
}

/* Checks a CUDA candidate's grids over its knob settings that pass its `require` lines. */
static void check_cuda_grids(const char *path, struct suite *su)
{
    struct temper_candidate cand;
    char msg[2048];
    if (temper_candidate_load(path, &cand, msg, sizeof(msg))) {
        /* The verdict cases include malformed candidates on purpose: those have no grid to check. */
        return;
    }
    char task_dir[4096];
    static struct temper_task t;
    if (temper_task_find(su->root, cand.task, task_dir, sizeof(task_dir), msg, sizeof(msg)) ||
        temper_task_load(task_dir, &t, msg, sizeof(msg))) {
        fail("%s: its task: %s", path, msg);
        temper_candidate_free(&cand);
        return;
    }
    int64_t settings = 1;
    for (int p = 0; p < cand.nparams && settings <= KNOB_SETTINGS_MAX * 1000LL; p++)
        settings *= cand.params[p].nvalues;
    int64_t step = settings > KNOB_SETTINGS_MAX ? settings / KNOB_SETTINGS_MAX : 1;
    int allowed = 0;
    for (int64_t i = 0; i < settings; i += step) {
        struct temper_knobs knobs;
        temper_knobs_default(&cand, &knobs);
        int64_t rest = i;
        int err = 0;
        for (int p = 0; p < cand.nparams && !err; p++) {
            char assignment[256];
            snprintf(assignment, sizeof(assignment), "%s=%s", cand.params[p].name,
                     cand.params[p].values[rest % cand.params[p].nvalues]);
            rest /= cand.params[p].nvalues;
            err = temper_knobs_set(&cand, &knobs, assignment, msg, sizeof(msg));
        }
        if (err || temper_candidate_check(&cand, &knobs, msg, sizeof(msg)))
            continue;
        allowed++;
        if (check_grids_at(&cand, &t, &knobs))
            break;
    }
    if (!allowed && cand.nrequires)
        fail("%s: no knob setting passes its require lines", path);
    su->kernels++;
    temper_candidate_free(&cand);
}

static int check_task(void *user, const char *dir)
{
    struct suite *su = user;
    static struct temper_task t;
    char msg[2048];
    if (temper_task_load(dir, &t, msg, sizeof(msg))) {
        fail("%s", msg);
        return 0;
    }
    su->tasks++;
    check_large_shapes(&t);
    char **names;
    int n = candidate_files(dir, "cuda", &names);
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
        check_cuda_grids(path, su);
        free(names[i]);
    }
    free(names);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: task_suite_test TASKS_DIR CUDA_CASES_DIR\n");
        return 2;
    }
    struct suite su = {argv[1], 0, 0};
    if (temper_task_each(argv[1], check_task, &su) == TEMPER_ENOTFOUND) {
        fprintf(stderr, "no tasks folder at %s\n", argv[1]);
        return 2;
    }
    char **names;
    int n = candidate_files(argv[2], "cuda", &names);
    if (n < 0) {
        fprintf(stderr, "cannot open %s\n", argv[2]);
        return 2;
    }
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", argv[2], names[i]);
        check_cuda_grids(path, &su);
        free(names[i]);
    }
    free(names);
    printf("%d tasks, %d CUDA kernels checked: %s\n", su.tasks, su.kernels, failures ? "FAILED" : "all passed");
    return failures || !su.tasks ? 1 : 0;
}
