/* agent.h: temper's agent, where language models write kernels. Three parts, each usable alone:
 * a chat client for OpenAI-compatible endpoints (vLLM, SGLang, llama.cpp's server, Ollama,
 * hosted APIs) and Anthropic's Messages API; the reading of a model's reply (reasoning apart
 * from the answer, the fenced kernel, the features of a kernel's text); and the loop that drives
 * planner, coder, debugger and judge prompts against a task through a session
 * (include/temper/session.h), recording every request, reply and candidate in the store.
 * docs/agent.md describes the loop, the prompts' sections and the store's tables. */
#ifndef TEMPER_AGENT_H
#define TEMPER_AGENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ---- the chat client ---- */

/* The shape of the HTTP API. */
enum temper_chat_api {
    TEMPER_CHAT_OPENAI,    /* POST <endpoint>/chat/completions */
    TEMPER_CHAT_ANTHROPIC, /* POST <endpoint>/v1/messages */
};

/* Which field carries the reply's token limit. */
enum temper_chat_token_param {
    TEMPER_CHAT_TOKENS_AUTO,       /* max_tokens, switching to max_completion_tokens for good when a
                                    * 400 answer names it (OpenAI's newer models) */
    TEMPER_CHAT_TOKENS_MAX,        /* always max_tokens */
    TEMPER_CHAT_TOKENS_COMPLETION, /* always max_completion_tokens (OpenAI API only) */
};

/* How to reach a model. Zero means the default where one is named. Strings are copied. */
struct temper_chat_config {
    enum temper_chat_api api;                /* the API's shape */
    const char *endpoint;                    /* base URL ("http://127.0.0.1:8000/v1"); required */
    const char *model;                       /* the model's name; required */
    const char *key_env;                     /* the environment variable holding the key; NULL: none.
                                              * The key is read at open, sent in a header, never
                                              * stored, logged or put in a message */
    double temperature;                      /* sampling temperature; negative: not sent */
    int max_tokens;                          /* token limit of one reply; 0: 8192 */
    enum temper_chat_token_param token_param; /* which field names it (OpenAI API) */
    double timeout_s;                        /* limit on one HTTP attempt; 0: 600 */
    double connect_timeout_s;                /* limit on connecting; 0: 10 */
    int retries;                             /* attempts after the first on 429, 5xx and connection
                                              * errors; negative: 4 */
    double backoff_s;                        /* base of the exponential backoff; 0: 1 */
    double backoff_max_s;                    /* cap on one wait, Retry-After's included; 0: 120 */
    uint64_t seed;                           /* the jitter's seed; 0: unpredictable */
};

/* One message of a conversation (borrowed by the call). */
struct temper_chat_message {
    const char *role;    /* "system", "user" or "assistant" */
    const char *content; /* its text */
};

/* A model's reply. Owned: free with temper_chat_reply_free. */
struct temper_chat_reply {
    char *content;         /* the answer, reasoning removed ("" if none) */
    char *reasoning;       /* reasoning text (`reasoning`, `reasoning_content`, thinking blocks,
                            * <think>...</think> in the content), "" if none */
    char *finish_reason;   /* as the API says it ("stop", "length", "end_turn", "max_tokens", ...) */
    int truncated;         /* 1: cut off at the token limit (length / max_tokens) */
    int64_t prompt_tokens;     /* tokens read, as the endpoint counts them; -1 unknown */
    int64_t completion_tokens; /* tokens written; -1 unknown */
    double latency_ms;     /* the whole call, retries and waits included */
    int attempts;          /* HTTP attempts made */
};

/* One HTTP attempt, for the record. Everything is borrowed for the callback's duration. */
struct temper_chat_exchange {
    int attempt;                            /* 1 for the first */
    const char *url;                        /* where it went */
    const char *request;                    /* the JSON body sent (the key is never in it) */
    long status;                            /* the HTTP status; 0 when no answer came */
    const char *reply;                      /* the body received, or NULL */
    double latency_ms;                      /* this attempt */
    const char *error;                      /* why it failed, NULL when it gave a reply */
    const struct temper_chat_reply *parsed; /* the reply read from it, NULL when it failed */
};

/* Receives each attempt (on the calling thread). */
typedef void (*temper_chat_exchange_cb)(void *user, const struct temper_chat_exchange *ex);

struct temper_chat; /* opaque: a configured client (one curl handle); one call at a time */

/* Checks the configuration and reads the key. TEMPER_EINVALID naming what is wrong (no endpoint,
 * no model, a key variable that is not set). Caller closes with temper_chat_close. */
int temper_chat_open(const struct temper_chat_config *config, struct temper_chat **c, char *msg, size_t msg_size);
void temper_chat_close(struct temper_chat *c);
/* Sends a conversation and reads the reply into *reply (caller frees with
 * temper_chat_reply_free), retrying 429, 5xx and connection errors with exponential backoff and
 * full jitter, waiting what Retry-After says where it says it, never retrying a quota or billing
 * error; a 200 whose body is not the API's answer is retried as a 5xx is. cb (optional) sees every attempt. Fails with TEMPER_EIO (the endpoint cannot be reached
 * or kept failing), TEMPER_EINVALID (it refused the request: a 4xx, a quota error) or
 * TEMPER_EPARSE (an answer that is not the API's), the message saying which and why. */
int temper_chat_complete(struct temper_chat *c, const struct temper_chat_message *messages, int n,
                         temper_chat_exchange_cb cb, void *user, struct temper_chat_reply *reply, char *msg,
                         size_t msg_size);
void temper_chat_reply_free(struct temper_chat_reply *reply);
/* Reads a reply body of the API into *reply (caller frees): what temper_chat_complete does with
 * an answer, and what a replay does with a recorded one. */
int temper_chat_parse(enum temper_chat_api api, const char *body, struct temper_chat_reply *reply, char *msg,
                      size_t msg_size);
/* Parses "openai" or "anthropic"; -1 for anything else. */
int temper_chat_api_parse(const char *name);
const char *temper_chat_api_name(enum temper_chat_api api);

/* ---- reading a reply ---- */

/* Moves every <think>...</think> block of text (an unclosed one runs to the end) into
 * *reasoning; *answer gets the rest. Both are the caller's to free. */
int temper_agent_split_think(const char *text, char **answer, char **reasoning);

/* What fenced code a reply holds. */
enum temper_agent_code {
    TEMPER_AGENT_CODE_FOUND,  /* a closed fenced block */
    TEMPER_AGENT_CODE_NONE,   /* no fenced block */
    TEMPER_AGENT_CODE_CUTOFF, /* a fence opened and never closed (a reply cut off) */
};
/* Finds the kernel in a reply: the first closed fenced block holding an `@temper` directive, else
 * the longest closed one. *code (caller frees) gets its text, or NULL. */
enum temper_agent_code temper_agent_extract_code(const char *text, char **code);

/* What a kernel's text shows of how it works: what keeps a population diverse. */
struct temper_kernel_features {
    int tiled;        /* loops over tiles (TILE/BLOCK_K-style constants indexing 2-D shared arrays) */
    int vector_width; /* widest vector type or load used (float4, vload4, half2: 4, 2); 1: scalar */
    int shared_mem;   /* 1: uses __shared__ (CUDA) or __local (OpenCL) memory */
    int tensor_cores; /* 1: wmma, mma.sync, wgmma or a tensor-core builtin */
    int warp_shuffle; /* 1: __shfl_* or sub_group_* reductions */
    int launches;     /* number of `@temper launch` directives (fewer: more fused) */
    int knobs;        /* number of `@temper param` directives */
};
/* Reads the features of a kernel's source text. */
void temper_kernel_features_detect(const char *source, struct temper_kernel_features *f);
/* The features as short text ("tiled vec4 shared shuffle launches=1"), for prompts and the store. */
void temper_kernel_features_format(const struct temper_kernel_features *f, char *out, size_t out_size);

/* ---- the loop ---- */

/* A person's answer to one proposal (--interactive). */
enum temper_agent_decision {
    TEMPER_AGENT_ACCEPT, /* keep it (a correct one joins the population) */
    TEMPER_AGENT_REJECT, /* drop it: it joins nothing and is recorded as rejected */
    TEMPER_AGENT_EDIT,   /* evaluate edited instead, as the person's candidate, in its place */
    TEMPER_AGENT_STOP,   /* end the run here */
};

/* What the person said. The loop frees edited and constraint. */
struct temper_agent_review {
    enum temper_agent_decision decision; /* what to do with the proposal */
    char *edited;                        /* with TEMPER_AGENT_EDIT: the new source (malloc'd) */
    char *constraint;                    /* a constraint every later prompt carries, or NULL (malloc'd) */
};

/* Shows a proposal (source, and its result, borrowed) to a person and fills *review. */
typedef void (*temper_agent_review_cb)(void *user, const char *source, json_t *result,
                                       struct temper_agent_review *review);
/* Receives one line of progress for people. */
typedef void (*temper_agent_line_cb)(void *user, const char *line);

/* The loop's settings. Zero means the default named. Strings are borrowed for the call. */
struct temper_agent_config {
    const char *task;            /* the task's name; required unless replay_of is set */
    const char *tasks_dir;       /* where tasks are found; NULL: the default */
    const char *device;          /* "cuda[:N]" or "opencl[:N]"; NULL: the session's default */
    const char *store_path;      /* NULL: $TEMPER_HOME/temper.db */
    const char *lang;            /* "cuda" or "opencl"; NULL: the device's */
    const char *from;            /* the kernel to start from; NULL: the task's baseline */
    int budget;                  /* kernels the model writes at most (coder and debugger); 0: 12 */
    int samples;                 /* coder replies per plan; 0: 1 */
    int islands;                 /* islands of the population; 0: 2 */
    int island_size;             /* kernels an island keeps; 0: 4 */
    int debug_rounds;            /* repairs of one failing kernel; negative: 1 */
    int tune_budget;             /* evaluations of a tune of a correct kernel with knobs; 0: 8;
                                  * negative: no tuning */
    int no_timing;               /* 1: correctness only (no tuning, no judge) */
    int profile;                 /* 1 (CUDA): profile correct kernels with Nsight Compute, so that the
                                  * prompts carry its metrics */
    double time_budget_s;        /* timing budget per bench shape; 0: the harness's default */
    double target_share;         /* stop at this roofline share; 0: 0.8 */
    int plateau;                 /* stop after this many kernels without a better one; 0: 6 */
    int64_t max_tokens_total;    /* stop past this many tokens (read and written); 0: no limit */
    double max_cost;             /* stop past this cost; 0: no limit */
    double price_in;             /* cost of a million tokens read */
    double price_out;            /* cost of a million tokens written */
    int history;                 /* recent attempts a prompt shows; 0: 6 */
    int error_chars;             /* characters of an error a prompt shows; 0: 1500 */
    uint64_t seed;               /* draws parents; 0: 1 */
    const char *knowledge_dir;   /* the guides (knowledge/); NULL: the default search */
    const char *const *constraints; /* a person's constraints from the start, NULL-terminated, or NULL */
    int64_t replay_of;           /* nonzero: re-evaluate this agent session's recorded replies,
                                  * with its settings, without an endpoint */
    int dry_run;                 /* 1: write the prompts to *prompts and call no model */
    struct temper_chat_config chat; /* the endpoint (not used by a replay or a dry run) */
    temper_agent_line_cb on_line;   /* progress; NULL: none */
    void *line_user;                /* passed to on_line */
    temper_agent_review_cb review;  /* a person reviews each proposal; NULL: none */
    void *review_user;              /* passed to review */
    int (*interrupted)(void *user); /* polled between steps (a model call, an evaluation, a tune's
                                     * evaluation): nonzero stops the loop there, the session is
                                     * finished as interrupted; NULL: never (thread-safe: it may be
                                     * set from another thread) */
    void *interrupt_user;           /* passed to interrupted */
};

/* Runs the loop (docs/agent.md): evaluates the starting kernel, then asks the planner, coder,
 * debugger and judge in turn, keeps a population of correct kernels on islands, tunes their
 * knobs, and stops at the target share, a plateau, the budget, or the token or cost limit. Every
 * prompt, model call and candidate is recorded in the store with its lineage. *summary (caller
 * decrefs) says what was found: "found_better" is true when a kernel the model wrote is correct
 * and faster than the starting one (with no_timing: correct), and "best" describes the best
 * kernel; "interrupted" is true when the interrupted callback stopped it (then "stop_reason" says
 * where); with dry_run, *prompts (caller frees) gets the prompts instead and nothing runs.
 * Errors: TEMPER_ENODEVICE, TEMPER_EINVALID / TEMPER_ENOTFOUND for bad settings or an unknown
 * task or run, TEMPER_ESTORE, and the chat client's errors when the first call fails. */
int temper_agent_run(const struct temper_agent_config *config, json_t **summary, char **prompts, char *msg,
                     size_t msg_size);
/* Writes the best kernel of a summary to path, its tuned knobs fixed. */
int temper_agent_write_best(json_t *summary, const char *path, char *msg, size_t msg_size);

#endif
