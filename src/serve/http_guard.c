/* http_guard.c: the gym's guards on its HTTP connections (http_guard.h).
 *
 * libmicrohttpd's own connection timeout counts idle time: a client sending one byte every few
 * seconds never reaches it, and 256 such clients take every connection. Here each connection is
 * known from its start (the daemon's connection notifier) to its close, and a thread looks every
 * GUARD_LOOK_MS at those waiting for a request: one whose request has not arrived whole within the
 * timeout is shut down (shutdown(2): its thread's read ends and the daemon closes it). A request
 * being answered (a long poll included) is not cut; the next one's time starts when it is over.
 * The socket is shut down under the lock that the close notification takes before libmicrohttpd
 * closes the descriptor, so it is never another socket's. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "serve/http_guard.h"
#include "temper/error.h"

#define GUARD_LOOK_MS 250 /* how often late connections are looked for */

/* One open connection. */
struct guarded {
    MHD_socket fd;          /* its socket */
    int64_t since_ms;       /* when it began waiting for a request (monotonic) */
    int waiting;            /* 1 while a request is awaited or arriving; 0 while one is answered */
    int cut;                /* 1 once shut down */
    struct guarded *prev;   /* the list of open connections */
    struct guarded *next;
};

struct http_guard {
    pthread_mutex_t lock;   /* guards the list and every entry */
    pthread_cond_t wake;    /* wakes the thread to stop */
    pthread_t thread;       /* the thread that cuts late connections */
    int stop;               /* 1: the thread ends */
    int64_t timeout_ms;     /* a request must arrive whole within this */
    struct guarded *head;   /* the open connections */
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void *guard_main(void *arg)
{
    struct http_guard *g = arg;
    pthread_mutex_lock(&g->lock);
    while (!g->stop) {
        int64_t now = mono_ms();
        for (struct guarded *c = g->head; c; c = c->next)
            if (c->waiting && !c->cut && now - c->since_ms > g->timeout_ms) {
                shutdown(c->fd, SHUT_RDWR);
                c->cut = 1;
            }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += GUARD_LOOK_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&g->wake, &g->lock, &ts);
    }
    pthread_mutex_unlock(&g->lock);
    return NULL;
}

int http_guard_start(int timeout_s, struct http_guard **out, char *msg, size_t msg_size)
{
    *out = NULL;
    struct http_guard *g = calloc(1, sizeof(*g));
    if (!g)
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
    g->timeout_ms = (int64_t)timeout_s * 1000;
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&g->thread, NULL, guard_main, g)) {
        pthread_cond_destroy(&g->wake);
        pthread_mutex_destroy(&g->lock);
        free(g);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "cannot start the connections' guard thread");
    }
    *out = g;
    return 0;
}

void http_guard_stop(struct http_guard *g)
{
    if (!g)
        return;
    pthread_mutex_lock(&g->lock);
    g->stop = 1;
    pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    pthread_join(g->thread, NULL);
    while (g->head) { /* none after the daemon stopped; freed all the same */
        struct guarded *c = g->head;
        g->head = c->next;
        free(c);
    }
    pthread_cond_destroy(&g->wake);
    pthread_mutex_destroy(&g->lock);
    free(g);
}

void http_guard_notify(void *cls, struct MHD_Connection *con, void **socket_context,
                       enum MHD_ConnectionNotificationCode code)
{
    struct http_guard *g = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info = MHD_get_connection_info(con, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct guarded *c = info ? calloc(1, sizeof(*c)) : NULL;
        *socket_context = c;
        if (!c)
            return; /* out of memory: this connection has only the daemon's idle timeout */
        c->fd = info->connect_fd;
        c->since_ms = mono_ms();
        c->waiting = 1;
        pthread_mutex_lock(&g->lock);
        c->next = g->head;
        if (g->head)
            g->head->prev = c;
        g->head = c;
        pthread_mutex_unlock(&g->lock);
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct guarded *c = *socket_context;
        pthread_mutex_lock(&g->lock);
        if (c->prev)
            c->prev->next = c->next;
        else
            g->head = c->next;
        if (c->next)
            c->next->prev = c->prev;
        pthread_mutex_unlock(&g->lock);
        free(c);
        *socket_context = NULL;
    }
}

/* Sets the connection's state: waiting for a request (since now), or answering one. */
static void set_waiting(struct http_guard *g, struct MHD_Connection *con, int waiting)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(con, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    struct guarded *c = info ? info->socket_context : NULL;
    if (!c)
        return;
    pthread_mutex_lock(&g->lock);
    c->waiting = waiting;
    c->since_ms = mono_ms();
    pthread_mutex_unlock(&g->lock);
}

void http_guard_arrived(struct http_guard *g, struct MHD_Connection *con)
{
    set_waiting(g, con, 0);
}

void http_guard_next(struct http_guard *g, struct MHD_Connection *con)
{
    set_waiting(g, con, 1);
}

static int hex_value(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

size_t http_guard_unescape(void *cls, struct MHD_Connection *con, char *s)
{
    (void)cls;
    (void)con;
    char *w = s;
    for (const char *r = s; *r;) {
        int hi = r[0] == '%' ? hex_value(r[1]) : -1, lo = hi >= 0 ? hex_value(r[2]) : -1;
        if (lo >= 0 && (hi | lo)) { /* %00 stays as it came: an id or a value never holds a NUL */
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}
