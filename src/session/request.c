/* request.c: the one request (request.h): its knob values' text, its copies, and its JSON codec in
 * the gym's item form, whose refusals are the API's (each names the key it is about). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temper/error.h"
#include "temper/kernel.h"
#include "temper/request.h"
#include "temper/task.h"
#include "util/util.h"

int temper_knob_value_text(const struct temper_knob_value *v, char *out, size_t out_size)
{
    switch (v->kind) {
    case TEMPER_KNOB_INT:
        return snprintf(out, out_size, "%lld", (long long)v->i);
    case TEMPER_KNOB_REAL:
        return snprintf(out, out_size, "%.17g", v->r);
    case TEMPER_KNOB_TEXT:
        break;
    }
    return snprintf(out, out_size, "%s", v->text ? v->text : "");
}

int temper_knob_value_assignment(const struct temper_knob_value *v, char *out, size_t out_size)
{
    int n = snprintf(out, out_size, "%s=", v->name ? v->name : "");
    if (n < 0)
        return n;
    size_t used = (size_t)n < out_size ? (size_t)n : out_size ? out_size - 1 : 0;
    int m = temper_knob_value_text(v, out_size ? out + used : NULL, out_size - used);
    return m < 0 ? m : n + m;
}

int temper_request_id_ok(const char *id)
{
    size_t n = 0;
    int only_dots = 1;
    for (const char *p = id; *p; p++, n++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == ':' || c == '-'))
            return 0;
        only_dots &= c == '.';
    }
    return n >= 1 && n <= 128 && !only_dots;
}

/* ---- copies ---- */

static int dup_text(const char **dst, const char *src)
{
    *dst = src ? strdup(src) : NULL;
    return src && !*dst;
}

static int copy_knobs(struct temper_request *dst, const struct temper_request *src)
{
    dst->knobs = NULL;
    dst->nknobs = 0;
    if (src->nknobs <= 0)
        return 0;
    struct temper_knob_value *k = calloc((size_t)src->nknobs, sizeof(*k));
    if (!k)
        return 1;
    dst->knobs = k;
    dst->nknobs = src->nknobs;
    int oom = 0;
    for (int i = 0; i < src->nknobs; i++) {
        k[i] = src->knobs[i];
        oom |= dup_text(&k[i].name, src->knobs[i].name);
        oom |= dup_text(&k[i].text, src->knobs[i].text);
    }
    return oom;
}

int temper_request_copy(struct temper_request *dst, const struct temper_request *src)
{
    *dst = *src;
    dst->source = NULL;
    int oom = 0;
    if (src->source) {
        size_t n = src->source_len ? src->source_len : strlen(src->source);
        char *s = malloc(n + 1);
        if (s) {
            memcpy(s, src->source, n);
            s[n] = 0;
        }
        dst->source = s;
        dst->source_len = n;
        oom |= !s;
    }
    oom |= dup_text(&dst->path, src->path);
    oom |= dup_text(&dst->lang, src->lang);
    oom |= dup_text(&dst->task, src->task);
    oom |= dup_text(&dst->extra_flags, src->extra_flags);
    oom |= dup_text(&dst->made_by, src->made_by);
    oom |= dup_text(&dst->batch_id, src->batch_id);
    oom |= copy_knobs(dst, src);
    if (oom) {
        temper_request_free(dst);
        return TEMPER_ENOMEM;
    }
    return 0;
}

void temper_request_free(struct temper_request *req)
{
    if (!req)
        return;
    free((char *)req->path);
    free((char *)req->source);
    free((char *)req->lang);
    free((char *)req->task);
    free((char *)req->extra_flags);
    free((char *)req->made_by);
    free((char *)req->batch_id);
    for (int i = 0; req->knobs && i < req->nknobs; i++) {
        free((char *)req->knobs[i].name);
        free((char *)req->knobs[i].text);
    }
    free((void *)req->knobs);
    memset(req, 0, sizeof(*req));
}

/* ---- reading an item ---- */

/* A refusal: kind and the message; returns err. */
static int refuse(const char **kind, const char *what, int err, char *msg, size_t msg_size, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

static int refuse(const char **kind, const char *what, int err, char *msg, size_t msg_size, const char *fmt, ...)
{
    if (kind)
        *kind = what;
    if (msg && msg_size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, msg_size, fmt, ap);
        va_end(ap);
    }
    return err;
}

#define INVALID(...) refuse(kind, "invalid_request", TEMPER_EINVALID, msg, msg_size, __VA_ARGS__)

/* A refusal naming an unknown key of the object at where. */
static int refuse_unknown(const char **kind, const char *where, const char *key, char *msg, size_t msg_size)
{
    char shown[80];
    temper_show_bytes(key, strlen(key), 60, shown, sizeof(shown));
    return INVALID("%s: unknown field '%s'", where, shown);
}

/* Characters (code points) of UTF-8 text. */
static size_t utf8_chars(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

/* 1 when UTF-8 text holds no control character (C0, DEL or C1): a string a terminal shows as text
 * when an operator prints it (temper history). */
static int printable_utf8(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f || (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f))
            return 0;
    return 1;
}

/* 1 to 63 printable ASCII characters, no space, quote or backslash. */
static int knob_text_ok(const char *v)
{
    size_t n = 0;
    for (; *v; v++, n++)
        if (*v <= ' ' || *v > '~' || *v == '"' || *v == '\'' || *v == '\\')
            return 0;
    return n >= 1 && n < TEMPER_NAME_MAX;
}

static int knob_name_ok(const char *n)
{
    size_t len = strlen(n);
    if (!len || len >= TEMPER_NAME_MAX ||
        !((n[0] >= 'A' && n[0] <= 'Z') || (n[0] >= 'a' && n[0] <= 'z') || n[0] == '_'))
        return 0;
    for (; *n; n++)
        if (!((*n >= 'A' && *n <= 'Z') || (*n >= 'a' && *n <= 'z') || (*n >= '0' && *n <= '9') || *n == '_'))
            return 0;
    return 1;
}

/* The item's knobs object into view->knobs (an array the caller frees; strings borrowed). */
static int read_knobs(json_t *knobs, const char *where, struct temper_request *view, const char **kind, char *msg,
                      size_t msg_size)
{
    if (!json_is_object(knobs))
        return INVALID("%s.knobs must be an object of NAME: value", where);
    struct temper_knob_value *k = calloc(json_object_size(knobs) + 1, sizeof(*k));
    if (!k)
        return refuse(kind, "invalid_request", TEMPER_ENOMEM, msg, msg_size, "out of memory");
    view->knobs = k;
    const char *name;
    json_t *v;
    json_object_foreach(knobs, name, v)
    {
        struct temper_knob_value *kv = &k[view->nknobs];
        if (!knob_name_ok(name))
            return INVALID("%s.knobs: '%.64s' is not a knob name "
                           "([A-Za-z_][A-Za-z0-9_]*, under 64 bytes)",
                           where, name);
        kv->name = name;
        if (temper_json_int64(v, &kv->i))
            kv->kind = TEMPER_KNOB_INT;
        else if (json_is_string(v) && knob_text_ok(json_string_value(v))) {
            kv->kind = TEMPER_KNOB_TEXT;
            kv->text = json_string_value(v);
        } else
            return INVALID("%s.knobs.%s must be an integer or 1 to 63 printable "
                           "ASCII characters without "
                           "spaces, quotes or backslashes",
                           where, name);
        view->nknobs++;
    }
    return 0;
}

/* The item's options object into view. */
static int read_options(json_t *o, const char *item_where, struct temper_request *view, const char **kind, char *msg,
                        size_t msg_size)
{
    static const char *const known[] = {"timing", "seed", "keep_going", "checks_only", "time_budget_s", NULL};
    char where[160];
    snprintf(where, sizeof(where), "%s.options", item_where);
    if (!json_is_object(o))
        return INVALID("%s must be an object", where);
    const char *bad;
    if (!temper_json_keys_known(o, known, &bad))
        return refuse_unknown(kind, where, bad, msg, msg_size);
    const char *bools[] = {"timing", "keep_going", "checks_only"};
    for (size_t b = 0; b < 3; b++) {
        json_t *v = json_object_get(o, bools[b]);
        if (v && !json_is_boolean(v))
            return INVALID("%s.%s must be true or false", where, bools[b]);
    }
    json_t *seed = json_object_get(o, "seed");
    int64_t n = 0;
    if (seed && (!temper_json_int64(seed, &n) || n < 1))
        return INVALID("%s.seed must be an integer from 1", where);
    json_t *tb = json_object_get(o, "time_budget_s");
    if (tb && (!json_is_number(tb) || !(json_number_value(tb) >= 0.01) || json_number_value(tb) > 3600))
        return INVALID("%s.time_budget_s must be a number from 0.01 to 3600", where);
    view->no_timing = json_is_false(json_object_get(o, "timing"));
    view->seed = seed ? (uint64_t)n : 0;
    view->keep_going = json_is_true(json_object_get(o, "keep_going"));
    view->checks_only = json_is_true(json_object_get(o, "checks_only"));
    view->time_budget_s = tb ? json_number_value(tb) : 0;
    return 0;
}

/* The candidate's keys (id, source, lang) into view. */
static int read_candidate(json_t *item, const char *where, size_t max_source_bytes, struct temper_request *view,
                          const char **kind, char *msg, size_t msg_size)
{
    json_t *id = json_object_get(item, "id"), *src = json_object_get(item, "source");
    json_t *lang = json_object_get(item, "lang");
    if (id && (!json_is_string(id) || !temper_request_id_ok(json_string_value(id))))
        return refuse(kind, "invalid_id", TEMPER_EINVALID, msg, msg_size,
                      "%s.id must be 1 to 128 of [A-Za-z0-9._:-] (not only dots)", where);
    if (!json_is_string(src) || json_string_length(src) == 0)
        return INVALID("%s.source must be a non-empty string", where);
    if (max_source_bytes && json_string_length(src) > max_source_bytes)
        return refuse(kind, "source_too_large", TEMPER_ERANGE, msg, msg_size,
                      "%s.source has %zu bytes, over this server's limit of %zu", where, json_string_length(src),
                      max_source_bytes);
    if (!json_is_string(lang) || temper_lang_parse(json_string_value(lang)) < 0)
        return INVALID("%s.lang must be \"cuda\", \"opencl\" or \"triton\"", where);
    view->path = json_string_value(id);
    view->source = json_string_value(src);
    view->source_len = json_string_length(src);
    view->lang = json_string_value(lang);
    return 0;
}

/* Every key of the item into view (strings borrowed, knobs an array the caller frees). */
static int read_item(json_t *item, const char *where, size_t max_source_bytes, struct temper_request *view,
                     const char **kind, char *msg, size_t msg_size)
{
    static const char *const known[] = {"id", "source", "lang", "knobs", "options", "parent", "origin", "task", NULL};
    if (!json_is_object(item))
        return INVALID("%s must be an object", where);
    const char *bad;
    if (!temper_json_keys_known(item, known, &bad))
        return refuse_unknown(kind, where, bad, msg, msg_size);
    int err = read_candidate(item, where, max_source_bytes, view, kind, msg, msg_size);
    json_t *knobs = json_object_get(item, "knobs"), *opts = json_object_get(item, "options");
    if (!err && knobs)
        err = read_knobs(knobs, where, view, kind, msg, msg_size);
    if (!err && opts)
        err = read_options(opts, where, view, kind, msg, msg_size);
    if (err)
        return err;
    json_t *parent = json_object_get(item, "parent"), *origin = json_object_get(item, "origin");
    int64_t n = 0;
    if (parent && (!temper_json_int64(parent, &n) || n < 1))
        return INVALID("%s.parent must be a store row id (an integer from 1)", where);
    if (origin && (!json_is_string(origin) || utf8_chars(json_string_value(origin)) > 128 ||
                   !printable_utf8(json_string_value(origin))))
        return INVALID("%s.origin must be a string of at most 128 characters, none "
                       "of them a control character",
                       where);
    json_t *task = json_object_get(item, "task");
    if (task && (!json_is_string(task) || !temper_task_name_ok(json_string_value(task))))
        return INVALID("%s.task must be a task name ([a-z0-9_])", where);
    view->parent_id = n;
    view->made_by = json_string_value(origin);
    view->task = json_string_value(task);
    return 0;
}

int temper_request_from_json(json_t *item, const char *where, size_t max_source_bytes, struct temper_request *req,
                             const char **kind, char *msg, size_t msg_size)
{
    struct temper_request view = {0};
    memset(req, 0, sizeof(*req));
    int err = read_item(item, where ? where : "item", max_source_bytes, &view, kind, msg, msg_size);
    if (!err && (err = temper_request_copy(req, &view)))
        refuse(kind, "invalid_request", err, msg, msg_size, "out of memory");
    free((void *)view.knobs);
    return err;
}

#undef INVALID

/* ---- writing an item ---- */

/* A knob value as JSON: an integer, a real, or text. */
static json_t *knob_json(const struct temper_knob_value *v)
{
    switch (v->kind) {
    case TEMPER_KNOB_INT:
        return json_integer(v->i);
    case TEMPER_KNOB_REAL:
        return json_real(v->r);
    case TEMPER_KNOB_TEXT:
        break;
    }
    return json_string(v->text ? v->text : "");
}

/* The options object, with only the options set; NULL when out of memory. */
static json_t *options_json(const struct temper_request *req)
{
    json_t *o = json_object();
    int bad = !o;
    if (!bad && req->no_timing)
        bad |= json_object_set_new(o, "timing", json_false());
    if (!bad && req->seed)
        bad |= json_object_set_new(o, "seed", json_integer((json_int_t)req->seed));
    if (!bad && req->keep_going)
        bad |= json_object_set_new(o, "keep_going", json_true());
    if (!bad && req->checks_only)
        bad |= json_object_set_new(o, "checks_only", json_true());
    if (!bad && req->time_budget_s > 0)
        bad |= json_object_set_new(o, "time_budget_s", json_real(req->time_budget_s));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *temper_request_to_json(const struct temper_request *req)
{
    json_t *item = json_object(), *knobs = json_object(), *opts = options_json(req);
    int bad = !item || !knobs || !opts;
    if (!bad && req->path)
        bad |= json_object_set_new(item, "id", json_string(req->path));
    if (!bad && req->source)
        bad |= json_object_set_new(item, "source",
                                   json_stringn(req->source, req->source_len ? req->source_len : strlen(req->source)));
    if (!bad && req->lang)
        bad |= json_object_set_new(item, "lang", json_string(req->lang));
    if (!bad && req->task)
        bad |= json_object_set_new(item, "task", json_string(req->task));
    for (int i = 0; !bad && i < req->nknobs; i++)
        bad |= json_object_set_new(knobs, req->knobs[i].name, knob_json(&req->knobs[i]));
    if (!bad && req->nknobs)
        bad |= json_object_set(item, "knobs", knobs);
    if (!bad && json_object_size(opts))
        bad |= json_object_set(item, "options", opts);
    if (!bad && req->parent_id)
        bad |= json_object_set_new(item, "parent", json_integer(req->parent_id));
    if (!bad && req->made_by)
        bad |= json_object_set_new(item, "origin", json_string(req->made_by));
    json_decref(knobs);
    json_decref(opts);
    if (bad) {
        json_decref(item);
        return NULL;
    }
    return item;
}
