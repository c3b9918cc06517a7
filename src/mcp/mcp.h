/* mcp.h: `temper mcp`, a Model Context Protocol server over stdio (newline-delimited JSON-RPC
 * 2.0), internal to the temper binary. server.c reads messages, answers the protocol (both eras:
 * the initialize handshake of 2024-11-05 to 2025-11-25, and 2026-07-28's per-request _meta) and
 * runs each tools/call on a thread of its own; tools.c and tools_eval.c are the tools, which reach
 * evaluations only through the session API (include/temper/session.h); call.c is what a call may
 * do (write, share the session, learn of a cancel, send progress); schema_check.c checks a
 * call's arguments against the tool's input schema. Files call down only: server.c -> tools.c ->
 * tools_*.c -> call.c. docs/mcp.md describes it for people. */
#ifndef TEMPER_MCP_H
#define TEMPER_MCP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "temper/result.h"
#include "temper/session.h"

/* The largest message (one line) the server reads; a longer line is answered with an error and
 * skipped. Large enough for a source at TEMPER_SOURCE_MAX escaped as JSON. */
#define MCP_MESSAGE_MAX (16u << 20)
/* Tool calls running at once; one more is answered with an error. */
#define MCP_MAX_CALLS 64
/* Bytes of a compile log quoted in a failed evaluation's text (the whole log is in the
 * structured result). */
#define MCP_LOG_QUOTE 3000

/* How the server was started (`temper mcp` options); strings borrowed for the server's life. */
struct mcp_config {
    const char *device;     /* the session's device; NULL: the first evaluate's, else the default */
    const char *store_path; /* the store; NULL: $TEMPER_HOME/temper.db */
    const char *tasks_dir;  /* where tasks are looked up; NULL: the default folders */
};

/* Serves one client: reads messages from in_fd until end of file, writes only JSON-RPC messages
 * to out_fd. At end of file, stops running tunes (each still answers with what it has), waits for
 * every call in flight, closes the session and returns 0; nonzero only when the server could not
 * start (msg says why). */
int mcp_serve(const struct mcp_config *config, int in_fd, int out_fd, char *msg, size_t msg_size);

struct mcp_server; /* opaque: the connection, the lazily opened session and the calls in flight */
struct mcp_call;   /* opaque: one tools/call in flight */

/* ---- what a tool call may do (call.c) ---- */

/* The server's session, opened on first use (on device, or the server's --device; NULL: the
 * default); borrowed until the server ends. A device other than the open session's is an error
 * (TEMPER_EINVALID, msg says which device the server is on). */
int mcp_session(struct mcp_call *call, const char *device, struct temper_session **s, char *msg, size_t msg_size);
/* The server's configuration (borrowed). */
const struct mcp_config *mcp_call_config(struct mcp_call *call);
/* 1 once the client cancelled the call (notifications/cancelled): its answer is never sent. */
int mcp_call_cancelled(struct mcp_call *call);
/* Ties an evaluation (a session request id, 0: none) to the call, so that a cancel cancels it;
 * returns 1 if the call was cancelled already (the caller cancels it itself then). */
int mcp_call_watch_eval(struct mcp_call *call, struct temper_session *s, int64_t id);
/* Ties a tune to the call (NULL: none any more), so that a cancel, or the end of the input,
 * stops it; returns 1 if the call was cancelled or the server is ending (the caller stops it). */
int mcp_call_watch_tune(struct mcp_call *call, struct temper_session_tune *t);
/* Sends notifications/progress for the call when its request carried a progressToken
 * (total < 0: unknown); a no-op otherwise. */
void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message);

/* ---- the tools ---- */

/* A tool: its handler gets the checked arguments (borrowed) and returns a CallToolResult (content,
 * structuredContent, isError; the caller's), or NULL when the call was cancelled (no answer). */
struct mcp_tool {
    const char *name;         /* as in tools/call */
    const char *title;        /* for people */
    const char *description;  /* for the model */
    const char *input_schema; /* JSON Schema text of the arguments */
    const char *output_schema; /* JSON Schema text of structuredContent */
    int read_only;            /* 1: changes nothing (annotations.readOnlyHint) */
    json_t *(*run)(struct mcp_call *call, json_t *args);
};

/* The tools, in tools/list order; *n gets their number. */
const struct mcp_tool *mcp_tools(size_t *n);
const struct mcp_tool *mcp_tool_find(const char *name);
/* A tool's input schema as tools/list gives it and calls are checked against (the caller's). */
json_t *mcp_tool_input_schema(const struct mcp_tool *tool);

/* A CallToolResult: a text block for people and the model, then (when structured is not NULL)
 * the structured result itself and its JSON as a second text block. Takes structured's
 * reference; text is copied. */
json_t *mcp_tool_result(json_t *structured, const char *text, int is_error);

/* The tools' handlers (tools_tasks.c, tools_eval.c). */
json_t *mcp_tool_list_tasks(struct mcp_call *call, json_t *args);
json_t *mcp_tool_show_task(struct mcp_call *call, json_t *args);
json_t *mcp_tool_best_kernel(struct mcp_call *call, json_t *args);
json_t *mcp_tool_history(struct mcp_call *call, json_t *args);
json_t *mcp_tool_search_knowledge(struct mcp_call *call, json_t *args);
json_t *mcp_tool_evaluate(struct mcp_call *call, json_t *args);
json_t *mcp_tool_profile(struct mcp_call *call, json_t *args);
json_t *mcp_tool_tune(struct mcp_call *call, json_t *args);

/* The text of a failed evaluation for the model: verdict, message, failing shape and element,
 * the compile log's first MCP_LOG_QUOTE bytes (tools_eval.c). Caller frees. */
char *mcp_result_text(const struct temper_result *r);

/* ---- argument checks (schema_check.c) ---- */

/* Checks value against a JSON Schema (the subset the tools' schemas use: type, properties,
 * required, additionalProperties, enum, minimum, maximum, minLength, maxLength (in bytes),
 * items). On a mismatch returns nonzero with the path of the bad value ("arguments.knobs.BLOCK")
 * in path and the reason in msg. */
int mcp_schema_check(json_t *schema, json_t *value, const char *root, char *path, size_t path_size, char *msg,
                     size_t msg_size);

#endif
