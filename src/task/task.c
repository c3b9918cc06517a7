/* task.c: loading and validating task.json, shape arithmetic, input generation (finding tasks:
 * find.c). */
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "temper/task.h"
#include "util/util.h"

#define TASK_JSON_MAX (1u << 20)

const char *temper_role_name(enum temper_arg_role role)
{
    return role == TEMPER_ROLE_OUTPUT ? "output" : role == TEMPER_ROLE_INPUT ? "input" : "scalar";
}

/* Copies a JSON string field into out; fails naming the file and field. */
static int get_string(json_t *obj, const char *key, int required, char *out, size_t out_size, const char *file,
                      const char *where, char *msg, size_t msg_size)
{
    json_t *v = json_object_get(obj, key);
    if (!v) {
        if (!required) {
            out[0] = 0;
            return 0;
        }
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s%s: missing", file, where, key);
    }
    if (!json_is_string(v))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s%s: must be a string", file, where, key);
    if (json_string_length(v) >= out_size)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s%s: longer than %zu characters", file, where, key,
                           out_size - 1);
    snprintf(out, out_size, "%s", json_string_value(v));
    return 0;
}

static int parse_shape(json_t *v, struct temper_shape *shape, const char *file, const char *where, char *msg,
                       size_t msg_size)
{
    if (!json_is_object(v))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s: a shape must be an object of sizes", file, where);
    memset(shape, 0, sizeof(*shape));
    const char *key;
    json_t *val;
    json_object_foreach(v, key, val)
    {
        if (!strcmp(key, "init")) {
            const char *arg;
            json_t *dist;
            if (!json_is_object(val))
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s: %s.init: must be an object of input names and distributions", file, where);
            json_object_foreach(val, arg, dist)
            {
                if (shape->ninit == TEMPER_MAX_INIT || !json_is_string(dist) || strlen(arg) >= TEMPER_NAME_MAX ||
                    json_string_length(dist) >= sizeof(shape->init[0]))
                    return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                       "%s: %s.init.%s: up to %d inputs, each a distribution string", file, where,
                                       arg, TEMPER_MAX_INIT);
                snprintf(shape->init_arg[shape->ninit], TEMPER_NAME_MAX, "%s", arg);
                snprintf(shape->init[shape->ninit++], sizeof(shape->init[0]), "%s", json_string_value(dist));
            }
            continue;
        }
        if (shape->n == TEMPER_MAX_SIZES)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s: more than %d sizes", file, where,
                               TEMPER_MAX_SIZES);
        if (!json_is_integer(val) || json_integer_value(val) < 0)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s.%s: must be a non-negative integer", file,
                               where, key);
        if (strlen(key) >= TEMPER_NAME_MAX)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s: size name too long", file, where);
        snprintf(shape->names[shape->n], TEMPER_NAME_MAX, "%s", key);
        shape->values[shape->n++] = json_integer_value(val);
    }
    return 0;
}

static int parse_shape_list(json_t *v, struct temper_shape *out, int *count, const char *file, const char *where,
                            char *msg, size_t msg_size)
{
    if (!json_is_array(v) || json_array_size(v) == 0)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s: must be a non-empty array of shapes", file, where);
    if (json_array_size(v) > TEMPER_MAX_SHAPES)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s: more than %d shapes", file, where,
                           TEMPER_MAX_SHAPES);
    *count = 0;
    size_t i;
    json_t *s;
    json_array_foreach(v, i, s)
    {
        char w[128];
        snprintf(w, sizeof(w), "%s[%zu]", where, i);
        int err = parse_shape(s, &out[i], file, w, msg, msg_size);
        if (err)
            return err;
        (*count)++;
    }
    return 0;
}

static int parse_init(const char *text, struct temper_task_arg *a, const char *file, int index, char *msg,
                      size_t msg_size)
{
    static const struct {
        const char *name;
        enum temper_init_kind kind;
    } kinds[] = {{"normal", TEMPER_INIT_NORMAL}, {"uniform", TEMPER_INIT_UNIFORM}, {"randint", TEMPER_INIT_RANDINT}};
    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        size_t n = strlen(kinds[k].name);
        if (strncmp(text, kinds[k].name, n) || text[n] != '(')
            continue;
        int end = -1;
        if (sscanf(text + n, "(%lf ,%lf )%n", &a->init_a, &a->init_b, &end) != 2 || end < 0 || text[n + end])
            break;
        a->init = kinds[k].kind;
        int empty = a->init == TEMPER_INIT_NORMAL  ? a->init_b <= 0 :
                    a->init == TEMPER_INIT_UNIFORM ? a->init_b <= a->init_a :
                                                     a->init_b < a->init_a;
        if (empty)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: args[%d].init: '%s' has an empty range", file,
                               index, text);
        return 0;
    }
    return temper_fail(msg, msg_size, TEMPER_EPARSE,
                       "%s: args[%d].init: '%s' is not normal(MEAN,STD), uniform(LO,HI) or randint(LO,HI)", file,
                       index, text);
}

static int parse_arg(json_t *v, struct temper_task_arg *a, const char *file, int i, char *msg, size_t msg_size)
{
    char where[64], text[128];
    snprintf(where, sizeof(where), "args[%d].", i);
    if (!json_is_object(v))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: args[%d]: must be an object", file, i);
    int err = get_string(v, "name", 1, a->name, sizeof(a->name), file, where, msg, msg_size);
    if (!err)
        err = get_string(v, "role", 1, text, sizeof(text), file, where, msg, msg_size);
    if (err)
        return err;
    if (!strcmp(text, "output"))
        a->role = TEMPER_ROLE_OUTPUT;
    else if (!strcmp(text, "input"))
        a->role = TEMPER_ROLE_INPUT;
    else if (!strcmp(text, "scalar"))
        a->role = TEMPER_ROLE_SCALAR;
    else
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %srole: '%s' is not output, input or scalar", file,
                           where, text);
    err = get_string(v, "dtype", 1, text, sizeof(text), file, where, msg, msg_size);
    if (err)
        return err;
    int dt = temper_dtype_parse(text);
    if (dt < 0)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: %sdtype: unknown dtype '%s' (f32 f16 bf16 i8 u8 i32 i64)", file, where, text);
    a->dtype = (enum temper_dtype)dt;
    if (a->role == TEMPER_ROLE_SCALAR) {
        if (a->dtype != TEMPER_DTYPE_I32 && a->dtype != TEMPER_DTYPE_I64)
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %sdtype: scalars are i32 or i64", file, where);
        if (json_object_get(v, "shape"))
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %sshape: a scalar has no shape", file, where);
        int64_t type_max = a->dtype == TEMPER_DTYPE_I32 ? INT32_MAX : INT64_MAX;
        json_t *max = json_object_get(v, "max");
        a->max = type_max;
        if (max) {
            if (!json_is_integer(max) || json_integer_value(max) < 0 || json_integer_value(max) > type_max)
                return temper_fail(msg, msg_size, TEMPER_EPARSE,
                                   "%s: %smax: must be an integer from 0 to %lld (the largest %s)", file, where,
                                   (long long)type_max, temper_dtype_name(a->dtype));
            a->max = json_integer_value(max);
        }
        return get_string(v, "large_exempt", 0, a->large_exempt, sizeof(a->large_exempt), file, where, msg,
                          msg_size);
    }
    json_t *shape = json_object_get(v, "shape");
    if (!json_is_array(shape) || json_array_size(shape) == 0 || json_array_size(shape) > TEMPER_MAX_DIMS)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %sshape: must be an array of 1 to %d expressions",
                           file, where, TEMPER_MAX_DIMS);
    size_t d;
    json_t *dim;
    json_array_foreach(shape, d, dim)
    {
        if (json_is_integer(dim))
            snprintf(a->shape[d], TEMPER_EXPR_MAX, "%lld", (long long)json_integer_value(dim));
        else if (json_is_string(dim) && json_string_length(dim) < TEMPER_EXPR_MAX)
            snprintf(a->shape[d], TEMPER_EXPR_MAX, "%s", json_string_value(dim));
        else
            return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %sshape[%zu]: must be an expression string", file,
                               where, d);
    }
    a->ndim = (int)json_array_size(shape);
    if (a->role == TEMPER_ROLE_INPUT) {
        err = get_string(v, "init", 0, text, sizeof(text), file, where, msg, msg_size);
        if (err)
            return err;
        if (!text[0])
            snprintf(text, sizeof(text), "%s", temper_dtype_is_float(a->dtype) ? "normal(0,1)" : "randint(-100,100)");
        return parse_init(text, a, file, i, msg, msg_size);
    }
    return 0;
}

/* Resolves a file named in task.json against the task's folder and checks that it exists. */
static int task_file(const struct temper_task *task, const char *name, char *out, size_t out_size, const char *file,
                     const char *field, char *msg, size_t msg_size)
{
    if (!name[0]) {
        out[0] = 0;
        return 0;
    }
    if (strchr(name, '/') || name[0] == '.')
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: %s: '%s' must be the name of a file in the task's folder (no '/', no leading '.')",
                           file, field, name);
    if (snprintf(out, out_size, "%s/%s", task->dir, name) >= (int)out_size)
        return temper_fail(msg, msg_size, TEMPER_ERANGE, "%s: %s: path too long", file, field);
    if (access(out, R_OK))
        return temper_fail(msg, msg_size, TEMPER_ENOTFOUND, "%s: %s: '%s' not found", file, field, out);
    return 0;
}

/* Checks that every shape expression evaluates at every shape, so a bad task fails at load. */
static int validate_shapes(const struct temper_task *task, const struct temper_shape *shapes, int n, const char *file,
                           const char *where, char *msg, size_t msg_size)
{
    char err_msg[512];
    for (int s = 0; s < n; s++) {
        for (int k = 0; k < shapes[s].ninit; k++) {
            int found = -1;
            for (int a = 0; a < task->nargs; a++)
                if (!strcmp(task->args[a].name, shapes[s].init_arg[k]) && task->args[a].role == TEMPER_ROLE_INPUT)
                    found = a;
            if (found < 0)
                return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s[%d].init: '%s' is not an input", file,
                                   where, s, shapes[s].init_arg[k]);
            struct temper_task_arg copy = task->args[found];
            if (parse_init(shapes[s].init[k], &copy, file, found, err_msg, sizeof(err_msg)))
                return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s[%d].init.%s: %s", file, where, s,
                                   shapes[s].init_arg[k], err_msg);
        }
        for (int a = 0; a < task->nargs; a++) {
            const struct temper_task_arg *arg = &task->args[a];
            int64_t v;
            if (arg->role == TEMPER_ROLE_SCALAR) {
                if (temper_shape_eval(&shapes[s], arg->name, &v, err_msg, sizeof(err_msg)))
                    return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s[%d]: no size for scalar '%s'", file,
                                       where, s, arg->name);
                int64_t type_max = arg->dtype == TEMPER_DTYPE_I32 ? INT32_MAX : INT64_MAX;
                if (v > arg->max)
                    return temper_fail(msg, msg_size, TEMPER_ERANGE,
                                       "%s: %s[%d].%s: %lld is past %s (%lld)", file, where, s, arg->name,
                                       (long long)v,
                                       arg->max < type_max ? "the scalar's max" :
                                       arg->dtype == TEMPER_DTYPE_I32 ? "the largest i32" : "the largest i64",
                                       (long long)arg->max);
                continue;
            }
            for (int d = 0; d < arg->ndim; d++) {
                if (temper_shape_eval(&shapes[s], arg->shape[d], &v, err_msg, sizeof(err_msg)))
                    return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s[%d]: args.%s.shape[%d]: %s", file,
                                       where, s, arg->name, d, err_msg);
                if (v < 0)
                    return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s[%d]: args.%s.shape[%d] is negative",
                                       file, where, s, arg->name, d);
            }
        }
        const char *models[2] = {task->flops, task->bytes};
        for (int m = 0; m < 2; m++) {
            int64_t v;
            if (temper_shape_eval(&shapes[s], models[m], &v, err_msg, sizeof(err_msg)))
                return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: %s: %s[%d]: %s", file, m ? "bytes" : "flops",
                                   where, s, err_msg);
        }
    }
    return 0;
}

int temper_task_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (!n || n >= TEMPER_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
            return 0;
    return 1;
}

/* Checks that the task's name is the name of its folder (resolved, where the folder is given as
 * "." or ".."), so a task is always found under the name it gives. */
static int folder_matches(const struct temper_task *task, const char *file, char *msg, size_t msg_size)
{
    char dir[TEMPER_PATH_MAX], real[PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", task->dir[0] ? task->dir : ".");
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        dir[--len] = 0;
    const char *base = strrchr(dir, '/');
    base = base ? base + 1 : dir;
    if (!strcmp(base, ".") || !strcmp(base, "..")) {
        if (!realpath(dir, real))
            return temper_fail(msg, msg_size, TEMPER_EIO, "%s: cannot resolve the task's folder", file);
        base = strrchr(real, '/');
        base = base ? base + 1 : real;
    }
    if (strcmp(base, task->name))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: name: '%s' is not the name of its folder ('%s')", file,
                           task->name, base);
    return 0;
}

/* The task's name (that of its folder), summary, cost model and level. */
static int load_header(json_t *root, struct temper_task *task, const char *file, char *msg, size_t msg_size)
{
    int err = get_string(root, "name", 1, task->name, sizeof(task->name), file, "", msg, msg_size);
    if (err)
        return err;
    if (!temper_task_name_ok(task->name))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: name: '%s' must be 1 to %d characters of a-z, 0-9 and _",
                           file, task->name, TEMPER_NAME_MAX - 1);
    err = folder_matches(task, file, msg, msg_size);
    if (!err)
        err = get_string(root, "summary", 0, task->summary, sizeof(task->summary), file, "", msg, msg_size);
    if (!err)
        err = get_string(root, "flops", 1, task->flops, sizeof(task->flops), file, "", msg, msg_size);
    if (!err)
        err = get_string(root, "bytes", 1, task->bytes, sizeof(task->bytes), file, "", msg, msg_size);
    if (err)
        return err;
    json_t *level = json_object_get(root, "level");
    if (!json_is_integer(level) || json_integer_value(level) < 1 || json_integer_value(level) > 3)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: level: must be 1, 2 or 3", file);
    task->level = (int)json_integer_value(level);
    return 0;
}

/* The arguments: outputs, then inputs, then scalars, each name once, at least one output. */
static int load_args(json_t *root, struct temper_task *task, const char *file, char *msg, size_t msg_size)
{
    json_t *args = json_object_get(root, "args");
    if (!json_is_array(args) || json_array_size(args) == 0 || json_array_size(args) > TEMPER_MAX_ARGS)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: args: must be an array of 1 to %d arguments", file,
                           TEMPER_MAX_ARGS);
    size_t i;
    json_t *a;
    int last_role = TEMPER_ROLE_OUTPUT, noutputs = 0;
    json_array_foreach(args, i, a)
    {
        int err = parse_arg(a, &task->args[i], file, (int)i, msg, msg_size);
        if (err)
            return err;
        if ((int)task->args[i].role < last_role)
            return temper_fail(msg, msg_size, TEMPER_EPARSE,
                               "%s: args[%zu]: arguments go outputs, then inputs, then scalars", file, i);
        last_role = (int)task->args[i].role;
        noutputs += task->args[i].role == TEMPER_ROLE_OUTPUT;
        for (size_t j = 0; j < i; j++)
            if (!strcmp(task->args[j].name, task->args[i].name))
                return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: args[%zu].name: '%s' is used twice", file, i,
                                   task->args[i].name);
    }
    task->nargs = (int)json_array_size(args);
    if (!noutputs)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: args: a task needs at least one output", file);
    return 0;
}

/* The check shapes and the bench shapes (one list, or one for GPUs and one for CPUs), every
 * expression of each evaluated once here. */
static int load_shapes(json_t *root, struct temper_task *task, const char *file, char *msg, size_t msg_size)
{
    json_t *shapes = json_object_get(root, "shapes");
    if (!json_is_object(shapes))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: shapes: missing (needs check and bench)", file);
    int err = parse_shape_list(json_object_get(shapes, "check"), task->check, &task->ncheck, file, "shapes.check",
                               msg, msg_size);
    if (err)
        return err;
    json_t *bench = json_object_get(shapes, "bench");
    if (json_is_array(bench)) {
        err = parse_shape_list(bench, task->bench_gpu, &task->nbench_gpu, file, "shapes.bench", msg, msg_size);
        if (err)
            return err;
        memcpy(task->bench_cpu, task->bench_gpu, sizeof(task->bench_cpu));
        task->nbench_cpu = task->nbench_gpu;
    } else if (json_is_object(bench)) {
        err = parse_shape_list(json_object_get(bench, "gpu"), task->bench_gpu, &task->nbench_gpu, file,
                               "shapes.bench.gpu", msg, msg_size);
        if (!err)
            err = parse_shape_list(json_object_get(bench, "cpu"), task->bench_cpu, &task->nbench_cpu, file,
                                   "shapes.bench.cpu", msg, msg_size);
        if (err)
            return err;
    } else {
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: shapes.bench: must be an array of shapes or {\"gpu\": [...], \"cpu\": [...]}", file);
    }
    err = validate_shapes(task, task->check, task->ncheck, file, "shapes.check", msg, msg_size);
    if (!err)
        err = validate_shapes(task, task->bench_gpu, task->nbench_gpu, file, "shapes.bench.gpu", msg, msg_size);
    if (!err)
        err = validate_shapes(task, task->bench_cpu, task->nbench_cpu, file, "shapes.bench.cpu", msg, msg_size);
    return err;
}

/* The reference, the baselines, the expert and the compute ceiling the roofline uses. */
static int load_references(json_t *root, struct temper_task *task, const char *file, char *msg, size_t msg_size)
{
    char name[TEMPER_PATH_MAX];
    int err = get_string(root, "reference", 1, name, sizeof(name), file, "", msg, msg_size);
    if (!err)
        err = task_file(task, name, task->reference, sizeof(task->reference), file, "reference", msg, msg_size);
    if (err)
        return err;
    json_t *baseline = json_object_get(root, "baseline");
    if (baseline && !json_is_object(baseline))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: baseline: must be an object", file);
    err = get_string(baseline, "cuda", 0, name, sizeof(name), file, "baseline.", msg, msg_size);
    if (!err)
        err = task_file(task, name, task->baseline_cuda, sizeof(task->baseline_cuda), file, "baseline.cuda", msg,
                        msg_size);
    if (!err)
        err = get_string(baseline, "opencl", 0, name, sizeof(name), file, "baseline.", msg, msg_size);
    if (!err)
        err = task_file(task, name, task->baseline_opencl, sizeof(task->baseline_opencl), file, "baseline.opencl",
                        msg, msg_size);
    if (!err)
        err = get_string(root, "expert", 0, task->expert_cuda, sizeof(task->expert_cuda), file, "", msg, msg_size);
    if (!err)
        err = get_string(root, "compute_ceiling", 0, task->compute_ceiling, sizeof(task->compute_ceiling), file, "",
                         msg, msg_size);
    if (!err && !task->compute_ceiling[0])
        snprintf(task->compute_ceiling, sizeof(task->compute_ceiling), "fma_gflops");
    if (!err && strcmp(task->compute_ceiling, "fma_gflops") && strcmp(task->compute_ceiling, "tensor_bf16_gflops") &&
        strcmp(task->compute_ceiling, "tensor_int8"))
        err = temper_fail(msg, msg_size, TEMPER_EPARSE,
                          "%s: compute_ceiling: '%s' is not fma_gflops, tensor_bf16_gflops or tensor_int8", file,
                          task->compute_ceiling);
    return err;
}

static int load_json(json_t *root, struct temper_task *task, const char *file, char *msg, size_t msg_size)
{
    if (!json_is_object(root))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s: the top level must be an object", file);
    int err = load_header(root, task, file, msg, msg_size);
    if (!err)
        err = load_args(root, task, file, msg, msg_size);
    if (err)
        return err;
    json_t *tol = json_object_get(root, "tolerance");
    json_t *atol = json_object_get(tol, "atol"), *rtol = json_object_get(tol, "rtol");
    if (!json_is_number(atol) || !json_is_number(rtol) || json_number_value(atol) < 0 || json_number_value(rtol) < 0)
        return temper_fail(msg, msg_size, TEMPER_EPARSE,
                           "%s: tolerance: must be {\"atol\": number >= 0, \"rtol\": number >= 0}", file);
    task->atol = json_number_value(atol);
    task->rtol = json_number_value(rtol);
    err = load_shapes(root, task, file, msg, msg_size);
    if (!err)
        err = load_references(root, task, file, msg, msg_size);
    return err;
}

int temper_task_load(const char *dir, struct temper_task *task, char *msg, size_t msg_size)
{
    memset(task, 0, sizeof(*task));
    char file[TEMPER_PATH_MAX + 16];
    size_t len = strlen(dir);
    if (len >= 10 && !strcmp(dir + len - 10, "/task.json")) {
        snprintf(file, sizeof(file), "%s", dir);
        snprintf(task->dir, sizeof(task->dir), "%.*s", (int)(len - 10), dir);
    } else {
        snprintf(task->dir, sizeof(task->dir), "%s", dir);
        snprintf(file, sizeof(file), "%s/task.json", dir);
    }
    char *text;
    int err = temper_read_file(file, TASK_JSON_MAX, &text, NULL, msg, msg_size);
    if (err)
        return err;
    json_error_t jerr;
    json_t *root = json_loads(text, 0, &jerr);
    free(text);
    if (!root)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "%s:%d:%d: %s", file, jerr.line, jerr.column, jerr.text);
    err = load_json(root, task, file, msg, msg_size);
    json_decref(root);
    return err;
}

static int shape_lookup(void *user, const char *name, size_t len, int64_t *value)
{
    const struct temper_shape *s = user;
    for (int i = 0; i < s->n; i++)
        if (strlen(s->names[i]) == len && !strncmp(s->names[i], name, len)) {
            *value = s->values[i];
            return 0;
        }
    return 1;
}

int temper_shape_eval(const struct temper_shape *shape, const char *expr, int64_t *value, char *msg,
                      size_t msg_size)
{
    return temper_expr_eval(expr, shape_lookup, (void *)shape, value, msg, msg_size);
}

void temper_shape_format(const struct temper_shape *shape, char *out, size_t out_size)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < shape->n && used < out_size; i++)
        used += (size_t)snprintf(out + used, out_size - used, "%s%s=%lld", i ? " " : "", shape->names[i],
                                 (long long)shape->values[i]);
    for (int k = 0; k < shape->ninit && used < out_size; k++)
        used += (size_t)snprintf(out + used, out_size - used, " %s~%s", shape->init_arg[k], shape->init[k]);
}

int temper_task_arg_elems(const struct temper_task *task, int arg, const struct temper_shape *shape,
                          int64_t *elems, char *msg, size_t msg_size)
{
    const struct temper_task_arg *a = &task->args[arg];
    int64_t total = 1;
    for (int d = 0; d < a->ndim; d++) {
        int64_t v;
        int err = temper_shape_eval(shape, a->shape[d], &v, msg, msg_size);
        if (err)
            return err;
        if (v < 0 || (v && total > INT64_MAX / v))
            return temper_fail(msg, msg_size, TEMPER_ERANGE, "argument %s: dimension %d out of range", a->name, d);
        total *= v;
    }
    *elems = total;
    return 0;
}

/* Inputs are drawn in chunks, each from its own generator seeded by (seed, argument, chunk), so
 * the values do not depend on how many threads draw them. */
#define FILL_CHUNK (1 << 20)
#define FILL_THREADS_MAX 64

/* One thread's share of a fill. */
struct fill_work {
    const struct temper_task_arg *arg; /* what to draw */
    uint64_t seed;                     /* the argument's seed */
    void *host;                        /* where */
    int64_t elems;                     /* how many in all */
    int64_t first_chunk;               /* this thread's chunks: first, first + step, ... */
    int64_t step;                      /* number of threads */
};

static void fill_chunk(const struct temper_task_arg *a, uint64_t seed, void *host, int64_t begin, int64_t end)
{
    struct temper_rng rng;
    temper_rng_seed(&rng, seed ^ ((uint64_t)(begin / FILL_CHUNK) * 0x9e3779b97f4a7c15ull));
    for (int64_t i = begin; i < end; i++) {
        double v;
        switch (a->init) {
        case TEMPER_INIT_NORMAL:
            v = a->init_a + a->init_b * temper_rng_normal(&rng);
            break;
        case TEMPER_INIT_UNIFORM:
            /* hi is excluded after rounding to the dtype too: draw again if rounding reached it */
            for (int tries = 0;; tries++) {
                v = a->init_a + (a->init_b - a->init_a) * temper_rng_uniform(&rng);
                temper_dtype_store(a->dtype, host, (size_t)i, v);
                if (temper_dtype_load(a->dtype, host, (size_t)i) < a->init_b || tries == 64)
                    break;
            }
            if (temper_dtype_load(a->dtype, host, (size_t)i) >= a->init_b)
                v = a->init_a;
            break;
        default:
            v = floor(a->init_a + (a->init_b - a->init_a + 1) * temper_rng_uniform(&rng));
            break;
        }
        temper_dtype_store(a->dtype, host, (size_t)i, v);
    }
}

static void *fill_thread(void *p)
{
    struct fill_work *w = p;
    for (int64_t c = w->first_chunk; c * FILL_CHUNK < w->elems; c += w->step) {
        int64_t begin = c * FILL_CHUNK, end = begin + FILL_CHUNK;
        fill_chunk(w->arg, w->seed, w->host, begin, end < w->elems ? end : w->elems);
    }
    return NULL;
}

void temper_task_fill_input(const struct temper_task *task, int arg, uint64_t seed, void *host, int64_t elems)
{
    temper_task_fill_input_at(task, arg, NULL, seed, host, elems);
}

struct temper_task_arg temper_task_input_at(const struct temper_task *task, int arg, const struct temper_shape *shape)
{
    struct temper_task_arg drawn = task->args[arg];
    char msg[256];
    for (int k = 0; shape && k < shape->ninit; k++)
        if (!strcmp(shape->init_arg[k], drawn.name))
            parse_init(shape->init[k], &drawn, "", arg, msg, sizeof(msg)); /* validated at load */
    return drawn;
}

void temper_task_fill_input_at(const struct temper_task *task, int arg, const struct temper_shape *shape,
                               uint64_t seed, void *host, int64_t elems)
{
    struct temper_task_arg drawn = temper_task_input_at(task, arg, shape);
    const struct temper_task_arg *a = &drawn;
    uint64_t arg_seed = seed ^ temper_hash64(a->name, strlen(a->name), 0x7e3);
    int64_t chunks = (elems + FILL_CHUNK - 1) / FILL_CHUNK;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int nthreads = (int)(chunks < cores ? chunks : cores);
    if (nthreads > FILL_THREADS_MAX)
        nthreads = FILL_THREADS_MAX;
    if (nthreads <= 1) {
        fill_chunk(a, arg_seed, host, 0, elems);
        return;
    }
    pthread_t threads[FILL_THREADS_MAX];
    struct fill_work work[FILL_THREADS_MAX];
    int started = 0;
    for (int t = 0; t < nthreads; t++) {
        work[t] = (struct fill_work){a, arg_seed, host, elems, t, nthreads};
        if (pthread_create(&threads[t], NULL, fill_thread, &work[t]))
            break;
        started++;
    }
    /* Chunks of threads that could not start are drawn here. */
    if (started < nthreads) {
        for (int64_t c = 0; c * FILL_CHUNK < elems; c++)
            if (c % nthreads >= started) {
                int64_t begin = c * FILL_CHUNK, end = begin + FILL_CHUNK;
                fill_chunk(a, arg_seed, host, begin, end < elems ? end : elems);
            }
    }
    for (int t = 0; t < started; t++)
        pthread_join(threads[t], NULL);
}
