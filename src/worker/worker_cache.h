/* worker_cache.h: the worker's side of the calling program's cache service (worker_cache.c). */
#ifndef TEMPER_WORKER_CACHE_H
#define TEMPER_WORKER_CACHE_H

/* Routes this worker's build cache and task references through the service on descriptor fd,
 * and reports after each job what it built (its PoCL cache is under scratch/pocl). */
void worker_cache_init(int fd, const char *scratch);

#endif
