/* result.c: the reader, writer and documentation of the result record, all driven by one table per
 * record that the X-macros of include/temper/result.h generate. The code below walks those tables
 * generically: a field's kind says how its member is laid out and how its JSON looks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "temper/error.h"
#include "eval/result_set.h"
#include "temper/result.h"
#include "eval/eval_internal.h"
#include "util/util.h"

enum field_kind { KIND_STR, KIND_INT, KIND_REAL, KIND_BOOL, KIND_JSON, KIND_REC, KIND_LIST };

struct record_desc;

/* One field of a record, as the X-macro lists it. */
struct field_desc {
    const char *name;              /* the JSON key and the member's name */
    enum field_kind kind;          /* how it is stored and written */
    size_t offset;                 /* the member's offset in its struct */
    const struct record_desc *sub; /* the record of a REC or LIST field, else NULL */
    const char *doc;               /* one line for docs/result.md */
};

/* A record: its fields in order. */
struct record_desc {
    const char *name;                /* the record's name in the documentation */
    size_t size;                     /* sizeof its struct */
    const struct field_desc *fields; /* the fields */
    size_t nfields;                  /* how many */
};

/* A generic view of any generated list (every list struct has this layout). */
struct any_list {
    size_t n; /* entries */
    void *v;  /* the entries */
};

#define KIND_OF_STR KIND_STR
#define KIND_OF_INT KIND_INT
#define KIND_OF_REAL KIND_REAL
#define KIND_OF_BOOL KIND_BOOL
#define KIND_OF_JSON KIND_JSON
#define KIND_OF_REC KIND_REC
#define KIND_OF_LIST KIND_LIST
#define SUB_REF(sub) SUB_REF_##sub
#define SUB_REF_none NULL
#define SUB_REF_mismatch &mismatch_desc
#define SUB_REF_difference &difference_desc
#define SUB_REF_check &check_desc
#define SUB_REF_bench_check &bench_check_desc
#define SUB_REF_timing &timing_desc
#define SUB_REF_phases &phases_desc
#define SUB_REF_device &device_desc

static const struct record_desc mismatch_desc, difference_desc, check_desc, bench_check_desc, timing_desc,
    phases_desc, device_desc, result_desc;

#define DESC_FIELD(structname, kind, name, sub, doc)                                                          \
    {#name, KIND_OF_##kind, offsetof(struct structname, name), SUB_REF(sub), doc},
#define DEFINE_DESC(var, structname, title, FIELDS)                                                           \
    static const struct field_desc var##_fields[] = {FIELDS(DESC_##structname)};                            \
    static const struct record_desc var = {title, sizeof(struct structname), var##_fields,                   \
                                           sizeof(var##_fields) / sizeof(var##_fields[0])};

#define DESC_temper_result_mismatch(k, n, s, d) DESC_FIELD(temper_result_mismatch, k, n, s, d)
#define DESC_temper_result_difference(k, n, s, d) DESC_FIELD(temper_result_difference, k, n, s, d)
#define DESC_temper_result_check(k, n, s, d) DESC_FIELD(temper_result_check, k, n, s, d)
#define DESC_temper_result_bench_check(k, n, s, d) DESC_FIELD(temper_result_bench_check, k, n, s, d)
#define DESC_temper_result_timing(k, n, s, d) DESC_FIELD(temper_result_timing, k, n, s, d)
#define DESC_temper_result_phases(k, n, s, d) DESC_FIELD(temper_result_phases, k, n, s, d)
#define DESC_temper_result_device(k, n, s, d) DESC_FIELD(temper_result_device, k, n, s, d)
#define DESC_temper_result(k, n, s, d) DESC_FIELD(temper_result, k, n, s, d)

DEFINE_DESC(mismatch_desc, temper_result_mismatch, "mismatch", TEMPER_RESULT_MISMATCH_FIELDS)
DEFINE_DESC(difference_desc, temper_result_difference, "difference", TEMPER_RESULT_DIFFERENCE_FIELDS)
DEFINE_DESC(check_desc, temper_result_check, "check", TEMPER_RESULT_CHECK_FIELDS)
DEFINE_DESC(bench_check_desc, temper_result_bench_check, "bench_check", TEMPER_RESULT_BENCH_CHECK_FIELDS)
DEFINE_DESC(timing_desc, temper_result_timing, "timing", TEMPER_RESULT_TIMING_FIELDS)
DEFINE_DESC(phases_desc, temper_result_phases, "phases", TEMPER_RESULT_PHASES_FIELDS)
DEFINE_DESC(device_desc, temper_result_device, "device", TEMPER_RESULT_DEVICE_FIELDS)
DEFINE_DESC(result_desc, temper_result, "result", TEMPER_RESULT_FIELDS)

/* ---- freeing ---- */

static void record_free(const struct record_desc *d, void *rec);

static void list_free(const struct record_desc *sub, struct any_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        record_free(sub, (char *)l->v + i * sub->size);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

/* Frees what the member p of field f owns and makes it null. */
static void field_free(const struct field_desc *f, void *p)
{
    switch (f->kind) {
    case KIND_STR:
        free(*(char **)p);
        *(char **)p = NULL;
        break;
    case KIND_JSON:
        json_decref(*(json_t **)p);
        *(json_t **)p = NULL;
        break;
    case KIND_REC:
        if (*(void **)p) {
            record_free(f->sub, *(void **)p);
            free(*(void **)p);
        }
        *(void **)p = NULL;
        break;
    case KIND_LIST:
        list_free(f->sub, p);
        break;
    case KIND_INT:
        memset(p, 0, sizeof(struct temper_opt_i64));
        break;
    case KIND_REAL:
        memset(p, 0, sizeof(struct temper_opt_f64));
        break;
    case KIND_BOOL:
        memset(p, 0, sizeof(struct temper_opt_bool));
        break;
    }
}

static void record_free(const struct record_desc *d, void *rec)
{
    for (size_t i = 0; i < d->nfields; i++)
        field_free(&d->fields[i], (char *)rec + d->fields[i].offset);
    memset(rec, 0, d->size);
}

void temper_result_free(struct temper_result *r)
{
    if (r)
        record_free(&result_desc, r);
}

/* ---- reading ---- */

/* Where a reader is, for messages: "timings[0].median_ms". */
struct path {
    char text[256]; /* the path so far */
};

/* out = at.name, or at.name[index] when index >= 0; a path too long for the buffer is cut. */
static void path_join(struct path *out, const struct path *at, const char *name, long index)
{
    int w = index >= 0 ? snprintf(out->text, sizeof(out->text), "%s%s%s[%ld]", at->text, at->text[0] ? "." : "",
                                  name, index)
                       : snprintf(out->text, sizeof(out->text), "%s%s%s", at->text, at->text[0] ? "." : "", name);
    if (w < 0)
        out->text[0] = 0;
}

static int path_fail(char *msg, size_t n, const struct path *at, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int path_fail(char *msg, size_t n, const struct path *at, const char *key, const char *fmt, ...)
{
    char why[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    return temper_fail(msg, n, TEMPER_EPARSE, "result %s%s%s: %s", at->text, at->text[0] ? "." : "", key, why);
}

/* How strictly a reader takes what it reads: a result in the one form, or one as a store may hold
 * it (written before the one form, or by hand). */
enum read_mode {
    READ_STRICT, /* a key that is not a field, or a value of another type, is an error */
    READ_STORED  /* those read as null; an integral number reads as an integer */
};

static int record_read(const struct record_desc *d, json_t *obj, void *rec, const struct path *at,
                       enum read_mode mode, char *msg, size_t n);

/* A value of the wrong type: an error, or (READ_STORED) null. */
#define WRONG_TYPE(mode, why) ((mode) == READ_STORED ? 0 : path_fail(msg, n, at, f->name, why))

static int field_read(const struct field_desc *f, json_t *v, void *p, const struct path *at, enum read_mode mode,
                      char *msg, size_t n)
{
    if (json_is_null(v))
        return 0;
    struct path sub;
    switch (f->kind) {
    case KIND_STR:
        if (!json_is_string(v))
            return WRONG_TYPE(mode, "a string was expected");
        *(char **)p = strdup(json_string_value(v));
        return *(char **)p ? 0 : TEMPER_ENOMEM;
    case KIND_INT:
        if (mode == READ_STORED && json_is_real(v) && json_real_value(v) == (double)(int64_t)json_real_value(v)) {
            ((struct temper_opt_i64 *)p)->set = 1; /* 1024.0 written by hand for an integer */
            ((struct temper_opt_i64 *)p)->v = (int64_t)json_real_value(v);
            return 0;
        }
        if (!json_is_integer(v))
            return WRONG_TYPE(mode, "an integer was expected");
        ((struct temper_opt_i64 *)p)->set = 1;
        ((struct temper_opt_i64 *)p)->v = json_integer_value(v);
        return 0;
    case KIND_REAL:
        if (!json_is_number(v))
            return WRONG_TYPE(mode, "a number was expected");
        ((struct temper_opt_f64 *)p)->set = 1;
        ((struct temper_opt_f64 *)p)->v = json_number_value(v);
        return 0;
    case KIND_BOOL:
        if (!json_is_boolean(v))
            return WRONG_TYPE(mode, "true or false was expected");
        ((struct temper_opt_bool *)p)->set = 1;
        ((struct temper_opt_bool *)p)->v = json_is_true(v);
        return 0;
    case KIND_JSON:
        *(json_t **)p = json_incref(v);
        return 0;
    case KIND_REC: {
        if (!json_is_object(v))
            return WRONG_TYPE(mode, "an object was expected");
        void *rec = calloc(1, f->sub->size);
        if (!rec)
            return TEMPER_ENOMEM;
        *(void **)p = rec;
        path_join(&sub, at, f->name, -1);
        return record_read(f->sub, v, rec, &sub, mode, msg, n);
    }
    case KIND_LIST: {
        if (!json_is_array(v))
            return WRONG_TYPE(mode, "an array was expected");
        struct any_list *l = p;
        size_t count = json_array_size(v);
        if (!count)
            return 0;
        l->v = calloc(count, f->sub->size);
        if (!l->v)
            return TEMPER_ENOMEM;
        l->n = count;
        for (size_t i = 0; i < count; i++) {
            json_t *e = json_array_get(v, i);
            path_join(&sub, at, f->name, (long)i);
            if (!json_is_object(e) && mode == READ_STORED)
                continue; /* an entry of all nulls, so that the others keep their places */
            if (!json_is_object(e))
                return temper_fail(msg, n, TEMPER_EPARSE, "result %s: an object was expected", sub.text);
            int err = record_read(f->sub, e, (char *)l->v + i * f->sub->size, &sub, mode, msg, n);
            if (err)
                return err;
        }
        return 0;
    }
    }
    return 0;
}

#undef WRONG_TYPE

static const struct field_desc *field_find(const struct record_desc *d, const char *key)
{
    for (size_t i = 0; i < d->nfields; i++)
        if (!strcmp(d->fields[i].name, key))
            return &d->fields[i];
    return NULL;
}

static int record_read(const struct record_desc *d, json_t *obj, void *rec, const struct path *at,
                       enum read_mode mode, char *msg, size_t n)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        const struct field_desc *f = field_find(d, key);
        if (!f && mode == READ_STORED)
            continue;
        if (!f)
            return path_fail(msg, n, at, key, "not a field of the %s record (docs/result.md)", d->name);
        int err = field_read(f, v, (char *)rec + f->offset, at, mode, msg, n);
        if (err)
            return err;
    }
    return 0;
}

int temper_result_from_json(json_t *obj, struct temper_result *r, char *msg, size_t msg_size)
{
    memset(r, 0, sizeof(*r));
    struct path top = {""};
    if (!json_is_object(obj))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "a result must be a JSON object");
    int err = record_read(&result_desc, obj, r, &top, READ_STRICT, msg, msg_size);
    if (err)
        temper_result_free(r);
    return err;
}

int temper_result_from_stored(json_t *obj, struct temper_result *r)
{
    memset(r, 0, sizeof(*r));
    struct path top = {""};
    if (!json_is_object(obj))
        return 0;
    int err = record_read(&result_desc, obj, r, &top, READ_STORED, NULL, 0);
    if (err)
        temper_result_free(r);
    return err;
}

/* ---- setting one field ---- */

int temper_result_set_text(char **member, const char *text)
{
    json_t *valid = text ? json_string(text) : NULL;
    if (text && !valid)
        return TEMPER_EINVALID;
    json_decref(valid);
    free(*member);
    *member = text ? strdup(text) : NULL;
    return text && !*member ? TEMPER_ENOMEM : 0;
}

void temper_result_set_value(json_t **member, json_t *value)
{
    json_decref(*member);
    *member = value;
}

int temper_result_set_json(struct temper_result *r, const char *name, json_t *value, char *msg, size_t msg_size)
{
    const struct field_desc *f = field_find(&result_desc, name);
    if (!f)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s is not a field of the result record", name);
    void *p = (char *)r + f->offset;
    field_free(f, p);
    struct path top = {""};
    int err = field_read(f, value, p, &top, READ_STRICT, msg, msg_size);
    if (err)
        field_free(f, p);
    return err;
}

void temper_result_own(struct temper_result *r, const char *verdict, const char *message, int cancelled,
                       int worker_restarted)
{
    memset(r, 0, sizeof(*r));
    temper_result_set_text(&r->verdict, verdict);
    temper_result_set_text(&r->message, message);
    r->cancelled = (struct temper_opt_bool){cancelled != 0, cancelled != 0};
    r->worker_restarted = (struct temper_opt_bool){worker_restarted != 0, worker_restarted != 0};
}

const struct temper_result_timing *temper_result_first_timing(const struct temper_result *r)
{
    return r->timings.n ? &r->timings.v[0] : NULL;
}

/* ---- writing ---- */

static json_t *record_write(const struct record_desc *d, const void *rec);

static json_t *field_write(const struct field_desc *f, const void *p)
{
    switch (f->kind) {
    case KIND_STR:
        return *(char *const *)p ? json_string(*(char *const *)p) : json_null();
    case KIND_INT: {
        const struct temper_opt_i64 *o = p;
        return o->set ? json_integer((json_int_t)o->v) : json_null();
    }
    case KIND_REAL: {
        const struct temper_opt_f64 *o = p;
        return o->set ? json_real(o->v) : json_null();
    }
    case KIND_BOOL: {
        const struct temper_opt_bool *o = p;
        return o->set ? json_boolean(o->v) : json_null();
    }
    case KIND_JSON:
        return *(json_t *const *)p ? json_incref(*(json_t *const *)p) : json_null();
    case KIND_REC:
        return *(void *const *)p ? record_write(f->sub, *(void *const *)p) : json_null();
    case KIND_LIST: {
        const struct any_list *l = p;
        json_t *a = json_array();
        for (size_t i = 0; i < l->n; i++)
            json_array_append_new(a, record_write(f->sub, (const char *)l->v + i * f->sub->size));
        return a;
    }
    }
    return json_null();
}

static json_t *record_write(const struct record_desc *d, const void *rec)
{
    json_t *o = json_object();
    for (size_t i = 0; i < d->nfields; i++)
        json_object_set_new(o, d->fields[i].name, field_write(&d->fields[i], (const char *)rec + d->fields[i].offset));
    return o;
}

json_t *temper_result_to_json(const struct temper_result *r)
{
    return record_write(&result_desc, r);
}

/* ---- copying ---- */

static int record_copy(const struct record_desc *d, void *dst, const void *src);

static int field_copy(const struct field_desc *f, void *dst, const void *src)
{
    switch (f->kind) {
    case KIND_STR:
        if (*(char *const *)src && !(*(char **)dst = strdup(*(char *const *)src)))
            return TEMPER_ENOMEM;
        return 0;
    case KIND_JSON:
        *(json_t **)dst = json_incref(*(json_t *const *)src);
        return 0;
    case KIND_REC:
        if (!*(void *const *)src)
            return 0;
        if (!(*(void **)dst = calloc(1, f->sub->size)))
            return TEMPER_ENOMEM;
        return record_copy(f->sub, *(void **)dst, *(void *const *)src);
    case KIND_LIST: {
        const struct any_list *from = src;
        struct any_list *to = dst;
        if (!from->n)
            return 0;
        if (!(to->v = calloc(from->n, f->sub->size)))
            return TEMPER_ENOMEM;
        to->n = from->n;
        for (size_t i = 0; i < from->n; i++) {
            int err = record_copy(f->sub, (char *)to->v + i * f->sub->size, (const char *)from->v + i * f->sub->size);
            if (err)
                return err;
        }
        return 0;
    }
    default: /* the scalars were copied with the record */
        return 0;
    }
}

/* dst (of d's size) becomes a copy of src owning its own strings, values and records; on failure
 * dst is freed and zeroed. */
static int record_copy(const struct record_desc *d, void *dst, const void *src)
{
    memcpy(dst, src, d->size);
    for (size_t i = 0; i < d->nfields; i++) /* nothing of src's is owned twice, even on failure */
        if (d->fields[i].kind == KIND_STR || d->fields[i].kind == KIND_JSON || d->fields[i].kind == KIND_REC)
            *(void **)((char *)dst + d->fields[i].offset) = NULL;
        else if (d->fields[i].kind == KIND_LIST)
            memset((char *)dst + d->fields[i].offset, 0, sizeof(struct any_list));
    for (size_t i = 0; i < d->nfields; i++) {
        const struct field_desc *f = &d->fields[i];
        int err = field_copy(f, (char *)dst + f->offset, (const char *)src + f->offset);
        if (err) {
            record_free(d, dst);
            return err;
        }
    }
    return 0;
}

/* ---- each record's own functions ---- */

#define RECORD_FUNCTIONS(sub)                                                                                 \
    json_t *temper_result_##sub##_to_json(const struct temper_result_##sub *rec)                             \
    {                                                                                                         \
        return rec ? record_write(&sub##_desc, rec) : json_null();                                            \
    }                                                                                                         \
    void temper_result_##sub##_free(struct temper_result_##sub *rec)                                         \
    {                                                                                                         \
        if (rec)                                                                                              \
            record_free(&sub##_desc, rec);                                                                    \
    }                                                                                                         \
    int temper_result_##sub##_copy(struct temper_result_##sub *dst, const struct temper_result_##sub *src)   \
    {                                                                                                         \
        return record_copy(&sub##_desc, dst, src);                                                            \
    }
TEMPER_RESULT_RECORDS(RECORD_FUNCTIONS)

json_t *temper_result_normalize(json_t *obj, char *msg, size_t msg_size)
{
    struct temper_result r;
    if (temper_result_from_json(obj, &r, msg, msg_size))
        return NULL;
    r.schema_version.set = 1;
    r.schema_version.v = TEMPER_RESULT_SCHEMA_VERSION;
    json_t *out = temper_result_to_json(&r);
    temper_result_free(&r);
    return out;
}

/* ---- validating ---- */

static int record_validate(const struct record_desc *d, json_t *obj, const struct path *at, char *msg, size_t n);

static int field_validate(const struct field_desc *f, json_t *v, const struct path *at, char *msg, size_t n)
{
    if (json_is_null(v))
        return f->kind == KIND_LIST ? path_fail(msg, n, at, f->name, "a list is empty, never null") : 0;
    struct path sub;
    path_join(&sub, at, f->name, -1);
    switch (f->kind) {
    case KIND_REC:
        if (!json_is_object(v))
            return path_fail(msg, n, at, f->name, "an object was expected");
        return record_validate(f->sub, v, &sub, msg, n);
    case KIND_LIST:
        if (!json_is_array(v))
            return path_fail(msg, n, at, f->name, "an array was expected");
        for (size_t i = 0; i < json_array_size(v); i++) {
            path_join(&sub, at, f->name, (long)i);
            if (!json_is_object(json_array_get(v, i)))
                return temper_fail(msg, n, TEMPER_EPARSE, "result %s: an object was expected", sub.text);
            int err = record_validate(f->sub, json_array_get(v, i), &sub, msg, n);
            if (err)
                return err;
        }
        return 0;
    default: {
        /* The scalar kinds: reading checks their types. */
        union {
            char *s;
            struct temper_opt_i64 i;
            struct temper_opt_f64 r;
            struct temper_opt_bool b;
            json_t *j;
        } tmp;
        memset(&tmp, 0, sizeof(tmp));
        int err = field_read(f, v, &tmp, at, READ_STRICT, msg, n);
        if (f->kind == KIND_STR)
            free(tmp.s);
        if (f->kind == KIND_JSON)
            json_decref(tmp.j);
        return err;
    }
    }
}

static int record_validate(const struct record_desc *d, json_t *obj, const struct path *at, char *msg, size_t n)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) if (!field_find(d, key)) return path_fail(
        msg, n, at, key, "not a field of the %s record (docs/result.md)", d->name);
    for (size_t i = 0; i < d->nfields; i++) {
        json_t *fv = json_object_get(obj, d->fields[i].name);
        if (!fv)
            return path_fail(msg, n, at, d->fields[i].name, "missing (every field is present, null where it does "
                                                           "not apply)");
        int err = field_validate(&d->fields[i], fv, at, msg, n);
        if (err)
            return err;
    }
    return 0;
}

int temper_result_validate(json_t *obj, char *msg, size_t msg_size)
{
    struct path top = {""};
    if (!json_is_object(obj))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "a result must be a JSON object");
    int err = record_validate(&result_desc, obj, &top, msg, msg_size);
    if (err)
        return err;
    json_t *version = json_object_get(obj, "schema_version");
    if (!json_is_integer(version) || json_integer_value(version) != TEMPER_RESULT_SCHEMA_VERSION)
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "result schema_version: %d was expected",
                           TEMPER_RESULT_SCHEMA_VERSION);
    /* A job cancelled while it ran has no verdict; every other result has one, and a message. */
    int cancelled = json_is_true(json_object_get(obj, "cancelled"));
    if ((!cancelled && !json_is_string(json_object_get(obj, "verdict"))) ||
        !json_is_string(json_object_get(obj, "message")))
        return temper_fail(msg, msg_size, TEMPER_EPARSE, "result: verdict (unless cancelled) and message are never null");
    return 0;
}

/* ---- documenting ---- */

static const char *kind_doc(const struct field_desc *f, char *buf, size_t n)
{
    switch (f->kind) {
    case KIND_STR:
        return "string";
    case KIND_INT:
        return "integer";
    case KIND_REAL:
        return "number";
    case KIND_BOOL:
        return "boolean";
    case KIND_JSON:
        return "any JSON";
    case KIND_REC:
        snprintf(buf, n, "%s", f->sub->name);
        return buf;
    case KIND_LIST:
        snprintf(buf, n, "list of %s", f->sub->name);
        return buf;
    }
    return "";
}

static void record_markdown(FILE *out, const struct record_desc *d)
{
    char kind[64];
    fprintf(out, "### %s\n\n| field | type | meaning |\n| --- | --- | --- |\n", d->name);
    for (size_t i = 0; i < d->nfields; i++)
        fprintf(out, "| `%s` | %s | %s |\n", d->fields[i].name, kind_doc(&d->fields[i], kind, sizeof(kind)),
                d->fields[i].doc);
    fputc('\n', out);
}

void temper_result_schema_markdown(FILE *out)
{
    static const struct record_desc *const records[] = {&result_desc,  &check_desc,    &mismatch_desc,
                                                        &difference_desc, &bench_check_desc, &timing_desc,
                                                        &phases_desc,  &device_desc};
    for (size_t i = 0; i < sizeof(records) / sizeof(records[0]); i++)
        record_markdown(out, records[i]);
}

/* A timing people should not trust as it is says so: a spread over 10 % (the samples disagree),
 * or a machine whose load average exceeded its cores while it was taken (the kernel shared the
 * processors). Each such timing gets "warning", and the result a "warnings" list. */
void eval_timing_warnings(struct temper_result *r)
{
    if (!r->timings.n)
        return;
    double load = 0;
    int cores = 0;
    int loaded = temper_machine_load(&load, &cores) && load > (double)cores;
    json_t *warnings = json_array();
    for (size_t i = 0; i < r->timings.n; i++) {
        struct temper_result_timing *t = &r->timings.v[i];
        double spread = t->spread.set ? t->spread.v : 0;
        char text[256] = "";
        if (spread > 0.10)
            snprintf(text, sizeof(text), "spread %.1f%% is over 10%%", spread * 100);
        if (loaded)
            snprintf(text + strlen(text), sizeof(text) - strlen(text),
                     "%sthe load average (%.2f) exceeded the %d cores",
                     text[0] ? "; " : "", load, cores);
        if (!text[0])
            continue;
        temper_result_set_text(&t->warning, text);
        char line[400];
        snprintf(line, sizeof(line), "timing at %s: %s", t->shape ? t->shape : "(null)", text);
        json_array_append_new(warnings, json_string(line));
    }
    if (json_array_size(warnings)) {
        json_decref(r->warnings);
        r->warnings = warnings;
    } else {
        json_decref(warnings);
    }
}
