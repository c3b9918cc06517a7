/* cache.c: the content-addressed build cache. A binary is stored under the hash of everything
 * that decides it; writes go to a temporary name and are renamed into place, so concurrent
 * processes share the cache without locks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "temper/kernel.h"

#define BUILD_BINARY_MAX (256u << 20)

uint64_t temper_build_key(const char *source, size_t len, const char *options, const char *compiler_version,
                          const char *target)
{
    uint64_t h = temper_hash64(source, len, 0x7e397e39ull);
    h = temper_hash64(options, strlen(options), h);
    h = temper_hash64(compiler_version, strlen(compiler_version), h);
    return temper_hash64(target, strlen(target), h);
}

static void cache_path(uint64_t key, char *out, size_t out_size)
{
    char hex[17], cache[4096];
    temper_hash_hex(key, hex);
    snprintf(out, out_size, "%.3000s/build/%.2s/%s.bin", temper_cache_dir(cache, sizeof(cache)), hex, hex + 2);
}

int temper_build_cache_get(uint64_t key, void **data, size_t *size)
{
    char path[TEMPER_PATH_MAX];
    cache_path(key, path, sizeof(path));
    char *text;
    int err = temper_read_file(path, BUILD_BINARY_MAX, &text, size, NULL, 0);
    if (err)
        return TEMPER_ENOTFOUND;
    *data = text;
    return 0;
}

int temper_build_cache_has(uint64_t key)
{
    char path[TEMPER_PATH_MAX];
    cache_path(key, path, sizeof(path));
    return access(path, R_OK) == 0;
}

int temper_build_cache_put(uint64_t key, const void *data, size_t size)
{
    char path[TEMPER_PATH_MAX];
    cache_path(key, path, sizeof(path));
    return temper_write_file_atomic(path, data, size, NULL, 0);
}
