/* rng.c: a fast, reproducible random number generator (xoshiro256**) for test inputs, and
 * unpredictable seeds for the secret per-run seed. */
#include <math.h>
#include <sys/random.h>

#include "temper/util.h"

uint64_t temper_mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = temper_mix64(*x);
    *x += 0x9e3779b97f4a7c15ull;
    return z;
}

void temper_rng_seed(struct temper_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
    r->have_spare = 0;
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t temper_rng_next(struct temper_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double temper_rng_uniform(struct temper_rng *r)
{
    return (double)(temper_rng_next(r) >> 11) * 0x1.0p-53;
}

double temper_rng_normal(struct temper_rng *r)
{
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    /* Box-Muller gives two independent normals per pair of uniforms: keep the second. */
    double u1 = temper_rng_uniform(r), u2 = temper_rng_uniform(r);
    double radius = sqrt(-2.0 * log(1.0 - u1)), s, c;
    sincos(2.0 * M_PI * u2, &s, &c);
    r->spare = radius * s;
    r->have_spare = 1;
    return radius * c;
}

uint64_t temper_secret_seed(void)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
        s = temper_now_ns() ^ 0x5deece66dull;
    return s;
}
