/* http_reply.c: what the gym's endpoints share when they answer (server.h): the error body, the
 * check of a job or batch id, and the parsing of a long poll's wait_s. Kept apart from the daemon
 * (http.c), which routes to the endpoints (api.c, metrics.c) that call these: the routing and the
 * answers then depend on them, not on each other. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/server.h"
#include "temper/request.h"
#include "util/util.h"

int server_error(struct server_reply *r, unsigned status, const char *kind, const char *fmt, ...)
{
    char text[2048], shown[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    /* a message may quote what the client sent (a URL's bytes): as printable ASCII, \xNN else */
    temper_show_bytes(text, strlen(text), sizeof(shown) / 4 - 4, shown, sizeof(shown));
    json_decref(r->json);
    r->status = status;
    r->json = json_pack("{s:{s:s, s:s}}", "error", "kind", kind, "message", shown);
    return 0;
}

int server_id_ok(const char *id)
{
    return temper_request_id_ok(id);
}

/* Checks a wait against the hard bound and cuts it to the server's own. */
static int wait_value(struct server_state *st, int ok, double v, const char *shown, double *wait_s,
                      struct server_reply *r)
{
    if (!ok || !(v >= 0) || v > SERVER_MAX_WAIT_S) {
        server_error(r, 400, "invalid_request", "wait_s: '%.40s' is not a number of seconds from 0 to %d", shown,
                     SERVER_MAX_WAIT_S);
        return 1;
    }
    *wait_s = v < st->config.limits.max_wait_s ? v : st->config.limits.max_wait_s;
    return 0;
}

int server_parse_wait(struct server_state *st, const char *text, double *wait_s, struct server_reply *r)
{
    *wait_s = 0;
    if (!text)
        return 0;
    char *end;
    double v = strtod(text, &end);
    return wait_value(st, end != text && !*end, v, text, wait_s, r);
}

int server_json_wait(struct server_state *st, json_t *wait, double *wait_s, struct server_reply *r)
{
    *wait_s = 0;
    if (!wait)
        return 0;
    /* The message quotes what the client sent, as JSON (a number as written, a string quoted). */
    char *shown = json_dumps(wait, JSON_ENCODE_ANY | JSON_COMPACT);
    int err = wait_value(st, json_is_number(wait), json_number_value(wait), shown ? shown : "?", wait_s, r);
    free(shown);
    return err;
}
