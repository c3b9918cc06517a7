/* call.c: what a tool call may do besides its own work: write a message (the one writer, under
 * the server's write lock), open or share the server's one session, say whether the client
 * cancelled it, tie an evaluation or a tune to it so that a cancel stops them, send progress, and
 * build its result. Calls nothing else in src/mcp, so that the protocol (server.c) and the tools
 * call it without a loop between files. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "server_impl.h"
#include "temper/error.h"

/* Compact JSON has no newline (strings escape theirs), so the message and its newline are one
 * line, written whole under the lock. */
void mcp_send(struct mcp_server *srv, json_t *message)
{
    char *text = json_dumps(message, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(message);
    size_t len = text ? strlen(text) : 0;
    char *line = text ? realloc(text, len + 2) : NULL;
    if (!line) {
        free(text);
        fprintf(stderr, "temper mcp: out of memory writing a message\n");
        return;
    }
    line[len++] = '\n';
    line[len] = 0;
    pthread_mutex_lock(&srv->out_lock);
    for (size_t done = 0; !srv->out_broken && done < len;) {
        ssize_t w = write(srv->out_fd, line + done, len - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            srv->out_broken = 1;
            fprintf(stderr, "temper mcp: writing a message failed (%s); the client has gone\n", strerror(errno));
        } else {
            done += (size_t)w;
        }
    }
    pthread_mutex_unlock(&srv->out_lock);
    free(line);
}

static void log_event(void *user, const struct temper_session_event *ev)
{
    (void)user;
    if (ev->kind == TEMPER_SESSION_WARNING)
        fprintf(stderr, "temper mcp: warning: %s\n", ev->message);
    else if (ev->kind == TEMPER_SESSION_NOTICE)
        fprintf(stderr, "temper mcp: %s\n", ev->message);
}

/* The id of the device an open session runs on: its device description's "id". */
static const char *session_device_id(struct temper_session *session)
{
    json_t *info = temper_session_device_info(session);
    return json_string_value(json_object_get(info, "id"));
}

int mcp_session(struct mcp_call *call, const char *device, struct temper_session **s, char *msg, size_t msg_size)
{
    struct mcp_server *srv = call->server;
    pthread_mutex_lock(&srv->session_lock);
    int err = 0;
    if (!srv->session) {
        struct temper_session_config config = {0};
        /* --device wins; a call naming another device is then refused below */
        config.device = srv->config->device ? srv->config->device : device;
        config.store_path = srv->config->store_path;
        config.tasks_dir = srv->config->tasks_dir;
        config.on_event = log_event;
        /* deep checks (CUDA's profiler) run this binary again under their tool */
        char self[4096];
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (len > 0) {
            self[len] = 0;
            config.deep_exe = self;
        }
        err = temper_session_open(&config, &srv->session, msg, msg_size);
        if (err)
            srv->session = NULL;
        else
            fprintf(stderr, "temper mcp: session open on %s\n", session_device_id(srv->session));
    }
    if (!err && device) {
        const char *id = session_device_id(srv->session);
        /* "opencl" names the first OpenCL device, as --device does */
        size_t n = strlen(device);
        int same = id && (!strcmp(id, device) || (!strchr(device, ':') && !strncmp(id, device, n) && id[n] == ':' &&
                                                  !strcmp(id + n + 1, "0")));
        if (!same)
            err = temper_fail(msg, msg_size, TEMPER_EINVALID,
                              "this server's session runs on %s, not %s: one server serves one device; start "
                              "another with `temper mcp --device %s`",
                              id ? id : "?", device, device);
    }
    *s = err ? NULL : srv->session;
    pthread_mutex_unlock(&srv->session_lock);
    return err;
}

const struct mcp_config *mcp_call_config(struct mcp_call *call)
{
    return call->server->config;
}

int mcp_call_cancelled(struct mcp_call *call)
{
    pthread_mutex_lock(&call->server->lock);
    int c = call->cancelled;
    pthread_mutex_unlock(&call->server->lock);
    return c;
}

int mcp_call_watch_eval(struct mcp_call *call, struct temper_session *s, int64_t id)
{
    pthread_mutex_lock(&call->server->lock);
    int c = call->cancelled;
    call->eval_session = s;
    call->eval_id = c ? 0 : id;
    pthread_mutex_unlock(&call->server->lock);
    return c;
}

int mcp_call_watch_tune(struct mcp_call *call, struct temper_session_tune *t)
{
    pthread_mutex_lock(&call->server->lock);
    int stop = call->cancelled || call->server->ending;
    call->tune = stop ? NULL : t;
    pthread_mutex_unlock(&call->server->lock);
    return stop;
}

void mcp_call_progress(struct mcp_call *call, double progress, double total, const char *message)
{
    if (!call->progress_token || mcp_call_cancelled(call))
        return;
    json_t *params = json_pack("{s:O, s:f}", "progressToken", call->progress_token, "progress", progress);
    if (total >= 0)
        json_object_set_new(params, "total", json_real(total));
    if (message)
        json_object_set_new(params, "message", json_string(message));
    mcp_send(call->server, json_pack("{s:s, s:s, s:o}", "jsonrpc", "2.0", "method", "notifications/progress",
                                         "params", params));
}

json_t *mcp_tool_result(json_t *structured, const char *text, int is_error)
{
    json_t *content = json_array();
    json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", text));
    json_t *r = json_pack("{s:o}", "content", content);
    if (structured) {
        /* the structured result's JSON as text too, for clients before structuredContent */
        char *dump = json_dumps(structured, JSON_COMPACT);
        if (dump)
            json_array_append_new(content, json_pack("{s:s, s:s}", "type", "text", "text", dump));
        free(dump);
        json_object_set_new(r, "structuredContent", structured);
    }
    if (is_error)
        json_object_set_new(r, "isError", json_true());
    return r;
}
