/* queue_open.c: opening the job queue by its URL (queue.h): redis:// for the Redis Streams engine
 * (queue_redis.c), anything else the SQLite store's file (queue_local.c). Apart from queue.c, which
 * both engines call, so that nothing the engines use calls back into them. */
#include <string.h>

#include "serve/queue.h"
#include "temper/error.h"

int temper_queue_open(const char *url, const struct temper_queue_config *config, struct temper_queue **q,
                      char *msg, size_t msg_size)
{
    *q = NULL;
    if (url && !strncmp(url, "redis://", 8)) {
#ifdef TEMPER_HAVE_REDIS
        return temper_queue_open_redis(url, config, q, msg, msg_size);
#else
        return temper_fail(msg, msg_size, TEMPER_EUNSUPPORTED, "this temper was built without Redis support (%s)",
                           url);
#endif
    }
    return temper_queue_open_local(url, config, q, msg, msg_size);
}
