/* dtype.c: element types, with exact conversions to double and correctly rounded ones back. */
#include <math.h>
#include <string.h>

#include "util/util.h"

/* Name and size of each dtype, in enum order. */
static const struct {
    const char *name; /* as written in task.json */
    size_t size;      /* bytes per element */
    int is_float;     /* 1 for floating point */
} dtype_table[TEMPER_DTYPE_COUNT] = {
    {"f32", 4, 1}, {"f16", 2, 1}, {"bf16", 2, 1}, {"i8", 1, 0}, {"u8", 1, 0}, {"i32", 4, 0}, {"i64", 8, 0},
};

int temper_dtype_parse(const char *name)
{
    for (int i = 0; i < TEMPER_DTYPE_COUNT; i++)
        if (!strcmp(name, dtype_table[i].name))
            return i;
    return -1;
}

const char *temper_dtype_name(enum temper_dtype t)
{
    return dtype_table[t].name;
}

size_t temper_dtype_size(enum temper_dtype t)
{
    return dtype_table[t].size;
}

int temper_dtype_is_float(enum temper_dtype t)
{
    return dtype_table[t].is_float;
}

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

float temper_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    if (exp == 0x1f)
        return bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t temper_float_to_half(float f)
{
    uint32_t u = float_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t abs = u & 0x7fffffffu;
    if (abs >= 0x7f800000u)
        return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);
    if (abs >= 0x477ff000u) /* rounds to at least 65520: overflow to infinity */
        return sign | 0x7c00;
    if (abs < 0x38800000u) { /* below the smallest normal half: a subnormal, rounded to even */
        float a = bits_float(abs);
        float scaled = a * 16777216.0f; /* 2^24: units of the smallest subnormal */
        return sign | (uint16_t)lrintf(scaled);
    }
    uint32_t mant = abs & 0x7fffff, exp = (abs >> 23) - 112;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fff;
    if (rest > 0x1000 || (rest == 0x1000 && (h & 1)))
        h++;
    return sign | (uint16_t)h;
}

float temper_bf16_to_float(uint16_t h)
{
    return bits_float((uint32_t)h << 16);
}

uint16_t temper_float_to_bf16(float f)
{
    uint32_t u = float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

double temper_dtype_load(enum temper_dtype t, const void *base, size_t i)
{
    switch (t) {
    case TEMPER_DTYPE_F32:
        return ((const float *)base)[i];
    case TEMPER_DTYPE_F16:
        return temper_half_to_float(((const uint16_t *)base)[i]);
    case TEMPER_DTYPE_BF16:
        return temper_bf16_to_float(((const uint16_t *)base)[i]);
    case TEMPER_DTYPE_I8:
        return ((const int8_t *)base)[i];
    case TEMPER_DTYPE_U8:
        return ((const uint8_t *)base)[i];
    case TEMPER_DTYPE_I32:
        return ((const int32_t *)base)[i];
    case TEMPER_DTYPE_I64:
        return (double)((const int64_t *)base)[i];
    default:
        return NAN;
    }
}

/* Rounds a double to a float with round-to-odd: a float has more than two bits beyond a half's
 * or a bfloat16's mantissa, so rounding that result once more to nearest-even gives the correctly
 * rounded half or bfloat16 of the double, with no double rounding. */
static float to_float_odd(double v)
{
    float f = (float)v;
    if (!isfinite(v) || (double)f == v)
        return f;
    if (fabs((double)f) > fabs(v))
        f = nextafterf(f, 0.0f);
    uint32_t u = float_bits(f);
    u |= 1;
    return bits_float(u);
}

static double clamp_round(double v, double lo, double hi)
{
    if (isnan(v))
        return 0;
    v = nearbyint(v);
    return v < lo ? lo : v > hi ? hi : v;
}

void temper_dtype_store(enum temper_dtype t, void *base, size_t i, double v)
{
    switch (t) {
    case TEMPER_DTYPE_F32:
        ((float *)base)[i] = (float)v;
        break;
    case TEMPER_DTYPE_F16:
        ((uint16_t *)base)[i] = temper_float_to_half(to_float_odd(v));
        break;
    case TEMPER_DTYPE_BF16:
        ((uint16_t *)base)[i] = temper_float_to_bf16(to_float_odd(v));
        break;
    case TEMPER_DTYPE_I8:
        ((int8_t *)base)[i] = (int8_t)clamp_round(v, -128, 127);
        break;
    case TEMPER_DTYPE_U8:
        ((uint8_t *)base)[i] = (uint8_t)clamp_round(v, 0, 255);
        break;
    case TEMPER_DTYPE_I32:
        ((int32_t *)base)[i] = (int32_t)clamp_round(v, -2147483648.0, 2147483647.0);
        break;
    case TEMPER_DTYPE_I64:
        if (isnan(v))
            ((int64_t *)base)[i] = 0;
        else if (nearbyint(v) >= 9223372036854775808.0)
            ((int64_t *)base)[i] = INT64_MAX;
        else if (nearbyint(v) <= -9223372036854775808.0)
            ((int64_t *)base)[i] = INT64_MIN;
        else
            ((int64_t *)base)[i] = (int64_t)nearbyint(v);
        break;
    default:
        break;
    }
}
