/* queue_redis.h: what the Redis engine's files share (internal to src/serve): the queue object,
 * its connection pool (queue_redis_conn.c) and the Lua scripts that change a job's state
 * (queue_redis_scripts.c). */
#ifndef TEMPER_SERVE_QUEUE_REDIS_H
#define TEMPER_SERVE_QUEUE_REDIS_H

#include <hiredis/hiredis.h>
#include <pthread.h>

#include "serve/queue.h"

/* The consumer group every consumer joins. */
#define REDIS_GROUP "workers"
/* Idle connections kept for reuse; more may be open while calls run. */
#define REDIS_POOL 16
/* The socket timeout of every command; blocking commands wait at most REDIS_BLOCK_MS at a time. */
#define REDIS_TIMEOUT_S 30
#define REDIS_BLOCK_MS 10000
/* A worker's report is kept this long after its last beat. */
#define REDIS_WORKER_KEEP_S 3600

/* The scripts, one per change of state (their text: redis_scripts). */
enum redis_script {
    SCRIPT_SUBMIT,
    SCRIPT_MARK,
    SCRIPT_RECOVER,
    SCRIPT_COMPLETE,
    SCRIPT_DEAD,
    SCRIPT_CANCEL,
    SCRIPT_BEAT,
    SCRIPT_STATS,
    SCRIPT_RELEASE,
    SCRIPT_COUNT_
};

extern const char *const redis_scripts[SCRIPT_COUNT_];

/* A Redis queue: where the server is, the key prefix, and the pool of idle connections. */
struct redis_queue {
    struct temper_queue base;          /* ops and config; first, so the pointer converts */
    char host[256];                    /* the server's host name or address */
    int port;                          /* its port */
    int db;                            /* the database number (SELECT) */
    char user[128];                    /* the ACL user, "" for the default */
    char password[256];                /* the password, "" for none */
    char prefix[65];                   /* every key begins with prefix ':' */
    int64_t cache_ttl_s;               /* how long a cached result is kept */
    char sha[SCRIPT_COUNT_][41];       /* each script's SHA1 (SCRIPT LOAD at open) */
    pthread_mutex_t lock;              /* guards idle and n_idle */
    redisContext *idle[REDIS_POOL];    /* connections not in use (owned) */
    int n_idle;                        /* how many */
};

/* Runs one command given as argv (strings, or binary with lens); NULL with msg on a failure of
 * the connection (the caller drops it) or an error reply. Caller frees with freeReplyObject. */
redisReply *redis_command(redisContext *c, int argc, const char **argv, const size_t *lens, char *msg,
                          size_t msg_size);
/* Opens a connection (AUTH, SELECT done). Caller frees with redisFree, or hands it to redis_conn_put. */
int redis_connect(struct redis_queue *q, redisContext **out, char *msg, size_t msg_size);
/* Borrows a connection from the pool, or opens one. */
int redis_conn_get(struct redis_queue *q, redisContext **c, char *msg, size_t msg_size);
/* Returns a connection to the pool, or closes it when it failed (its replies may be out of step). */
void redis_conn_put(struct redis_queue *q, redisContext *c, int failed);
/* Runs a script by its SHA1 (EVAL again if the server lost it); ARGV[1] is the prefix, added here,
 * then argv (any number). Caller frees the reply; NULL with msg on failure. */
redisReply *redis_script(struct redis_queue *q, redisContext *c, enum redis_script s, int argc, const char **argv,
                         char *msg, size_t msg_size);
/* redis_script on a connection from the pool, given back after (closed if it failed): *out is the
 * reply (caller frees); TEMPER_EIO with msg when there is none. */
int redis_run(struct redis_queue *q, enum redis_script s, int argc, const char **argv, redisReply **out, char *msg,
              size_t msg_size);
/* Runs one plain command on a pooled connection. Caller frees *out. */
int redis_simple(struct redis_queue *q, int argc, const char **argv, redisReply **out, char *msg, size_t msg_size);
/* Reads redis://[[user]:password@]host[:port][/db][?NAME=VALUE&...] into q: the parameters are
 * prefix, cache_ttl_s and the numbers of struct temper_queue_config (which override q's). */
int redis_url_parse(struct redis_queue *q, const char *url, char *msg, size_t msg_size);

#endif
