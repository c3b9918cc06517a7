/* queue_redis_conn.c: the Redis engine's plumbing: the Lua scripts that change a job's state (one
 * each, run atomically by Redis), the connection pool, commands and scripts run on a connection,
 * and the URL. The operations of queue.h are in queue_redis.c. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/queue_redis.h"
#include "temper/error.h"

/* ---- scripts: one per change of state. ARGV[1] is always the key prefix. ---- */

/* finish(): the one transition to a finished state: state, outcome and time in the job's hash,
 * the counters, the finished set (for stats of kept jobs), the expiry, the batch's expiry once
 * its last job is finished, and the token that wakes every long-poll get of the job. */
#define LUA_FINISH                                                                                         \
    "local function finish(P,id,old,new,outcome,now,keep)\n"                                               \
    " local jk=P..':job:'..id\n"                                                                           \
    " redis.call('HSET',jk,'state',new,'finished_us',now)\n"                                               \
    " if outcome then redis.call('HSET',jk,'outcome',outcome) end\n"                                       \
    " redis.call('HINCRBY',P..':counts',old,-1)\n"                                                         \
    " redis.call('ZADD',P..':finished:'..new,now,id)\n"                                                    \
    " redis.call('EXPIRE',jk,keep)\n"                                                                      \
    " local b=redis.call('HGET',jk,'batch')\n"                                                             \
    " if b and b~='' and redis.call('HINCRBY',P..':batchopen',b,-1)<=0 then\n"                             \
    "  redis.call('HDEL',P..':batchopen',b) redis.call('EXPIRE',P..':batch:'..b,keep) end\n"               \
    " local nk=P..':notify:'..id\n"                                                                        \
    " redis.call('RPUSH',nk,'1') redis.call('EXPIRE',nk,keep)\n"                                           \
    "end\n"

const char *const redis_scripts[SCRIPT_COUNT_] = {
    /* SUBMIT id batch cache_key item submitted_us max_depth now keep result: 1 known, 2 full, 0
     * queued (or, with a result, recorded done at once and never on the stream) */
    [SCRIPT_SUBMIT] = LUA_FINISH
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2]\n"
        "if redis.call('EXISTS',jk)==1 then return 1 end\n"
        "local c=redis.call('HMGET',P..':counts','queued','running')\n"
        "if ARGV[10]=='' and (tonumber(c[1]) or 0)+(tonumber(c[2]) or 0)>=tonumber(ARGV[7]) then return 2 end\n"
        "for _,s in ipairs({'done','failed','cancelled'}) do\n"
        " redis.call('ZREMRANGEBYSCORE',P..':finished:'..s,'-inf',tonumber(ARGV[8])-tonumber(ARGV[9])*1000000) end\n"
        "redis.call('ZREM',P..':finished:done',ARGV[2]) redis.call('ZREM',P..':finished:failed',ARGV[2])\n"
        "redis.call('ZREM',P..':finished:cancelled',ARGV[2]) redis.call('DEL',P..':notify:'..ARGV[2])\n"
        "redis.call('HSET',jk,'state','queued','batch',ARGV[3],'cache_key',ARGV[4],'item',ARGV[5],\n"
        " 'submitted_us',ARGV[6],'deliveries','0')\n"
        "redis.call('HINCRBY',P..':counts','queued',1) redis.call('HINCRBY',P..':counts','submitted',1)\n"
        "if ARGV[3]~='' then local bk=P..':batch:'..ARGV[3]\n"
        " redis.call('RPUSH',bk,ARGV[2]) redis.call('PERSIST',bk) redis.call('HINCRBY',P..':batchopen',ARGV[3],1) end\n"
        "if ARGV[10]~='' then finish(P,ARGV[2],'queued','done',ARGV[10],ARGV[8],ARGV[9]) return 0 end\n"
        "redis.call('HSET',jk,'sid',redis.call('XADD',P..':jobs','*','id',ARGV[2]))\n"
        "return 0\n",
    /* MARK id sid consumer deliveries: hands a delivered or claimed entry over as running; nil (and
     * the entry acknowledged) when its job is finished, cancelled or gone */
    [SCRIPT_MARK] =
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2]\n"
        "local st=redis.call('HGET',jk,'state')\n"
        "if st~='queued' and st~='running' then\n"
        " redis.call('XACK',P..':jobs','" REDIS_GROUP "',ARGV[3]) redis.call('XDEL',P..':jobs',ARGV[3]) return false end\n"
        "if st=='queued' then redis.call('HINCRBY',P..':counts','queued',-1) redis.call('HINCRBY',P..':counts','running',1) end\n"
        "redis.call('HSET',jk,'state','running','consumer',ARGV[4],'deliveries',ARGV[5])\n"
        "if tonumber(ARGV[5])>1 then redis.call('HINCRBY',P..':counts','redeliveries',1) end\n"
        "return redis.call('HMGET',jk,'item','batch','cache_key','submitted_us')\n",
    /* CLAIM consumer min_idle_ms: claims one entry idle that long: {sid, id, deliveries} or nil */
    [SCRIPT_CLAIM] =
        "local P=ARGV[1] local cur='0-0'\n"
        "for i=1,100000 do\n"
        " local r=redis.call('XAUTOCLAIM',P..':jobs','" REDIS_GROUP "',ARGV[2],ARGV[3],cur,'COUNT',1)\n"
        " local e=r[2][1]\n"
        " if e then\n"
        "  local id=nil\n"
        "  if e[2] then for k=1,#e[2],2 do if e[2][k]=='id' then id=e[2][k+1] end end end\n"
        "  if id then\n"
        "   local p=redis.call('XPENDING',P..':jobs','" REDIS_GROUP "',e[1],e[1],1)\n"
        "   return {e[1],id,(p[1] and p[1][4]) or 1} end\n"
        "  redis.call('XACK',P..':jobs','" REDIS_GROUP "',e[1])\n"
        " end\n"
        " cur=r[1] if cur=='0-0' then return false end\n"
        "end\n"
        "return false\n",
    /* COMPLETE id state outcome now keep: 0 recorded, 1 finished already (kept), -1 unknown */
    [SCRIPT_COMPLETE] = LUA_FINISH
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2]\n"
        "local st=redis.call('HGET',jk,'state')\n"
        "if not st then return -1 end\n"
        "local r=1\n"
        "if st=='queued' or st=='running' then finish(P,ARGV[2],st,ARGV[3],ARGV[4],ARGV[5],ARGV[6]) r=0 end\n"
        "local sid=redis.call('HGET',jk,'sid')\n"
        "if sid then redis.call('XACK',P..':jobs','" REDIS_GROUP "',sid) redis.call('XDEL',P..':jobs',sid) end\n"
        "return r\n",
    /* DEAD id sid deliveries result now keep: records the runtime_error result, then the dead letter */
    [SCRIPT_DEAD] = LUA_FINISH
        "local P=ARGV[1] local st=redis.call('HGET',P..':job:'..ARGV[2],'state')\n"
        "if st=='queued' or st=='running' then\n"
        " redis.call('HSET',P..':job:'..ARGV[2],'deliveries',ARGV[4])\n"
        " finish(P,ARGV[2],st,'done',ARGV[5],ARGV[6],ARGV[7])\n"
        " redis.call('XADD',P..':dead','*','id',ARGV[2],'deliveries',ARGV[4],'result',ARGV[5])\n"
        " redis.call('HINCRBY',P..':counts','dead_letters',1) end\n"
        "redis.call('XACK',P..':jobs','" REDIS_GROUP "',ARGV[3]) redis.call('XDEL',P..':jobs',ARGV[3])\n"
        "return 0\n",
    /* CANCEL id now keep: the state it had, or nil if unknown. A queued job's entry goes now; a
     * running one's stays pending until its consumer completes it (or a claim finds it cancelled). */
    [SCRIPT_CANCEL] = LUA_FINISH
        "local P=ARGV[1] local jk=P..':job:'..ARGV[2]\n"
        "local st=redis.call('HGET',jk,'state')\n"
        "if not st then return false end\n"
        "if st=='queued' or st=='running' then finish(P,ARGV[2],st,'cancelled',nil,ARGV[3],ARGV[4]) end\n"
        "local sid=redis.call('HGET',jk,'sid')\n"
        "if st=='queued' and sid then\n"
        " redis.call('XACK',P..':jobs','" REDIS_GROUP "',sid) redis.call('XDEL',P..':jobs',sid) end\n"
        "return st\n",
    /* BEAT consumer report now keep_s: the report, and the idle time of the consumer's own pending
     * entries reset (JUSTID: no delivery counted), so that a live consumer's long job is not claimed */
    [SCRIPT_BEAT] =
        "local P=ARGV[1]\n"
        "redis.call('SET',P..':worker:'..ARGV[2],ARGV[3],'EX',ARGV[5])\n"
        "redis.call('ZADD',P..':workers',ARGV[4],ARGV[2])\n"
        "redis.call('ZREMRANGEBYSCORE',P..':workers','-inf',tonumber(ARGV[4])-tonumber(ARGV[5])*1000000)\n"
        "local p=redis.call('XPENDING',P..':jobs','" REDIS_GROUP "','-','+',1000,ARGV[2])\n"
        "local ids={} for _,e in ipairs(p) do ids[#ids+1]=e[1] end\n"
        "if #ids>0 then redis.call('XCLAIM',P..':jobs','" REDIS_GROUP "',ARGV[2],0,unpack(ids),'JUSTID') end\n"
        "return #ids\n",
    /* STATS now keep: {queued, running, done, failed, cancelled, redeliveries, dead_letters} */
    [SCRIPT_STATS] =
        "local P=ARGV[1] local out=redis.call('HMGET',P..':counts','queued','running')\n"
        "for _,s in ipairs({'done','failed','cancelled'}) do local k=P..':finished:'..s\n"
        " redis.call('ZREMRANGEBYSCORE',k,'-inf',tonumber(ARGV[2])-tonumber(ARGV[3])*1000000)\n"
        " out[#out+1]=redis.call('ZCARD',k) end\n"
        "local c=redis.call('HMGET',P..':counts','redeliveries','dead_letters')\n"
        "out[#out+1]=c[1] out[#out+1]=c[2]\n"
        "for i=1,7 do out[i]=tonumber(out[i]) or 0 end\n"
        "return out\n",
};
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
    const char *a[16];
    size_t lens[16];
    if (argc > 12) {
        temper_fail(msg, msg_size, TEMPER_EINVALID, "redis: too many script arguments");
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
