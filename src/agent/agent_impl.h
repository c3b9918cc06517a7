/* agent_impl.h: what the agent's files share: the agent's tables in the store (agent_store.c),
 * the prompts built from named, bounded sections (prompt.c), and the model behind the loop: a
 * live endpoint or a replay of a recorded session (loop.c). */
#ifndef TEMPER_AGENT_IMPL_H
#define TEMPER_AGENT_IMPL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/agent.h"
#include "temper/store.h"
#include "temper/task.h"
#include "util/util.h"

/* ---- the store's agent tables (docs/store.md) ---- */

/* Records a new agent session (settings: the loop's configuration, never the key); *id its row. */
int agent_store_session_begin(struct temper_store *s, const char *task, const char *device, const char *api,
                              const char *endpoint, const char *model, json_t *settings, int64_t replay_of,
                              int64_t *id, char *msg, size_t msg_size);
int agent_store_session_finish(struct temper_store *s, int64_t id, int64_t best_eval_id, json_t *summary, char *msg,
                               size_t msg_size);
/* A session's row as an object (task, device, api, endpoint, model, settings), or NULL. Caller decrefs. */
json_t *agent_store_session_get(struct temper_store *s, int64_t id);
/* Records a prompt (the messages as a JSON array of {role, content}); *id its row. */
int agent_store_prompt(struct temper_store *s, int64_t session_id, const char *role, json_t *messages, int64_t *id,
                       char *msg, size_t msg_size);
/* Records one HTTP exchange of a prompt; *id its row. */
int agent_store_call(struct temper_store *s, int64_t session_id, int64_t prompt_id,
                     const struct temper_chat_exchange *ex, int64_t *id, char *msg, size_t msg_size);
/* One candidate the agent made. */
struct agent_candidate_row {
    int64_t session_id;     /* its agent session */
    int64_t prompt_id;      /* the prompt that asked for it; 0: none (the starting kernel) */
    int64_t call_id;        /* the call whose reply held it; 0: none */
    const char *role;       /* "start", "coder", "debugger", "person" */
    int64_t parent_eval_id; /* the evaluation of the kernel it came from; 0: none */
    int64_t eval_id;        /* its evaluation's row; 0: not evaluated */
    int island;             /* the island it went to; -1: none */
    const char *features;   /* its features as text, or NULL */
    const char *source;     /* its text, or NULL (no code in the reply) */
    const char *outcome;    /* the verdict, or no_code / cut_off / rejected */
    double median_ms;       /* its time (tuned, where tuned); NAN: none */
    const char *note;       /* why, for people (the plan, the feedback) */
};
int agent_store_candidate(struct temper_store *s, const struct agent_candidate_row *row, char *msg, size_t msg_size);
/* The replies of a session's successful calls, oldest first: an array of {"api", "reply"}
 * (the recorded bodies). Caller decrefs; NULL on a store failure. */
json_t *agent_store_replies(struct temper_store *s, int64_t session_id);

/* ---- prompts ---- */

/* The sections a prompt is made of; each has a name and a hard bound on its length. */
enum agent_section {
    AGENT_SEC_TASK,        /* specification, signature, shapes, FLOP and byte models, tolerance */
    AGENT_SEC_DEVICE,      /* the device query and the measured ceilings */
    AGENT_SEC_BEST,        /* the current best kernel: verdict, time, roofline share, bottleneck */
    AGENT_SEC_PARENT,      /* the kernel to start from (its source) */
    AGENT_SEC_ATTEMPTS,    /* recent attempts, bounded, errors truncated */
    AGENT_SEC_REFLECTION,  /* what to avoid, what to try */
    AGENT_SEC_CONSTRAINTS, /* a person's constraints */
    AGENT_SEC_EXAMPLES,    /* retrieved examples and guides */
    AGENT_SEC_PLAN,        /* the planner's strategy */
    AGENT_SEC_FEEDBACK,    /* a failed kernel and what the harness said */
    AGENT_SEC_RESULT,      /* a judged kernel's result */
    AGENT_SEC_TARGET,      /* what faster means */
    AGENT_SEC_CONTRACT,    /* the output contract */
    AGENT_SEC_COUNT
};

/* The agent's roles, each its own system prompt. */
enum agent_role { AGENT_PLANNER, AGENT_CODER, AGENT_DEBUGGER, AGENT_JUDGE, AGENT_ROLE_COUNT };

/* The text of each section for one prompt ("" or NULL: left out). Borrowed. */
struct agent_sections {
    const char *text[AGENT_SEC_COUNT]; /* by enum agent_section */
};

const char *agent_role_name(enum agent_role role);
const char *agent_section_name(enum agent_section sec);
/* The role's system prompt (a constant). */
const char *agent_system_prompt(enum agent_role role);
/* The user message of a role: its sections in order, each under "## <name>" and cut to its
 * bound. Caller frees. */
char *agent_user_prompt(enum agent_role role, const struct agent_sections *sec);

/* Section texts built from what the loop knows; each returns a string the caller frees. */
char *agent_section_task(const struct temper_task *task, const char *lang);
char *agent_section_device(json_t *device_info, json_t *ceilings);
/* result: the best's result (NULL: none yet); source: its text; label: who made it. */
char *agent_section_best(json_t *result, const char *label);
char *agent_section_result(json_t *result, int error_chars);
char *agent_section_target(json_t *best_result, const char *baseline_label, int no_timing);
char *agent_section_contract(const struct temper_task *task, const char *lang);
/* The kernel's source under a heading, fenced. */
char *agent_section_source(const char *heading, const char *source, const char *lang);

/* What a result says, for feedback: the verdict, the message, the compile log and failed checks,
 * cut to error_chars. Caller frees. */
char *agent_result_feedback(json_t *result, int error_chars);
/* The time (ms), roofline share, speedup and bound of a timed correct result, NAN (bound NULL)
 * where absent; the bound is a constant ("memory" or "compute"), valid after the result is gone. */
void agent_result_numbers(json_t *result, double *median_ms, double *share, double *speedup, const char **bound);

/* ---- the population: islands of correct kernels, kept diverse by their features ---- */

/* One kernel of the population. */
struct agent_member {
    int64_t eval_id;                    /* its evaluation (the tuned one where tuned) */
    char *source;                       /* its text; owned */
    json_t *result;                     /* its result; owned reference */
    double ms;                          /* its time; INFINITY when not timed */
    struct temper_kernel_features f;    /* what it does */
    char made_by[16];                   /* start, coder, debugger, person */
};

/* Invariant: island i holds count[i] <= cap members at m[i * cap ...], no two with equal features. */
struct agent_population {
    int nislands;               /* islands */
    int cap;                    /* members an island holds at most */
    int *count;                 /* members of each island */
    struct agent_member *m;     /* nislands * cap slots */
};

int agent_pop_init(struct agent_population *p, int nislands, int cap);
void agent_pop_free(struct agent_population *p);
/* Offers a kernel to an island: it replaces a member with the same features only when faster,
 * else takes a free slot, else replaces the slowest member when faster. The population copies
 * source and references result. Returns 1 if it was taken. */
int agent_pop_offer(struct agent_population *p, int island, int64_t eval_id, const char *source, json_t *result,
                    double ms, const char *made_by);
/* A parent from an island: the faster of two drawn at random (borrowed); NULL if it is empty. */
const struct agent_member *agent_pop_parent(const struct agent_population *p, int island, struct temper_rng *rng);
/* Offers each island's fastest member to the next island. */
void agent_pop_migrate(struct agent_population *p);

#endif
