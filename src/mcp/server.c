/* server.c: the protocol half of `temper mcp`: reads newline-delimited JSON-RPC from one
 * descriptor on one thread, answers it on another descriptor under a write lock (one message per
 * line, nothing else), and runs every tools/call on a thread of its own, so that a call made
 * while a tune runs is answered at once. Both protocol eras are served (docs/mcp.md): the legacy
 * initialize handshake (2024-11-05 to 2025-11-25) and the modern per-request
 * params._meta["io.modelcontextprotocol/protocolVersion"] (2026-07-28), with server/discover
 * and resultType. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mcp.h"
#include "server_impl.h"
#include "temper/error.h"

#define META_VERSION "io.modelcontextprotocol/protocolVersion"
#define META_CAPS "io.modelcontextprotocol/clientCapabilities"
#define META_SERVER "io.modelcontextprotocol/serverInfo"
#define MODERN_VERSION "2026-07-28"

/* The versions served, newest first: one modern, then the legacy ones initialize negotiates. */
static const char *const versions[] = {MODERN_VERSION, "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
#define NVERSIONS (sizeof(versions) / sizeof(versions[0]))

static const char instructions[] =
    "temper checks GPU kernels (CUDA, OpenCL or Triton candidates with @temper directives naming a task) "
    "against the task's reference (C, or a PyTorch program) on many shapes and seeds, times them against the task's baseline and places them on "
    "the roofline. list_tasks and show_task describe the tasks; evaluate gives the verdict and, when it fails, "
    "the failing shape, element and compile log to correct; tune searches a candidate's knobs; best_kernel "
    "gives the fastest correct kernel the store holds.";

/* A JSON-RPC batch (protocol 2025-03-26 only): its answers are collected and sent as one array. */
struct batch {
    json_t *answers; /* the responses so far */
    int pending;     /* responses still to come, plus one held by the reader while it dispatches */
};

/* Answers into a batch, or alone; takes message's reference. */
static void deliver(struct mcp_server *srv, struct batch *b, json_t *message)
{
    if (!b) {
        mcp_send(srv, message);
        return;
    }
    pthread_mutex_lock(&srv->lock);
    if (message)
        json_array_append_new(b->answers, message);
    int last = --b->pending == 0;
    pthread_mutex_unlock(&srv->lock);
    if (last) {
        if (json_array_size(b->answers))
            mcp_send(srv, b->answers);
        else
            json_decref(b->answers);
        free(b);
    }
}

static json_t *server_info(void)
{
    return json_pack("{s:s, s:s, s:s}", "name", "temper", "title", "temper: verified, fast GPU kernels", "version",
                     TEMPER_VERSION);
}

/* A result for a request (takes result's reference); modern: with resultType and serverInfo. */
static void answer(struct mcp_server *srv, struct batch *b, json_t *id, int modern, json_t *result)
{
    if (modern) {
        json_object_set_new(result, "resultType", json_string("complete"));
        json_t *meta = json_object_get(result, "_meta");
        if (!meta)
            json_object_set_new(result, "_meta", meta = json_object());
        json_object_set_new(meta, META_SERVER, server_info());
    }
    deliver(srv, b, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "result", result));
}

/* An error for a request; data is optional (taken). */
static void answer_error(struct mcp_server *srv, struct batch *b, json_t *id, int code, const char *message,
                         json_t *data)
{
    json_t *error = json_pack("{s:i, s:s}", "code", code, "message", message);
    if (data)
        json_object_set_new(error, "data", data);
    deliver(srv, b, json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(), "error", error));
}

static json_t *path_data(const char *path)
{
    return json_pack("{s:s}", "path", path);
}


/* ---- tools/list and tools/call ---- */

static json_t *tool_list(const char *version, int modern)
{
    size_t n;
    const struct mcp_tool *tools = mcp_tools(&n);
    /* outputSchema, structuredContent and title came with 2025-06-18; annotations with 2025-03-26 */
    int structured = modern || strcmp(version, "2025-06-18") >= 0;
    int annotations = modern || strcmp(version, "2025-03-26") >= 0;
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_pack("{s:s, s:s, s:o}", "name", tools[i].name, "description", tools[i].description,
                              "inputSchema", mcp_tool_input_schema(&tools[i]));
        if (structured) {
            json_object_set_new(t, "title", json_string(tools[i].title));
            json_object_set_new(t, "outputSchema", json_loads(tools[i].output_schema, 0, NULL));
        }
        if (annotations)
            json_object_set_new(t, "annotations",
                                json_pack("{s:s, s:b, s:b, s:b, s:b}", "title", tools[i].title, "readOnlyHint",
                                          tools[i].read_only, "destructiveHint", 0, "idempotentHint",
                                          tools[i].read_only, "openWorldHint", 0));
        json_array_append_new(list, t);
    }
    return list;
}

static void call_end(struct mcp_call *call)
{
    struct mcp_server *srv = call->server;
    pthread_mutex_lock(&srv->lock);
    for (struct mcp_call **p = &srv->calls; *p; p = &(*p)->next)
        if (*p == call) {
            *p = call->next;
            break;
        }
    srv->ncalls--;
    pthread_cond_broadcast(&srv->calls_done);
    pthread_mutex_unlock(&srv->lock);
}

static void *call_main(void *arg)
{
    struct mcp_call *call = arg;
    struct mcp_server *srv = call->server;
    json_t *result = call->tool->run(call, call->args);
    pthread_mutex_lock(&srv->lock);
    int cancelled = call->cancelled;
    call->eval_id = 0;
    call->tune = NULL;
    pthread_mutex_unlock(&srv->lock);
    if (result && !cancelled) {
        if (!call->modern && strcmp(call->version, "2025-06-18") < 0)
            json_object_del(result, "structuredContent");
        answer(srv, call->batch, call->id, call->modern, result);
    } else {
        /* a cancelled request is not answered (both eras say so) */
        json_decref(result);
        fprintf(stderr, "temper mcp: %s cancelled; not answered\n", call->tool->name);
        if (call->batch)
            deliver(srv, call->batch, NULL);
    }
    call_end(call);
    json_decref(call->id);
    json_decref(call->args);
    json_decref(call->progress_token);
    free(call);
    return NULL;
}

static void tools_call(struct mcp_server *srv, struct batch *b, json_t *id, json_t *params, const char *version,
                       int modern)
{
    json_t *name = json_object_get(params, "name");
    if (!json_is_string(name)) {
        answer_error(srv, b, id, -32602, "tools/call needs params.name, a string", path_data("params.name"));
        return;
    }
    const struct mcp_tool *tool = mcp_tool_find(json_string_value(name));
    if (!tool) {
        char m[256];
        snprintf(m, sizeof(m), "unknown tool '%.100s' (tools/list names them)", json_string_value(name));
        answer_error(srv, b, id, -32602, m, path_data("params.name"));
        return;
    }
    json_t *args = json_object_get(params, "arguments");
    if (args && !json_is_object(args) && !json_is_null(args)) {
        answer_error(srv, b, id, -32602, "params.arguments must be an object", path_data("params.arguments"));
        return;
    }
    json_t *own = args && json_is_object(args) ? json_deep_copy(args) : json_object();
    json_t *schema = mcp_tool_input_schema(tool);
    char path[512], why[512], m[1200];
    int bad = mcp_schema_check(schema, own, "arguments", path, sizeof(path), why, sizeof(why));
    json_decref(schema);
    if (bad) {
        snprintf(m, sizeof(m), "invalid arguments for %s: %s %s", tool->name, path, why);
        json_decref(own);
        answer_error(srv, b, id, -32602, m, path_data(path));
        return;
    }
    struct mcp_call *call = calloc(1, sizeof(*call));
    if (!call) {
        json_decref(own);
        answer_error(srv, b, id, -32603, "out of memory", NULL);
        return;
    }
    call->server = srv;
    call->tool = tool;
    call->id = json_deep_copy(id);
    call->args = own;
    json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
    call->progress_token = json_is_string(token) || json_is_integer(token) ? json_deep_copy(token) : NULL;
    snprintf(call->version, sizeof(call->version), "%s", version);
    call->modern = modern;
    call->batch = b;
    pthread_mutex_lock(&srv->lock);
    int full = srv->ncalls >= MCP_MAX_CALLS, duplicate = 0;
    for (struct mcp_call *c = srv->calls; c && !full; c = c->next)
        duplicate |= json_equal(c->id, id);
    pthread_attr_t attr;
    pthread_t thread;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int started = !full && !duplicate && !pthread_create(&thread, &attr, call_main, call);
    pthread_attr_destroy(&attr);
    if (started) {
        call->next = srv->calls;
        srv->calls = call;
        srv->ncalls++;
    }
    pthread_mutex_unlock(&srv->lock);
    if (!started) {
        json_decref(call->id);
        json_decref(call->args);
        json_decref(call->progress_token);
        free(call);
        answer_error(srv, b, id, duplicate ? -32600 : -32000,
                     duplicate ? "a request with this id is still in progress"
                     : full    ? "too many tool calls in progress (at most 64); try again when one has finished"
                               : "could not start a thread for the call",
                     NULL);
    }
}

/* ---- one message ---- */

static json_t *version_list(void)
{
    json_t *a = json_array();
    for (size_t i = 0; i < NVERSIONS; i++)
        json_array_append_new(a, json_string(versions[i]));
    return a;
}

static void notification(struct mcp_server *srv, const char *method, json_t *params)
{
    if (!strcmp(method, "notifications/cancelled")) {
        json_t *id = json_object_get(params, "requestId");
        pthread_mutex_lock(&srv->lock);
        for (struct mcp_call *c = srv->calls; c; c = c->next)
            if (id && json_equal(c->id, id) && !c->cancelled) {
                c->cancelled = 1;
                if (c->eval_id)
                    temper_session_cancel(c->eval_session, c->eval_id);
                if (c->tune)
                    temper_session_tune_stop(c->tune);
                fprintf(stderr, "temper mcp: cancelling %s\n", c->tool->name);
            }
        pthread_mutex_unlock(&srv->lock);
    } else if (strcmp(method, "notifications/initialized")) {
        fprintf(stderr, "temper mcp: ignoring notification %.100s\n", method);
    }
}

/* The era of a request: a modern request names its version in _meta; a legacy one follows
 * initialize. Fills version (the one it speaks) and *modern; -1 when it answered an error. */
static int request_era(struct mcp_server *srv, struct batch *b, json_t *id, json_t *params, char *version,
                       size_t version_size, int *modern)
{
    json_t *meta = json_object_get(params, "_meta");
    json_t *pv = json_object_get(meta, META_VERSION);
    pthread_mutex_lock(&srv->lock);
    snprintf(version, version_size, "%s", srv->version);
    pthread_mutex_unlock(&srv->lock);
    *modern = 0;
    if (meta && !json_is_object(meta)) {
        answer_error(srv, b, id, -32602, "params._meta must be an object", path_data("params._meta"));
        return -1;
    }
    if (pv) {
        if (!json_is_string(pv)) {
            answer_error(srv, b, id, -32602, "params._meta." META_VERSION " must be a string",
                         path_data("params._meta." META_VERSION));
            return -1;
        }
        if (strcmp(json_string_value(pv), MODERN_VERSION)) {
            answer_error(srv, b, id, -32022, "Unsupported protocol version",
                         json_pack("{s:o, s:O}", "supported", version_list(), "requested", pv));
            return -1;
        }
        if (!json_is_object(json_object_get(meta, META_CAPS))) {
            answer_error(srv, b, id, -32602, "params._meta." META_CAPS " (an object) is required with " META_VERSION,
                         path_data("params._meta." META_CAPS));
            return -1;
        }
        *modern = 1;
        snprintf(version, version_size, "%s", MODERN_VERSION);
    }
    return 0;
}

/* A legacy initialize: the client's version if it is a legacy one served here, else the latest
 * legacy one. */
static void initialize(struct mcp_server *srv, struct batch *b, json_t *id, json_t *params)
{
    json_t *asked = json_object_get(params, "protocolVersion");
    if (!json_is_string(asked)) {
        answer_error(srv, b, id, -32602, "initialize needs params.protocolVersion, a string",
                     path_data("params.protocolVersion"));
        return;
    }
    const char *chosen = versions[1];
    for (size_t i = 1; i < NVERSIONS; i++)
        if (!strcmp(json_string_value(asked), versions[i]))
            chosen = versions[i];
    pthread_mutex_lock(&srv->lock);
    snprintf(srv->version, sizeof(srv->version), "%s", chosen);
    pthread_mutex_unlock(&srv->lock);
    json_t *info = server_info();
    if (strcmp(chosen, "2025-06-18") < 0)
        json_object_del(info, "title");
    fprintf(stderr, "temper mcp: initialize: protocol %s (asked %.40s)\n", chosen, json_string_value(asked));
    answer(srv, b, id, 0,
           json_pack("{s:s, s:{s:{s:b}}, s:o, s:s}", "protocolVersion", chosen, "capabilities", "tools",
                     "listChanged", 0, "serverInfo", info, "instructions", instructions));
}

static void tools_list(struct mcp_server *srv, struct batch *b, json_t *id, json_t *params, const char *version,
                       int modern)
{
    json_t *cursor = json_object_get(params, "cursor");
    if (cursor && !json_is_null(cursor)) {
        /* every tool fits one page, so no cursor is ever given out: any is unknown */
        answer_error(srv, b, id, -32602,
                     json_is_string(cursor) ? "unknown cursor: this server lists every tool on one page"
                                            : "params.cursor must be a string",
                     path_data("params.cursor"));
        return;
    }
    json_t *result = json_pack("{s:o}", "tools", tool_list(version, modern));
    if (modern) {
        json_object_set_new(result, "ttlMs", json_integer(3600000));
        json_object_set_new(result, "cacheScope", json_string("public"));
    }
    answer(srv, b, id, modern, result);
}

static void request(struct mcp_server *srv, struct batch *b, json_t *id, const char *method, json_t *params)
{
    /* An id still in progress is refused whatever the method: its answer would be taken for the
     * running call's (tools_call checks again under the lock it starts the call with). */
    pthread_mutex_lock(&srv->lock);
    int duplicate = 0;
    for (struct mcp_call *c = srv->calls; c; c = c->next)
        duplicate |= json_equal(c->id, id);
    pthread_mutex_unlock(&srv->lock);
    if (duplicate) {
        answer_error(srv, b, id, -32600, "a request with this id is still in progress", NULL);
        return;
    }
    char version[16];
    int modern = 0;
    if (request_era(srv, b, id, params, version, sizeof(version), &modern))
        return;
    if (!strcmp(method, "initialize") && !modern) {
        initialize(srv, b, id, params);
        return;
    }
    if (!modern && !version[0] && strcmp(method, "ping")) {
        answer_error(srv, b, id, -32602,
                     "not initialized: send initialize first, or name protocol version " MODERN_VERSION
                     " in params._meta." META_VERSION,
                     path_data("params._meta." META_VERSION));
        return;
    }
    if (!strcmp(method, "ping")) {
        answer(srv, b, id, modern, json_object());
    } else if (!strcmp(method, "server/discover") && modern) {
        answer(srv, b, id, 1,
               json_pack("{s:o, s:{s:{s:b}}, s:s, s:i, s:s}", "supportedVersions", version_list(), "capabilities",
                         "tools", "listChanged", 0, "instructions", instructions, "ttlMs", 3600000, "cacheScope",
                         "public"));
    } else if (!strcmp(method, "tools/list")) {
        tools_list(srv, b, id, params, version, modern);
    } else if (!strcmp(method, "tools/call")) {
        tools_call(srv, b, id, params, version, modern);
    } else {
        char m[256];
        snprintf(m, sizeof(m), "method not found: %.100s", method);
        answer_error(srv, b, id, -32601, m, NULL);
    }
}

/* One JSON-RPC object (alone, or in a batch b: then it delivers exactly one answer into b, or NULL). */
static void message(struct mcp_server *srv, struct batch *b, json_t *msg)
{
    if (!json_is_object(msg)) {
        answer_error(srv, b, NULL, -32600, "invalid request: a message is a JSON object", NULL);
        return;
    }
    json_t *id = json_object_get(msg, "id"), *method = json_object_get(msg, "method");
    json_t *params = json_object_get(msg, "params");
    int id_ok = json_is_string(id) || json_is_integer(id);
    if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error"))) {
        /* a response: this server sends no requests, so there is nothing it answers */
        fprintf(stderr, "temper mcp: ignoring a response (this server sends no requests)\n");
        if (b)
            deliver(srv, b, NULL);
        return;
    }
    const char *why = !json_is_string(json_object_get(msg, "jsonrpc")) ||
                              strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0")
                          ? "invalid request: \"jsonrpc\" must be \"2.0\""
                      : !json_is_string(method) ? "invalid request: \"method\" must be a string"
                      : id && !id_ok            ? "invalid request: \"id\" must be a string or an integer"
                      : params && !json_is_object(params) && !json_is_array(params)
                          ? "invalid request: \"params\" must be an object"
                          : NULL;
    if (why) {
        if (id || !json_is_string(method)) /* a notification is never answered, even a bad one */
            answer_error(srv, b, id_ok ? id : NULL, -32600, why, NULL);
        return;
    }
    if (!id) {
        notification(srv, json_string_value(method), params);
        return;
    }
    if (json_is_array(params)) {
        answer_error(srv, b, id, -32602, "params must be an object (MCP uses named parameters)", path_data("params"));
        return;
    }
    request(srv, b, id, json_string_value(method), params);
}

static void line(struct mcp_server *srv, const char *text, size_t len)
{
    json_error_t error;
    json_t *msg = json_loadb(text, len, JSON_DECODE_ANY, &error);
    if (!msg) {
        char m[300];
        snprintf(m, sizeof(m), "parse error at byte %d: %s", error.position, error.text);
        answer_error(srv, NULL, NULL, -32700, m, NULL);
        return;
    }
    if (!json_is_array(msg)) {
        message(srv, NULL, msg);
        json_decref(msg);
        return;
    }
    /* JSON-RPC batches are part of 2025-03-26 only */
    pthread_mutex_lock(&srv->lock);
    int batches = !strcmp(srv->version, "2025-03-26");
    pthread_mutex_unlock(&srv->lock);
    struct batch *b = batches && json_array_size(msg) ? calloc(1, sizeof(*b)) : NULL;
    if (!b) {
        answer_error(srv, NULL, NULL, -32600,
                     batches ? "invalid request: an empty batch"
                             : "invalid request: batches are part of protocol version 2025-03-26 only",
                     NULL);
        json_decref(msg);
        return;
    }
    b->answers = json_array();
    b->pending = 1; /* the reader's, released below */
    size_t i;
    json_t *m;
    json_array_foreach(msg, i, m) {
        if (json_is_object(m) && !json_object_get(m, "id")) {
            message(srv, NULL, m); /* a notification (never answered), or a bad one answered alone */
        } else { /* a request, or not an object: answered once, in the batch's array */
            pthread_mutex_lock(&srv->lock);
            b->pending++;
            pthread_mutex_unlock(&srv->lock);
            message(srv, b, m);
        }
    }
    json_decref(msg);
    deliver(srv, b, NULL);
}

int mcp_serve(const struct mcp_config *config, int in_fd, int out_fd, char *msg, size_t msg_size)
{
    struct mcp_server srv = {0};
    srv.config = config;
    srv.out_fd = out_fd;
    pthread_mutex_init(&srv.out_lock, NULL);
    pthread_mutex_init(&srv.lock, NULL);
    pthread_mutex_init(&srv.session_lock, NULL);
    pthread_cond_init(&srv.calls_done, NULL);
    size_t cap = 65536, used = 0;
    char *buf = malloc(cap);
    if (!buf)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    int skipping = 0; /* 1: inside a line over MCP_MESSAGE_MAX, dropped up to its newline */
    for (;;) {
        if (used == cap) {
            size_t more = cap * 2 > MCP_MESSAGE_MAX + 1 ? MCP_MESSAGE_MAX + 1 : cap * 2;
            char *grown = more > cap ? realloc(buf, more) : NULL;
            if (!grown) { /* over the limit: answer once, drop the rest of the line */
                if (!skipping)
                    answer_error(&srv, NULL, NULL, -32600, "invalid request: a message over 16 MiB", NULL);
                skipping = 1;
                used = 0;
            } else {
                buf = grown;
                cap = more;
            }
        }
        ssize_t n = read(in_fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                fprintf(stderr, "temper mcp: reading the input failed: %s\n", strerror(errno));
            break;
        }
        size_t start = 0, end = used + (size_t)n;
        for (size_t i = used; i < end; i++) {
            if (buf[i] != '\n')
                continue;
            size_t len = i - start;
            if (len && buf[start + len - 1] == '\r')
                len--;
            if (!skipping && len)
                line(&srv, buf + start, len);
            skipping = 0;
            start = i + 1;
        }
        memmove(buf, buf + start, end - start);
        used = end - start;
    }
    if (used && !skipping) /* a last message without its newline */
        line(&srv, buf, used);
    free(buf);
    /* The input ended: stop tunes (they answer with what they have) and wait for every call. */
    pthread_mutex_lock(&srv.lock);
    srv.ending = 1;
    for (struct mcp_call *c = srv.calls; c; c = c->next)
        if (c->tune)
            temper_session_tune_stop(c->tune);
    while (srv.ncalls)
        pthread_cond_wait(&srv.calls_done, &srv.lock);
    pthread_mutex_unlock(&srv.lock);
    temper_session_close(srv.session);
    pthread_cond_destroy(&srv.calls_done);
    pthread_mutex_destroy(&srv.session_lock);
    pthread_mutex_destroy(&srv.lock);
    pthread_mutex_destroy(&srv.out_lock);
    return 0;
}
