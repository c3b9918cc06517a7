/* hash.c: content hashes (xxHash XXH3) for the build cache, checksums and candidate identity. */
#include <stdio.h>
#include <xxhash.h>

#include "temper/util.h"

uint64_t temper_hash64(const void *data, size_t n, uint64_t seed)
{
    return XXH3_64bits_withSeed(data, n, seed);
}

void temper_hash_hex(uint64_t h, char out[17])
{
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}
