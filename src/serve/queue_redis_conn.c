/* queue_redis_conn.c: the Redis engine's plumbing: the connection pool, commands and scripts run
 * on a connection, and the URL. The Lua scripts that change a job's state are in
 * queue_redis_scripts.c, the operations of queue.h in queue_redis.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/queue_redis.h"
#include "temper/error.h"

/* ---- connections ---- */

/* Runs one command given as argv (strings, or binary with lens); NULL with msg on a failure of
 * the connection (the caller drops it) or an error reply. Caller frees with freeReplyObject. */
redisReply *redis_command(redisContext *c, int argc, const char **argv, const size_t *lens, char *msg,
                           size_t msg_size)
{
    redisReply *r = redisCommandArgv(c, argc, argv, lens);
    if (!r) {
        temper_fail(msg, msg_size, TEMPER_EIO, "redis: %s", c->errstr[0] ? c->errstr : "connection lost");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        temper_fail(msg, msg_size, TEMPER_EIO, "redis: %s: %s", argv[0], r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

int redis_connect(struct redis_queue *q, redisContext **out, char *msg, size_t msg_size)
{
    struct timeval tv = {5, 0};
    redisContext *c = redisConnectWithTimeout(q->host, q->port, tv);
    if (!c || c->err) {
        int err = temper_fail(msg, msg_size, TEMPER_EIO, "redis: cannot connect to %s:%d: %s", q->host, q->port,
                              c ? c->errstr : "out of memory");
        if (c)
            redisFree(c);
        return err;
    }
    struct timeval to = {REDIS_TIMEOUT_S, 0};
    redisSetTimeout(c, to);
    redisReply *r = NULL;
    if (q->password[0]) {
        const char *a[] = {"AUTH", q->user, q->password};
        r = q->user[0] ? redis_command(c, 3, a, NULL, msg, msg_size) : (a[1] = q->password, redis_command(c, 2, a, NULL, msg, msg_size));
        if (!r)
            goto fail;
        freeReplyObject(r);
    }
    if (q->db) {
        char db[16];
        snprintf(db, sizeof(db), "%d", q->db);
        const char *a[] = {"SELECT", db};
        if (!(r = redis_command(c, 2, a, NULL, msg, msg_size)))
            goto fail;
        freeReplyObject(r);
    }
    *out = c;
    return 0;
fail:
    redisFree(c);
    return TEMPER_EIO;
}

int redis_conn_get(struct redis_queue *q, redisContext **c, char *msg, size_t msg_size)
{
    pthread_mutex_lock(&q->lock);
    *c = q->n_idle ? q->idle[--q->n_idle] : NULL;
    pthread_mutex_unlock(&q->lock);
    return *c ? 0 : redis_connect(q, c, msg, msg_size);
}

/* Returns a connection to the pool, or closes it when it failed (its replies may be out of step). */
void redis_conn_put(struct redis_queue *q, redisContext *c, int failed)
{
    if (!c)
        return;
    if (!failed && !c->err) {
        pthread_mutex_lock(&q->lock);
        if (q->n_idle < REDIS_POOL) {
            q->idle[q->n_idle++] = c;
            c = NULL;
        }
        pthread_mutex_unlock(&q->lock);
    }
    if (c)
        redisFree(c);
}

/* Runs a script by its SHA1, loading it again if the server lost it (a restart). Arguments are
 * strings; ARGV[1] is the prefix, added here. */
redisReply *redis_script(struct redis_queue *q, redisContext *c, enum redis_script s, int argc, const char **argv,
                          char *msg, size_t msg_size)
{
    const char **a = malloc((size_t)(argc + 4) * sizeof(*a));
    size_t *lens = malloc((size_t)(argc + 4) * sizeof(*lens));
    if (!a || !lens) {
        free(a);
        free(lens);
        temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of memory");
        return NULL;
    }
    a[0] = "EVALSHA";
    a[1] = q->sha[s];
    a[2] = "0";
    a[3] = q->prefix;
    for (int i = 0; i < argc; i++)
        a[4 + i] = argv[i];
    for (int i = 0; i < argc + 4; i++)
        lens[i] = strlen(a[i]);
    redisReply *r = redisCommandArgv(c, argc + 4, a, lens);
    if (r && r->type == REDIS_REPLY_ERROR && !strncmp(r->str, "NOSCRIPT", 8)) {
        freeReplyObject(r);
        a[0] = "EVAL";
        a[1] = redis_scripts[s];
        lens[1] = strlen(redis_scripts[s]);
        r = redisCommandArgv(c, argc + 4, a, lens);
    }
    free(a);
    free(lens);
    if (!r) {
        temper_fail(msg, msg_size, TEMPER_EIO, "redis: %s", c->errstr[0] ? c->errstr : "connection lost");
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        temper_fail(msg, msg_size, TEMPER_EIO, "redis: script failed: %s", r->str);
        freeReplyObject(r);
        return NULL;
    }
    return r;
}

/* Runs one plain command on a pooled connection. Caller frees the reply. */
int redis_simple(struct redis_queue *q, int argc, const char **argv, redisReply **out, char *msg, size_t msg_size)
{
    redisContext *c;
    int err = redis_conn_get(q, &c, msg, msg_size);
    if (err)
        return err;
    *out = redis_command(c, argc, argv, NULL, msg, msg_size);
    redis_conn_put(q, c, !*out);
    return *out ? 0 : TEMPER_EIO;
}

/* Copies a part of the URL into a field; 0 if it does not fit. */
static int part_copy(char *dst, size_t size, const char *src)
{
    size_t n = strlen(src);
    if (n >= size)
        return 0;
    memcpy(dst, src, n + 1);
    return 1;
}

/* The URL as messages show it: a password in it replaced by "***" (stderr goes to logs). */
static void url_shown(const char *url, char *out, size_t size)
{
    const char *auth = strstr(url, "://");
    auth = auth ? auth + 3 : url;
    size_t end = strcspn(auth, "/?");
    const char *at = NULL;
    for (size_t i = 0; i < end; i++)
        if (auth[i] == '@')
            at = auth + i;
    if (!at) {
        snprintf(out, size, "%s", url);
        return;
    }
    const char *colon = memchr(auth, ':', (size_t)(at - auth)); /* user:password, else all of it is the password */
    const char *pw = colon ? colon + 1 : auth;
    snprintf(out, size, "%.*s***%s", (int)(pw - url), url, at);
}

/* Reads redis://[[user]:password@]host[:port][/db][?NAME=VALUE&...] into q: the parameters are
 * prefix, cache_ttl_s and the numbers of struct temper_queue_config (which override q's). */
int redis_url_parse(struct redis_queue *q, const char *url_given, char *msg, size_t msg_size)
{
    char url[1100]; /* what the messages below show */
    url_shown(url_given, url, sizeof(url));
    if (strncmp(url_given, "redis://", 8))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: a Redis URL begins redis://", url);
    char buf[1024];
    if (snprintf(buf, sizeof(buf), "%s", url_given + 8) >= (int)sizeof(buf))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the Redis URL is too long");
    char *query = strchr(buf, '?');
    if (query)
        *query++ = 0;
    char *path = strchr(buf, '/');
    if (path)
        *path++ = 0;
    char *host = buf, *at = strrchr(buf, '@');
    if (at) {
        *at = 0;
        host = at + 1;
        char *colon = strchr(buf, ':');
        if (colon)
            *colon = 0;
        if (!part_copy(q->user, sizeof(q->user), colon ? buf : "") ||
            !part_copy(q->password, sizeof(q->password), colon ? colon + 1 : buf))
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "the Redis URL's user or password is too long");
    }
    char *port = strrchr(host, ':');
    q->port = 6379;
    if (port) {
        *port++ = 0;
        char *end;
        long v = strtol(port, &end, 10);
        if (*end || v < 1 || v > 65535)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: the port must be 1 to 65535", url);
        q->port = (int)v;
    }
    if (!part_copy(q->host, sizeof(q->host), *host ? host : "127.0.0.1"))
        return temper_fail(msg, msg_size, TEMPER_EINVALID, "the Redis URL's host is too long");
    if (path && *path) {
        char *end;
        long v = strtol(path, &end, 10);
        if (*end || v < 0 || v > 1000000)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: the database must be a number", url);
        q->db = (int)v;
    }
    snprintf(q->prefix, sizeof(q->prefix), "temper");
    for (char *save = NULL, *p = query ? strtok_r(query, "&", &save) : NULL; p; p = strtok_r(NULL, "&", &save)) {
        char *eq = strchr(p, '=');
        if (!eq)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: '%s' is not NAME=VALUE", url, p);
        *eq++ = 0;
        if (!strcmp(p, "prefix")) {
            size_t n = strlen(eq);
            if (n == 0 || n > 64 || strspn(eq, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.:-") != n)
                return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: the prefix must be 1 to 64 of [A-Za-z0-9_.:-]", url);
            snprintf(q->prefix, sizeof(q->prefix), "%s", eq);
            continue;
        }
        /* The numbers: the settings every process of one gym must share, so they travel in the URL. */
        struct temper_queue_config *cf = &q->base.config;
        static const struct {
            const char *name; /* the parameter */
            long long max;    /* its largest value */
        } nums[] = {{"cache_ttl_s", 1LL << 40}, {"claim_idle_ms", INT_MAX}, {"max_deliveries", 1000},
                    {"keep_done_s", 1LL << 40}, {"max_depth", 1LL << 40}};
        size_t i = 0;
        while (i < sizeof(nums) / sizeof(nums[0]) && strcmp(p, nums[i].name))
            i++;
        if (i == sizeof(nums) / sizeof(nums[0]))
            return temper_fail(msg, msg_size, TEMPER_EINVALID,
                               "%s: unknown parameter '%s' (prefix, cache_ttl_s, claim_idle_ms, max_deliveries, "
                               "keep_done_s, max_depth)", url, p);
        char *end;
        errno = 0;
        long long v = strtoll(eq, &end, 10);
        if (errno || !*eq || *end || v < 1 || v > nums[i].max)
            return temper_fail(msg, msg_size, TEMPER_EINVALID, "%s: %s must be a number from 1 to %lld", url, p,
                               nums[i].max);
        if (i == 0)
            q->cache_ttl_s = v;
        else if (i == 1)
            cf->claim_idle_ms = (int)v;
        else if (i == 2)
            cf->max_deliveries = (int)v;
        else if (i == 3)
            cf->keep_done_s = v;
        else
            cf->max_depth = v;
    }
    return 0;
}

int redis_run(struct redis_queue *q, enum redis_script s, int argc, const char **argv, redisReply **out, char *msg,
              size_t msg_size)
{
    redisContext *c;
    *out = NULL;
    int err = redis_conn_get(q, &c, msg, msg_size);
    if (err)
        return err;
    *out = redis_script(q, c, s, argc, argv, msg, msg_size);
    redis_conn_put(q, c, !*out);
    return *out ? 0 : TEMPER_EIO;
}
