/* rng.c: a fast, reproducible random number generator (xoshiro256**) for test inputs, and
 * unpredictable seeds for the secret per-run seed. */
#include <math.h>
#include <pthread.h>
#include <sys/random.h>

#include "util/util.h"

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

/* Standard normals by the ziggurat method (Marsaglia and Tsang, 2000; in Doornik's 2005 form, which
 * draws the layer and the abscissa from independent bits). The density under the curve is covered
 * by ZIG_LAYERS horizontal strips of equal area ZIG_AREA, the lowest one carrying the tail beyond
 * ZIG_R. A draw picks a strip and a point in it; the point lies inside the curve's rectangle part
 * (about 99 % of draws) and is returned after one multiplication, else it is tested against the
 * density or drawn from the tail. Box-Muller needs a logarithm, a square root and a sine or cosine
 * per number: on a CPU that made drawing the inputs cost more than the kernels under test. */
#define ZIG_LAYERS 128
#define ZIG_R 3.442619855899          /* where the tail starts, for 128 layers */
#define ZIG_AREA 9.91256303526217e-3  /* each strip's area, for 128 layers */

static double zig_x[ZIG_LAYERS + 1]; /* the strips' right edges: zig_x[0] the base's effective width */
static double zig_ratio[ZIG_LAYERS]; /* zig_x[i + 1] / zig_x[i]: below it, a point is inside at once */
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static double density(double x)
{
    return exp(-0.5 * x * x);
}

static void zig_tables(void)
{
    double f = density(ZIG_R);
    zig_x[0] = ZIG_AREA / f;
    zig_x[1] = ZIG_R;
    zig_x[ZIG_LAYERS] = 0;
    for (int i = 2; i < ZIG_LAYERS; i++) {
        zig_x[i] = sqrt(-2.0 * log(ZIG_AREA / zig_x[i - 1] + f));
        f = density(zig_x[i]);
    }
    for (int i = 0; i < ZIG_LAYERS; i++)
        zig_ratio[i] = zig_x[i + 1] / zig_x[i];
}

/* A normal beyond ZIG_R (Marsaglia, 1964), with the sign asked for. */
static double zig_tail(struct temper_rng *r, int negative)
{
    double x, y;
    do {
        x = log(1.0 - temper_rng_uniform(r)) / ZIG_R;
        y = log(1.0 - temper_rng_uniform(r));
    } while (-2.0 * y < x * x);
    return negative ? x - ZIG_R : ZIG_R - x;
}

double temper_rng_normal(struct temper_rng *r)
{
    pthread_once(&zig_once, zig_tables);
    for (;;) {
        uint64_t bits = temper_rng_next(r);
        /* the top 53 bits: a uniform in (-1, 1); the low 7, independent of them: the strip */
        double u = (double)(bits >> 11) * 0x1.0p-52 - 1.0;
        int i = (int)(bits & (ZIG_LAYERS - 1));
        if (fabs(u) < zig_ratio[i])
            return u * zig_x[i];
        if (i == 0)
            return zig_tail(r, u < 0);
        double x = u * zig_x[i];
        double f0 = exp(-0.5 * (zig_x[i] * zig_x[i] - x * x));
        double f1 = exp(-0.5 * (zig_x[i + 1] * zig_x[i + 1] - x * x));
        if (f1 + temper_rng_uniform(r) * (f0 - f1) < 1.0)
            return x;
    }
}

uint64_t temper_secret_seed(void)
{
    uint64_t s = 0;
    if (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s))
        s = temper_now_ns() ^ 0x5deece66dull;
    return s;
}
