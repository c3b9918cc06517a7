/* http.c: the gym's HTTP daemon on libmicrohttpd: listening (loopback unless a token is given),
 * the bearer token (compared in constant time, before any body is read), request bodies up to a
 * limit (a Content-Length over it is refused before the body is read), routing to the endpoints
 * of api.c and metrics.c, and replies (JSON, or text for /metrics). The connections' guards
 * (a deadline for each request to arrive, connections per client address) are in http_guard.c.
 *
 * Threads: one thread per connection (MHD_USE_THREAD_PER_CONNECTION) with a bound on connections.
 * A long poll (wait_s) then blocks only its own connection's thread, in the queue's condition
 * variable, for at most max_wait_s; libmicrohttpd's suspend/resume would save those threads but
 * needs a wake-up path from every queue engine (Redis included) into the daemon, and the bound on
 * connections already bounds the threads (and their memory: a small stack each). */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "serve/http_guard.h"
#include "serve/server.h"
#include "temper/error.h"
#include "util/util.h"

struct temper_server {
    struct MHD_Daemon *daemon;  /* the running daemon */
    struct server_state state;  /* what the endpoints share */
    int port;                   /* where it listens */
    char *token;                /* the bearer token (owned), or NULL */
    atomic_int started;         /* 1 once the daemon listens: libmicrohttpd's messages go to stderr */
    char start_error[256];      /* what libmicrohttpd said while starting, its last message */
    struct http_guard *guard;   /* the connections' deadlines (http_guard.c) */
};

/* libmicrohttpd's error log: while the daemon starts, its last message is kept for temper's own
 * (libmicrohttpd 0.9's bind message names port 0 whatever the port); afterwards each goes to
 * stderr, said to be its. */
static void mhd_log(void *cls, const char *fmt, va_list ap)
{
    struct temper_server *sv = cls;
    char text[256];
    vsnprintf(text, sizeof(text), fmt, ap);
    text[strcspn(text, "\n")] = 0;
    if (!atomic_load(&sv->started)) {
        snprintf(sv->start_error, sizeof(sv->start_error), "%s", text);
    } else { /* it may quote what a client sent: shown as printable ASCII on the operator's terminal */
        char shown[1024];
        temper_show_bytes(text, strlen(text), 250, shown, sizeof(shown));
        fprintf(stderr, "temper: serve: libmicrohttpd: %s\n", shown);
    }
}

/* One request's upload. */
struct request {
    struct temper_buf body;     /* the body so far, up to max_body_bytes */
    int too_large;              /* 1 once the body passed the limit (the rest is read and dropped) */
};

/* Constant-time comparison of the Authorization header with "Bearer <token>". */
static int token_ok(const char *token, const char *header)
{
    if (!header || strncmp(header, "Bearer ", 7))
        return 0;
    const char *given = header + 7;
    size_t a = strlen(token), b = strlen(given);
    unsigned char diff = a != b;
    for (size_t i = 0; i < a; i++)
        diff |= (unsigned char)token[i] ^ (unsigned char)(i < b ? given[i] : 0);
    return diff == 0;
}

static int method_is(const char *m, const char *want)
{
    return !strcmp(m, want);
}

/* Routes a complete request. */
static void route(struct temper_server *sv, struct MHD_Connection *con, const char *url, const char *method,
                  struct request *req, struct server_reply *r)
{
    struct server_state *st = &sv->state;
    const char *ev = "/v1/evaluations/", *ba = "/v1/batches/";
    if (!strcmp(url, "/healthz")) {
        if (!method_is(method, "GET"))
            goto not_allowed_get;
        r->status = 200;
        r->json = json_pack("{s:s}", "status", "ok");
        return;
    }
    if (sv->token && !token_ok(sv->token, MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization"))) {
        server_error(r, 401, "unauthorized", "this server needs the header 'Authorization: Bearer <token>' with its token");
        return;
    }
    if (req->too_large) {
        server_error(r, 413, "payload_too_large", "the request body is over %zu bytes, this server's limit",
                     st->config.limits.max_body_bytes);
        return;
    }
    const char *wait = MHD_lookup_connection_value(con, MHD_GET_ARGUMENT_KIND, "wait_s");
    if (!strcmp(url, "/v1/evaluations")) {
        if (!method_is(method, "POST")) {
            r->allow = "POST";
            goto not_allowed;
        }
        api_submit(st, req->body.data ? req->body.data : "", req->body.len, r);
    } else if (!strcmp(url, "/v1/evaluations:get")) {
        if (!method_is(method, "POST")) {
            r->allow = "POST";
            goto not_allowed;
        }
        api_get_many(st, req->body.data ? req->body.data : "", req->body.len, r);
    } else if (!strncmp(url, ev, strlen(ev))) {
        const char *id = url + strlen(ev);
        if (!server_id_ok(id)) {
            server_error(r, 400, "invalid_id", "'%.140s' is not an evaluation id ([A-Za-z0-9._:-], 1 to 128)", id);
        } else if (method_is(method, "GET")) {
            api_get(st, id, wait, r);
        } else if (method_is(method, "DELETE")) {
            api_cancel(st, id, r);
        } else {
            r->allow = "GET, DELETE";
            goto not_allowed;
        }
    } else if (!strncmp(url, ba, strlen(ba))) {
        const char *id = url + strlen(ba);
        if (!method_is(method, "GET"))
            goto not_allowed_get;
        if (!server_id_ok(id))
            server_error(r, 400, "invalid_id", "'%.140s' is not a batch id ([A-Za-z0-9._:-], 1 to 128)", id);
        else
            api_batch(st, id, r);
    } else if (!strcmp(url, "/v1/tasks") || !strcmp(url, "/v1/workers") || !strcmp(url, "/readyz") ||
               !strcmp(url, "/metrics")) {
        if (!method_is(method, "GET"))
            goto not_allowed_get;
        if (url[1] == 'v')
            url[4] == 't' ? api_tasks(st, r) : api_workers(st, r);
        else
            url[1] == 'r' ? api_ready(st, r) : api_metrics(st, r);
    } else {
        server_error(r, 404, "not_found", "no endpoint at '%.200s' (docs/openapi.yaml lists them)", url);
    }
    return;
not_allowed_get:
    r->allow = "GET";
not_allowed:
    server_error(r, 405, "method_not_allowed", "%s is not allowed on %.200s (allowed: %s)", method, url, r->allow);
}

static enum MHD_Result send_reply(struct temper_server *sv, struct MHD_Connection *con, struct server_reply *r)
{
    char *body = NULL;
    const char *type = "application/json";
    if (r->text) {
        body = r->text;
        r->text = NULL;
        type = "text/plain; version=0.0.4; charset=utf-8";
    } else {
        if (!r->json)
            server_error(r, 500, "internal", "the reply could not be made (out of memory)");
        body = r->json ? json_dumps(r->json, JSON_COMPACT | JSON_ENSURE_ASCII) : NULL;
        if (!body) {
            r->status = 500;
            body = strdup("{\"error\":{\"kind\":\"internal\",\"message\":\"out of memory\"}}");
        }
    }
    if (!body)
        return MHD_NO;
    size_t len = strlen(body);
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!resp) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    char retry[32];
    if (r->retry_after_s > 0) {
        snprintf(retry, sizeof(retry), "%d", r->retry_after_s);
        MHD_add_response_header(resp, "Retry-After", retry);
    }
    if (r->allow)
        MHD_add_response_header(resp, "Allow", r->allow);
    if (r->status == 401)
        MHD_add_response_header(resp, "WWW-Authenticate", "Bearer");
    atomic_fetch_add(&sv->state.requests, 1);
    if (r->status >= 400 && r->status < 500)
        atomic_fetch_add(&sv->state.client_errors, 1);
    if (r->status >= 500)
        atomic_fetch_add(&sv->state.server_errors, 1);
    enum MHD_Result ok = MHD_queue_response(con, r->status, resp);
    MHD_destroy_response(resp);
    return ok;
}

/* What is refused as soon as a request's headers are in, before its body is read: a missing or
 * wrong token (every path but /healthz), and a Content-Length over the body limit. 1 with the
 * refusal in r. */
static int refuse_early(struct temper_server *sv, struct MHD_Connection *con, const char *url, struct server_reply *r)
{
    if (sv->token && strcmp(url, "/healthz") &&
        !token_ok(sv->token, MHD_lookup_connection_value(con, MHD_HEADER_KIND, "Authorization"))) {
        server_error(r, 401, "unauthorized", "this server needs the header 'Authorization: Bearer <token>' with its token");
        return 1;
    }
    const char *cl = MHD_lookup_connection_value(con, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    char *end = NULL;
    unsigned long long n = cl ? strtoull(cl, &end, 10) : 0;
    if (cl && end != cl && n > sv->state.config.limits.max_body_bytes) {
        server_error(r, 413, "payload_too_large", "the request body is over %zu bytes, this server's limit",
                     sv->state.config.limits.max_body_bytes);
        return 1;
    }
    return 0;
}

static enum MHD_Result answer(struct temper_server *sv, struct MHD_Connection *con, struct server_reply *r)
{
    enum MHD_Result ok = send_reply(sv, con, r);
    json_decref(r->json);
    free(r->text);
    return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    (void)version;
    struct temper_server *sv = cls;
    struct request *req = *con_cls;
    if (!req) { /* the headers are in; the body, if any, is not read yet */
        req = calloc(1, sizeof(*req));
        if (!req)
            return MHD_NO;
        temper_buf_init(&req->body, sv->state.config.limits.max_body_bytes);
        *con_cls = req;
        struct server_reply r = {0};
        if (refuse_early(sv, con, url, &r))
            return answer(sv, con, &r); /* libmicrohttpd then reads no body and closes the connection */
        return MHD_YES;
    }
    if (*upload_data_size) {
        if (!req->too_large && temper_buf_append(&req->body, upload_data, *upload_data_size))
            req->too_large = 1;
        *upload_data_size = 0;
        return MHD_YES;
    }
    http_guard_arrived(sv->guard, con); /* the whole request is in: its deadline no longer runs */
    struct server_reply r = {0};
    route(sv, con, url, method, req, &r);
    return answer(sv, con, &r);
}

static void on_completed(void *cls, struct MHD_Connection *con, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    struct temper_server *sv = cls;
    (void)toe;
    struct request *req = *con_cls;
    if (req) {
        temper_buf_free(&req->body);
        free(req);
        *con_cls = NULL;
    }
    http_guard_next(sv->guard, con); /* the connection waits for its next request: a deadline again */
}

/* Parses "HOST:PORT" ("[V6]:PORT") into addr; *loopback says whether it is one. */
static int parse_listen(const char *listen, struct sockaddr_storage *addr, int *loopback, char *msg,
                        size_t msg_size)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    if (!colon || (size_t)(colon - listen) >= sizeof(host))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "--listen '%s': give HOST:PORT (127.0.0.1:8787)", listen);
    memcpy(host, listen, (size_t)(colon - listen));
    host[colon - listen] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || port < 0 || port > 65535)
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "--listen '%s': the port is not a number from 0 to 65535",
                           listen);
    memset(addr, 0, sizeof(*addr));
    size_t hl = strlen(host);
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)addr;
        host[hl - 1] = 0;
        if (inet_pton(AF_INET6, host + 1, &a6->sin6_addr) != 1)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "--listen '%s': not an IPv6 address", listen);
        a6->sin6_family = AF_INET6;
        a6->sin6_port = htons((uint16_t)port);
        *loopback = IN6_IS_ADDR_LOOPBACK(&a6->sin6_addr);
        return 0;
    }
    struct sockaddr_in *a4 = (struct sockaddr_in *)addr;
    if (!strcmp(host, "localhost"))
        snprintf(host, sizeof(host), "127.0.0.1");
    if (inet_pton(AF_INET, host, &a4->sin_addr) != 1)
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "--listen '%s': '%s' is not an IPv4 address, [IPv6] address or localhost", listen, host);
    a4->sin_family = AF_INET;
    a4->sin_port = htons((uint16_t)port);
    *loopback = (ntohl(a4->sin_addr.s_addr) >> 24) == 127;
    return 0;
}

int temper_server_start(const struct temper_server_config *config, struct temper_server **out, char *msg,
                        size_t msg_size)
{
    *out = NULL;
    struct sockaddr_storage addr;
    int loopback = 0;
    int err = parse_listen(config->listen ? config->listen : "127.0.0.1:8787", &addr, &loopback, msg, msg_size);
    if (err)
        return err;
    if (!loopback && (!config->token || !*config->token))
        return temper_fail(msg, msg_size, TEMPER_EINVALID,
                           "--listen %s is not a loopback address: give --token-file with the token clients must send",
                           config->listen);
    struct temper_server *sv = calloc(1, sizeof(*sv));
    if (!sv)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    sv->state.config = *config;
    struct temper_server_limits *l = &sv->state.config.limits;
    l->max_body_bytes = l->max_body_bytes ? l->max_body_bytes : 16u << 20;
    l->max_source_bytes = l->max_source_bytes ? l->max_source_bytes : 1u << 20;
    l->max_items = l->max_items > 0 ? l->max_items : 1000;
    l->max_wait_s = l->max_wait_s > 0 ? l->max_wait_s : 60;
    l->max_connections = l->max_connections > 0 ? l->max_connections : 256;
    l->max_client_connections = l->max_client_connections > 0 ? l->max_client_connections : 64;
    l->request_timeout_s = l->request_timeout_s > 0 ? l->request_timeout_s : 30;
    sv->token = config->token && *config->token ? strdup(config->token) : NULL;
    sv->state.config.token = sv->token;
    unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
    if (addr.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    err = http_guard_start(l->request_timeout_s, &sv->guard, msg, msg_size);
    if (err) {
        free(sv->token);
        free(sv);
        return err;
    }
    sv->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, sv, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                  MHD_OPTION_CONNECTION_LIMIT, (unsigned)l->max_connections,
                                  MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)l->max_client_connections,
                                  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(l->max_wait_s + 60),
                                  MHD_OPTION_THREAD_STACK_SIZE, (size_t)(1u << 20), MHD_OPTION_NOTIFY_COMPLETED,
                                  on_completed, sv, MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, sv->guard,
                                  MHD_OPTION_UNESCAPE_CALLBACK, http_guard_unescape, NULL,
                                  MHD_OPTION_EXTERNAL_LOGGER, mhd_log, sv, MHD_OPTION_END);
    if (!sv->daemon) {
        const char *why = strrchr(sv->start_error, ':'); /* the system's reason, after the last colon */
        why = why && why[1] ? why + 2 : sv->start_error;
        err = temper_fail(msg, msg_size, TEMPER_EIO, "cannot listen on %s: %s", config->listen,
                          *why ? why : "in use, or not an address of this machine");
        http_guard_stop(sv->guard);
        free(sv->token);
        free(sv);
        return err;
    }
    atomic_store(&sv->started, 1);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(sv->daemon, MHD_DAEMON_INFO_BIND_PORT);
    sv->port = info ? info->port : 0;
    *out = sv;
    return 0;
}

int temper_server_port(struct temper_server *s)
{
    return s->port;
}

void temper_server_stop(struct temper_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->daemon);
    http_guard_stop(s->guard);
    free(s->token);
    free(s);
}
