/* loop_impl.h: the state of one agent run, shared by the loop's steps (loop.c: asking a role,
 * evaluating, tuning) and its driver (run.c: the iterations, the stops, the summary). */
#ifndef TEMPER_LOOP_IMPL_H
#define TEMPER_LOOP_IMPL_H

#include <jansson.h>
#include <stdint.h>

#include "agent_impl.h"
#include "temper/session.h"
#include "temper/store.h"
#include "temper/task.h"
#include "util/util.h"

/* The model behind the loop: a live endpoint or a replay (the chat client's call's shape). */
typedef int (*loop_complete_fn)(void *model, const struct temper_chat_message *m, int n, temper_chat_exchange_cb cb,
                                void *user, struct temper_chat_reply *reply, char *msg, size_t msg_size);

/* One run of the loop. */
struct loop {
    struct temper_agent_config cfg;   /* the settings, defaults filled in */
    struct temper_task task;          /* the task */
    char lang[16];                    /* "cuda" or "opencl" */
    struct temper_store *store;       /* the agent's own connection to the store */
    struct temper_session *session;   /* evaluations and tunes */
    int64_t session_id;               /* the agent_sessions row */
    loop_complete_fn complete;        /* the model */
    void *model;                      /* its context */
    json_t *constraints;              /* a person's constraints (strings) */
    char *examples;                   /* the retrieved examples section; owned, may be NULL */
    char *reflection;                 /* the judge's last reflection; owned, may be NULL */
    json_t *attempts;                 /* recent attempts, one line each (bounded by cfg.history) */
    struct agent_population pop;      /* the islands */
    struct temper_rng rng;            /* draws parents */
    int evaluated;                    /* kernels submitted so far (names them) */
    int made;                         /* kernels the model (or a person) made, the budget's count */
    int since_better;                 /* kernels since the best last improved */
    int calls;                        /* model calls answered */
    int64_t tokens_in;                /* tokens read, as the endpoint counted */
    int64_t tokens_out;               /* tokens written */
    json_t *outcomes;                 /* {outcome: count} */
    /* the best kernel */
    json_t *best;                     /* its result (owned reference) */
    char *best_source;                /* its text; owned */
    int64_t best_eval_id;             /* its evaluation */
    double best_ms;                   /* its time; INFINITY if not timed */
    char best_by[16];                 /* who made it */
    double start_ms;                  /* the starting kernel's time; INFINITY if not timed */
    double made_share;                /* the largest roofline share of a correct, timed kernel the model
                                       * (or a person) made; 0 before there is one */
    int stop;                         /* 1: a stop was reached */
    int interrupted;                  /* 1: the stop was cfg.interrupted's */
    int iteration;                    /* the iteration running, from 1; 0 before the first */
    char stop_reason[256];            /* why */
    char msg[4096];                   /* the last error's words */
};

/* A progress line for people. */
void loop_line(struct loop *L, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* 1 once cfg.interrupted has said so (polled here, between steps): the loop stops, its stop
 * reason saying where. */
int loop_interrupted(struct loop *L);
/* Asks a role with these sections (constraints and examples are added); records the prompt and
 * every exchange. *reply is the caller's to free (temper_chat_reply_free) when 0 is returned. */
int loop_ask(struct loop *L, enum agent_role role, struct agent_sections *sec, struct temper_chat_reply *reply,
             int64_t *prompt_id, int64_t *call_id);
/* Evaluates a kernel through the session, with its lineage; *result is the caller's to decref. */
int loop_evaluate(struct loop *L, const char *source, const char *role, int64_t parent_eval, int64_t prompt_id,
                  json_t **result);
/* Tunes a kernel's knobs through the session; *tuned (caller decrefs) gets the best point's
 * correct result, or NULL. */
int loop_tune(struct loop *L, const char *source, json_t **tuned);

/* ---- run.c ---- */

/* The settings a session records and a replay takes back (caller decrefs). */
json_t *agent_run_settings(const struct loop *L, const char *start_source);
void agent_run_take_settings(struct temper_agent_config *c, json_t *settings);
/* Fills the defaults the config's comments name. */
void agent_run_defaults(struct temper_agent_config *c);
/* One iteration: a parent, a plan, the coder's samples and what follows from each. */
int agent_run_iterate(struct loop *L, int iteration);
/* The session's notices and warnings, as progress lines (user: the loop). */
void agent_run_session_event(void *user, const struct temper_session_event *ev);

/* The live and replay backends (loop.c). */
int loop_live_complete(void *ctx, const struct temper_chat_message *m, int n, temper_chat_exchange_cb cb, void *user,
                       struct temper_chat_reply *reply, char *msg, size_t msg_size);
/* A replay's context: the recorded replies (borrowed array of {"api", "reply"}). */
struct loop_replay {
    json_t *replies; /* the replies */
    size_t next;     /* the next to serve */
};
int loop_replay_complete(void *ctx, const struct temper_chat_message *m, int n, temper_chat_exchange_cb cb,
                         void *user, struct temper_chat_reply *reply, char *msg, size_t msg_size);

#endif
