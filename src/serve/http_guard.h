/* http_guard.h: the gym's guards on its HTTP connections (internal to src/serve, used by http.c):
 * a deadline for each request to arrive whole, so that a client sending a byte now and then
 * cannot hold a connection (and its thread) for long, and the unescaping of URLs that keeps a
 * %00 as it came (a NUL would cut an id short). The bound on connections per client address is
 * libmicrohttpd's own (MHD_OPTION_PER_IP_CONNECTION_LIMIT). */
#ifndef TEMPER_SERVE_HTTP_GUARD_H
#define TEMPER_SERVE_HTTP_GUARD_H

#include <microhttpd.h>
#include <stddef.h>

struct http_guard; /* opaque: the open connections and the thread that cuts late ones */

/* Starts the guard: a request (its headers and body) must arrive whole within timeout_s of the
 * connection's start or of the end of its previous request, or the connection is shut down. */
int http_guard_start(int timeout_s, struct http_guard **g, char *msg, size_t msg_size);
/* Stops it; call after the daemon stopped (every connection is closed). */
void http_guard_stop(struct http_guard *g);
/* The daemon's connection notifier (MHD_OPTION_NOTIFY_CONNECTION, cls the guard). */
void http_guard_notify(void *cls, struct MHD_Connection *con, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);
/* The request on con has arrived whole: its deadline stops while it is answered. */
void http_guard_arrived(struct http_guard *g, struct MHD_Connection *con);
/* The request on con is over: the next must arrive within the deadline. */
void http_guard_next(struct http_guard *g, struct MHD_Connection *con);
/* The daemon's URL unescaper (MHD_OPTION_UNESCAPE_CALLBACK): %XX decoded, except %00. */
size_t http_guard_unescape(void *cls, struct MHD_Connection *con, char *s);

#endif
