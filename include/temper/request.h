/* request.h: one evaluation request, the same struct wherever a request travels (the command line,
 * the HTTP API, MCP, the queue's items, the session and the evaluation pipeline): the candidate,
 * its knob values (typed), the options and the lineage. One JSON codec reads and writes it in the
 * gym's item form (docs/openapi.yaml), and one function turns a knob value into the text the
 * compiler gets. */
#ifndef TEMPER_REQUEST_H
#define TEMPER_REQUEST_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* What a knob value is. */
enum temper_knob_kind {
    TEMPER_KNOB_INT,  /* an integer: i */
    TEMPER_KNOB_REAL, /* a real number: r */
    TEMPER_KNOB_TEXT, /* text, as written: text */
};

/* One knob's value. Strings are borrowed in a request a client builds; a request the library made
 * (temper_request_from_json, temper_request_copy) owns them. */
struct temper_knob_value {
    const char *name;           /* the knob (`@temper param NAME`) */
    enum temper_knob_kind kind; /* which of i, r, text holds the value */
    int64_t i;                  /* TEMPER_KNOB_INT's value */
    double r;                   /* TEMPER_KNOB_REAL's value */
    const char *text;           /* TEMPER_KNOB_TEXT's value */
};

/* The text a knob value is given to the compiler as (-DNAME=TEXT) and recorded with: an integer in
 * decimal ("%lld"), a real with 17 significant digits ("%.17g"), text as written. Every place that
 * turns a value into text calls this. Returns what snprintf does (the length it needs). */
int temper_knob_value_text(const struct temper_knob_value *v, char *out, size_t out_size);
/* "NAME=TEXT", the form temper_knobs_set takes; returns what snprintf does. */
int temper_knob_value_assignment(const struct temper_knob_value *v, char *out, size_t out_size);

/* The members of a request, listed once: struct temper_request is made of them, and the session's
 * and the evaluation's requests hold them both as .request and by name (.path, .seed, ...), so that
 * a request passes from one to the other whole. What the fields mean in detail:
 *   source_len: every byte is judged and hashed; reuse_same_code: a repeat of an earlier request's
 *   source, knobs and compiled code in the same worker takes that result ("same_code_as"); knobs:
 *   a person's `--set NAME=VALUE` and a tune's point are TEMPER_KNOB_TEXT values, as written, a
 *   JSON client's numbers TEMPER_KNOB_INT or _REAL; a later value of a knob overrides an earlier. */
#define TEMPER_REQUEST_MEMBERS                                                                                      \
    /* the candidate */                                                                                             \
    const char *path;                       /* the candidate's file, or the name its text goes by (an item's id) */ \
    const char *source;                     /* its text, any bytes (a NUL makes it invalid); NULL: read path */     \
    size_t source_len;                      /* source's length in bytes; 0: strlen(source) */                       \
    const char *lang;                       /* "cuda" or "opencl", over path's extension; NULL: from it */          \
    const char *task;                       /* the task the client names (the API checks it); NULL: none */         \
    /* knobs, set over the candidate's defaults in order */                                                         \
    const struct temper_knob_value *knobs;  /* typed knob values, nknobs of them, or NULL */                        \
    int nknobs;                             /* how many */                                                          \
    /* options */                                                                                                   \
    int no_timing;                          /* 1: correctness only */                                               \
    uint64_t seed;                          /* the public seed; 0: 1 */                                             \
    uint64_t secret_seed;                   /* the secret seed; 0: drawn for its batch */                           \
    double time_budget_s;                   /* timing budget per bench shape; 0: the default */                     \
    const char *extra_flags;                /* compiler options after the candidate's own, or NULL */               \
    int checks_only;                        /* 1: check shapes only, no bench shapes */                             \
    int profile_run;                        /* 1: no checks; one run at the first bench shape */                    \
    int reuse_same_code;                    /* 1: a repeat of the same code in a worker takes its result */         \
    int keep_going;                         /* 1: check every shape after a failure */                              \
    int sanitize;                           /* (session, CUDA) TEMPER_SANITIZE_REPORT or _STRICT; 0: no */          \
    int profile;                            /* (session, CUDA) 1: Nsight Compute on a correct kernel */             \
    int no_store;                           /* (session) 1: do not record the result */                             \
    /* lineage */                                                                                                   \
    int64_t parent_id;                      /* the result it came from (a store row id); 0: none */                 \
    const char *made_by;                    /* the operator or client that made it (an item's origin) */            \
    const char *batch_id;                   /* the batch it belongs to, or NULL */

/* One evaluation request. Zero is every default. */
struct temper_request {
    TEMPER_REQUEST_MEMBERS
};

/* Reads a gym item ({"id", "source", "lang", "task", "knobs": {NAME: integer or text}, "options":
 * {"timing", "seed", "keep_going", "checks_only", "time_budget_s"}, "parent", "origin"}) strictly:
 * an unknown key, a value of the wrong type or out of its range is refused with a message naming
 * it, where (such as "items[3]") first. A source over max_source_bytes (0: no limit) is refused
 * too. *kind gets the gym's error kind: "invalid_request", "invalid_id" or "source_too_large"
 * (NULL: not wanted). A knob that is an integer (5 or 5.0) is TEMPER_KNOB_INT, text is
 * TEMPER_KNOB_TEXT. The item's id is the request's path. *req owns copies of every string; the
 * caller frees it with temper_request_free, also after a refusal. */
int temper_request_from_json(json_t *item, const char *where, size_t max_source_bytes, struct temper_request *req,
                             const char **kind, char *msg, size_t msg_size);
/* The request as a gym item (caller decrefs), which temper_request_from_json reads back: the keys
 * the item form has, each only when set (path as "id"); the other options (secret seed, flags, deep
 * checks, ...) are not part of an item and are not written. NULL when out of memory. */
json_t *temper_request_to_json(const struct temper_request *req);

/* Copies src into *dst, every string, the source's source_len bytes (plus a NUL) and the knobs
 * included; the caller frees it with temper_request_free. */
int temper_request_copy(struct temper_request *dst, const struct temper_request *src);
/* Frees what a request made by temper_request_from_json or temper_request_copy owns, and zeroes it.
 * NULL is ignored. */
void temper_request_free(struct temper_request *req);

/* 1 when id is 1 to 128 of [A-Za-z0-9._:-], not only dots: an item's id, a batch's. */
int temper_request_id_ok(const char *id);

#endif
