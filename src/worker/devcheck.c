/* devcheck.c: comparison and checksums on the device. At GPU bench shapes an output is a
 * gigabyte: reading it back and comparing on the host would take longer than everything else
 * together, so the comparison with the baseline's output runs where the data is, and only
 * counts, the first bad index and the largest errors come back. Inputs and expected outputs
 * are guarded by keyed checksums (the key is the run's secret), so a kernel that writes into
 * them, anywhere, is caught without a second copy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#include "eval/worker_impl.h"

static const char devcheck_cl[] =
    "#if defined(cl_khr_fp64)\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef double real;\n"
    "#define TOREAL(bits) as_double(bits)\n"
    "#else\n"
    "typedef float real;\n"
    "#define TOREAL(bits) ((float)as_double(bits))\n"
    "#endif\n"
    "float temper_load(__global const uchar *p, long i, int t) {\n"
    "  if (t == 0) return ((__global const float *)p)[i];\n"
    "  if (t == 2) return as_float((uint)((__global const ushort *)p)[i] << 16);\n"
    "  return vload_half(i, (__global const half *)p);\n"
    "}\n"
    "__kernel void temper_cmp(__global const uchar *out, __global const uchar *want, long n, long atol_bits,\n"
    "                         long rtol_bits, int type, __global uint *res) {\n"
    "  real atol = TOREAL(atol_bits), rtol = TOREAL(rtol_bits);\n"
    "  uint bad = 0, nonfinite = 0, first = 0xffffffffu; float max_abs = 0, max_rel = 0;\n"
    "  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {\n"
    "    float g = temper_load(out, i, type), w = temper_load(want, i, type); int wrong;\n"
    "    if (!isfinite(w)) wrong = isnan(w) ? !isnan(g) : g != w;\n"
    "    else if (!isfinite(g)) { wrong = 1; nonfinite++; }\n"
    "    else { real e = fabs((real)g - (real)w); max_abs = fmax(max_abs, (float)e);\n"
    "      if (w != 0) max_rel = fmax(max_rel, (float)(e / fabs((real)w)));\n"
    "      wrong = !(e <= atol + rtol * fabs((real)w)); }\n"
    "    if (wrong) { bad++; if (first == 0xffffffffu) first = (uint)i; }\n"
    "  }\n"
    "  if (bad) { atomic_add(&res[0], bad); atomic_min(&res[1], first); }\n"
    "  if (nonfinite) atomic_add(&res[2], nonfinite);\n"
    "  if (max_abs > 0) atomic_max(&res[3], as_uint(max_abs));\n"
    "  if (max_rel > 0) atomic_max(&res[4], as_uint(max_rel));\n"
    "}\n"
    "__kernel void temper_touch(__global const uint4 *data, long n, uint key, __global uint *sink) {\n"
    "  uint x = 0;\n"
    "  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {\n"
    "    uint4 v = data[i]; x ^= v.x ^ v.y ^ v.z ^ v.w;\n"
    "  }\n"
    "  if (x == key) *sink = x;\n"
    "}\n"
    "__kernel __attribute__((reqd_work_group_size(256, 1, 1)))\n"
    "void temper_sum_u32(__global const uint *data, long n, uint key, __global ulong *partial) {\n"
    "  __local ulong part[256];\n"
    "  ulong s = 0;\n"
    "  for (long i = get_global_id(0); i < n; i += get_global_size(0)) {\n"
    "    uint h = data[i] ^ key ^ ((uint)i * 0x9e3779b9u);\n"
    "    h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;\n"
    "    s += h;\n"
    "  }\n"
    "  uint l = get_local_id(0);\n"
    "  part[l] = s;\n"
    "  for (uint w = 128; w > 0; w >>= 1) {\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "    if (l < w) part[l] += part[l + w];\n"
    "  }\n"
    "  if (l == 0) partial[get_group_id(0)] = part[0];\n"
    "}\n"
    "ulong temper_mix64(ulong z) {\n"
    "  z += 0x9e3779b97f4a7c15ul; z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ul;\n"
    "  z = (z ^ (z >> 27)) * 0x94d049bb133111ebul; return z ^ (z >> 31);\n"
    "}\n"
    "ulong temper_bits(int t, float v, float *back) {\n"
    "  if (t == 0) { *back = v; return as_uint(v); }\n"
    "  if (t == 1) { ushort h[1]; vstore_half_rte(v, 0, (half *)h); *back = vload_half(0, (const half *)h);\n"
    "    return h[0]; }\n"
    "  if (t == 2) { uint u = as_uint(v); u = isnan(v) ? (u | 0x400000u) : u + 0x7fffu + ((u >> 16) & 1u);\n"
    "    *back = as_float(u & 0xffff0000u); return u >> 16; }\n"
    "  float r = rint(v);\n"
    "  if (t == 3) { r = clamp(r, -128.0f, 127.0f); *back = r; return (uchar)(char)r; }\n"
    "  if (t == 4) { r = clamp(r, 0.0f, 255.0f); *back = r; return (uchar)r; }\n"
    "  if (t == 5) { r = clamp(r, -2147483648.0f, 2147483520.0f); *back = r; return (uint)(int)r; }\n"
    "  *back = r; return (ulong)(long)r;\n"
    "}\n"
    "float temper_draw(int kind, float a, float b, float u1, float u2, int second) {\n"
    "  if (kind == 0) { float r = native_sqrt(-2.0f * native_log(1.0f - u1)), t = 6.28318531f * u2;\n"
    "    return a + b * r * (second ? native_sin(t) : native_cos(t)); }\n"
    "  float u = second ? u2 : u1;\n"
    "  if (kind == 1) return a + (b - a) * u;\n"
    "  return clamp(floor(a + (b - a + 1.0f) * u), a, b);\n"
    "}\n"
    "uint temper_hash32(uint x, uint y) {\n"
    "  x ^= y * 0x9e3779b9u; x ^= x >> 16; x *= 0x21f0aaadu; x ^= x >> 15; x *= 0x735a2d97u; return x ^ (x >> 15);\n"
    "}\n"
    "ulong2 temper_fill_pair(int type, int kind, float a, float b, ulong key, long p) {\n"
    "  uint lo = (uint)p, hi = (uint)((ulong)p >> 32);\n"
    "  uint h1 = temper_hash32(lo ^ (uint)key, hi ^ (uint)(key >> 32));\n"
    "  uint h2 = temper_hash32(h1 ^ (uint)(key >> 32), lo + 0x6a09e667u);\n"
    "  float u1 = (float)(h1 >> 8) * 0x1p-24f, u2 = (float)(h2 >> 8) * 0x1p-24f, back;\n"
    "  ulong2 bits;\n"
    "  bits.x = temper_bits(type, temper_draw(kind, a, b, u1, u2, 0), &back);\n"
    "  if (kind == 1 && back >= b) bits.x = temper_bits(type, a, &back);\n"
    "  bits.y = temper_bits(type, temper_draw(kind, a, b, u1, u2, 1), &back);\n"
    "  if (kind == 1 && back >= b) bits.y = temper_bits(type, a, &back);\n"
    "  return bits;\n"
    "}\n"
    "void temper_put(__global uchar *p, long i, int t, ulong v) {\n"
    "  if (t == 0 || t == 5) ((__global uint *)p)[i] = (uint)v;\n"
    "  else if (t == 1 || t == 2) ((__global ushort *)p)[i] = (ushort)v;\n"
    "  else if (t == 3 || t == 4) p[i] = (uchar)v;\n"
    "  else ((__global ulong *)p)[i] = v;\n"
    "}\n"
    "ulong temper_get(__global const uchar *p, long i, int t) {\n"
    "  if (t == 0 || t == 5) return ((__global const uint *)p)[i];\n"
    "  if (t == 1 || t == 2) return ((__global const ushort *)p)[i];\n"
    "  if (t == 3 || t == 4) return p[i];\n"
    "  return ((__global const ulong *)p)[i];\n"
    "}\n"
    "__kernel void temper_fill(__global uchar *dst, long n, int type, int kind, float a, float b, ulong seed) {\n"
    "  ulong key = temper_mix64(seed);\n"
    "  for (long p = get_global_id(0); 2 * p < n; p += get_global_size(0)) {\n"
    "    ulong2 bits = temper_fill_pair(type, kind, a, b, key, p);\n"
    "    temper_put(dst, 2 * p, type, bits.x);\n"
    "    if (2 * p + 1 < n) temper_put(dst, 2 * p + 1, type, bits.y);\n"
    "  }\n"
    "}\n"
    "__kernel void temper_fill_check(__global const uchar *src, long n, int type, int kind, float a, float b,\n"
    "                                ulong seed, __global uint *res) {\n"
    "  uint bad = 0, first = 0xffffffffu;\n"
    "  ulong key = temper_mix64(seed);\n"
    "  for (long p = get_global_id(0); 2 * p < n; p += get_global_size(0)) {\n"
    "    ulong2 bits = temper_fill_pair(type, kind, a, b, key, p);\n"
    "    if (temper_get(src, 2 * p, type) != bits.x) { bad++; first = min(first, (uint)(2 * p)); }\n"
    "    if (2 * p + 1 < n && temper_get(src, 2 * p + 1, type) != bits.y) { bad++; first = min(first, (uint)(2 * p + 1)); }\n"
    "  }\n"
    "  if (bad) { atomic_add(&res[0], bad); atomic_min(&res[1], first); }\n"
    "}\n";

static const char devcheck_cu[] =
    "template <int T> __device__ __forceinline__ float temper_load(const void *p, long long i) {\n"
    "  if (T == 0) return ((const float *)p)[i];\n"
    "  unsigned short b = ((const unsigned short *)p)[i];\n"
    "  if (T == 2) return __uint_as_float((unsigned)b << 16);\n"
    "  float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(b)); return f;\n"
    "}\n"
    "/* Each thread loads DC_UNROLL 16-byte vectors a grid stride apart before it looks at any: a\n"
    " * gigabyte is read at the memory's speed only with that many bytes in flight, and one 16-byte load\n"
    " * issues a quarter of the instructions of four 4-byte ones. */\n"
    "#define DC_UNROLL 4\n"
    "/* The bytes of one element of fill type T (0 f32, 1 f16, 2 bf16, 3 i8, 4 u8, 5 i32, 6 i64/f64). */\n"
    "#define TEMPER_ES(T) ((T) == 0 || (T) == 5 ? 4 : (T) == 1 || (T) == 2 ? 2 : (T) == 3 || (T) == 4 ? 1 : 8)\n"
    "/* Element k of a 16-byte vector of type-T elements, as bits (little-endian, as memory holds them). */\n"
    "template <int T> __device__ __forceinline__ unsigned long long temper_vbits(uint4 v, int k) {\n"
    "  const unsigned w[4] = {v.x, v.y, v.z, v.w};\n"
    "  if (TEMPER_ES(T) == 8) return (unsigned long long)w[2 * k] | (unsigned long long)w[2 * k + 1] << 32;\n"
    "  if (TEMPER_ES(T) == 4) return w[k];\n"
    "  if (TEMPER_ES(T) == 2) return (w[k >> 1] >> ((k & 1) * 16)) & 0xffffu;\n"
    "  return (w[k >> 2] >> ((k & 3) * 8)) & 0xffu;\n"
    "}\n"
    "/* Sets element k of the words of a 16-byte vector (zeroed first) to bits. */\n"
    "template <int T> __device__ __forceinline__ void temper_vset(unsigned *w, int k, unsigned long long bits) {\n"
    "  if (TEMPER_ES(T) == 8) { w[2 * k] = (unsigned)bits; w[2 * k + 1] = (unsigned)(bits >> 32); }\n"
    "  else if (TEMPER_ES(T) == 4) w[k] = (unsigned)bits;\n"
    "  else if (TEMPER_ES(T) == 2) w[k >> 1] |= (unsigned)(bits & 0xffffu) << ((k & 1) * 16);\n"
    "  else w[k >> 2] |= (unsigned)(bits & 0xffu) << ((k & 3) * 8);\n"
    "}\n"
    "/* The value of element k of a vector of comparison type T (0 f32, 1 f16, 2 bf16). */\n"
    "template <int T> __device__ __forceinline__ float temper_vload(uint4 v, int k) {\n"
    "  unsigned b = (unsigned)temper_vbits<T>(v, k);\n"
    "  if (T == 0) return __uint_as_float(b);\n"
    "  if (T == 2) return __uint_as_float(b << 16);\n"
    "  float f; unsigned short h = (unsigned short)b; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); return f;\n"
    "}\n"
    "/* The verdict on one element is e <= atol + rtol * |w| with e = |g - w| exact (in double). Double\n"
    " * arithmetic runs at a fraction of float's, too slow for a gigabyte per timed launch, so float\n"
    " * decides first where it cannot be wrong: equal values, or a float error at most half a float\n"
    " * bound that is normal and finite (the float bound is within a few ulp of the exact one, the float\n"
    " * error within one ulp of e). Every other element is decided in double. The largest absolute\n"
    " * error is the float difference (e rounded once); the relative one is its float quotient, divided\n"
    " * only where it can be the largest so far: a quotient above max_rel needs ef >= max_rel * |w|,\n"
    " * which the product rounded down never exceeds. */\n"
    "__device__ __forceinline__ void temper_cmp_one(float g, float w, long long i, float atolf, float rtolf,\n"
    "    double atol, double rtol, unsigned *bad, unsigned *nonfinite, unsigned *first, float *max_abs,\n"
    "    float *max_rel) {\n"
    "  int wrong;\n"
    "  if (!isfinite(w)) wrong = isnan(w) ? !isnan(g) : g != w;\n"
    "  else if (!isfinite(g)) { wrong = 1; (*nonfinite)++; }\n"
    "  else {\n"
    "    float aw = fabsf(w), ef = fabsf(__fsub_rn(g, w)), tf = __fadd_rn(atolf, __fmul_rn(rtolf, aw));\n"
    "    *max_abs = fmaxf(*max_abs, ef);\n"
    "    if (aw != 0.0f && ef > 0.0f && ef >= __fmul_rd(*max_rel, aw)) *max_rel = fmaxf(*max_rel, __fdiv_rn(ef, aw));\n"
    "    if (g == w || (ef <= __fmul_rn(0.5f, tf) && tf > 1e-30f && tf <= 3.0e38f)) wrong = 0;\n"
    "    else { double e = fabs((double)g - (double)w); wrong = !(e <= atol + rtol * fabs((double)w)); }\n"
    "  }\n"
    "  if (wrong) { (*bad)++; *first = min(*first, (unsigned)i); }\n"
    "}\n"
    "/* Whole 16-byte vectors where both arrays are aligned to 16 bytes, then the elements after them\n"
    " * (or every element of an unaligned array) one at a time. */\n"
    "template <int T> __device__ __forceinline__ void temper_cmp_loop(const void *__restrict__ out,\n"
    "    const void *__restrict__ want, long long n, double atol, double rtol, unsigned *res) {\n"
    "  const int E = T == 0 ? 4 : 8;\n"
    "  float atolf = (float)atol, rtolf = (float)rtol;\n"
    "  unsigned bad = 0, nonfinite = 0, first = 0xffffffffu; float max_abs = 0, max_rel = 0;\n"
    "  long long stride = (long long)gridDim.x * blockDim.x, tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  long long nv = (((unsigned long long)out | (unsigned long long)want) & 15) ? 0 : n / E;\n"
    "  for (long long q = tid; q < nv; q += DC_UNROLL * stride) {\n"
    "    uint4 g[DC_UNROLL], w[DC_UNROLL];\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < DC_UNROLL; u++) {\n"
    "      long long v = q + u * stride;\n"
    "      g[u] = v < nv ? ((const uint4 *)out)[v] : make_uint4(0, 0, 0, 0);\n"
    "      w[u] = v < nv ? ((const uint4 *)want)[v] : make_uint4(0, 0, 0, 0);\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < DC_UNROLL; u++)\n"
    "      if (q + u * stride < nv)\n"
    "#pragma unroll\n"
    "        for (int k = 0; k < E; k++)\n"
    "          temper_cmp_one(temper_vload<T>(g[u], k), temper_vload<T>(w[u], k), (q + u * stride) * E + k,\n"
    "                         atolf, rtolf, atol, rtol, &bad, &nonfinite, &first, &max_abs, &max_rel);\n"
    "  }\n"
    "  for (long long i = nv * E + tid; i < n; i += stride)\n"
    "    temper_cmp_one(temper_load<T>(out, i), temper_load<T>(want, i), i, atolf, rtolf, atol, rtol, &bad,\n"
    "                   &nonfinite, &first, &max_abs, &max_rel);\n"
    "  if (bad) { atomicAdd(&res[0], bad); atomicMin(&res[1], first); }\n"
    "  if (nonfinite) atomicAdd(&res[2], nonfinite);\n"
    "  if (max_abs > 0) atomicMax(&res[3], __float_as_uint(max_abs));\n"
    "  if (max_rel > 0) atomicMax(&res[4], __float_as_uint(max_rel));\n"
    "}\n"
    "/* At most 64 registers, so four blocks of 256 threads share an SM: enough bytes in flight. */\n"
    "extern \"C\" __global__ void __launch_bounds__(256, 4) temper_cmp(const void *__restrict__ out,\n"
    "    const void *__restrict__ want, long long n, long long atol_bits, long long rtol_bits, int type,\n"
    "    unsigned *res) {\n"
    "  double atol = __longlong_as_double(atol_bits), rtol = __longlong_as_double(rtol_bits);\n"
    "  if (type == 0) temper_cmp_loop<0>(out, want, n, atol, rtol, res);\n"
    "  else if (type == 1) temper_cmp_loop<1>(out, want, n, atol, rtol, res);\n"
    "  else temper_cmp_loop<2>(out, want, n, atol, rtol, res);\n"
    "}\n"
    "extern \"C\" __global__ void temper_touch(const uint4 *data, long long n, unsigned key, unsigned *sink) {\n"
    "  unsigned x = 0;\n"
    "  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;\n"
    "       i += (long long)gridDim.x * blockDim.x) { uint4 v = data[i]; x ^= v.x ^ v.y ^ v.z ^ v.w; }\n"
    "  if (x == key) *sink = x;\n"
    "}\n"
    "__device__ __forceinline__ unsigned long long temper_sum_word(unsigned v, unsigned key, long long j) {\n"
    "  unsigned h = v ^ key ^ ((unsigned)j * 0x9e3779b9u);\n"
    "  h ^= h >> 16; h *= 0x85ebca6bu; h ^= h >> 13; h *= 0xc2b2ae35u; h ^= h >> 16;\n"
    "  return h;\n"
    "}\n"
    "/* A sum of every word's keyed hash, so the order of the words read does not matter: whole 16-byte\n"
    " * vectors where the data is aligned to them, then the words after them one at a time. */\n"
    "extern \"C\" __global__ void __launch_bounds__(256, 4) temper_sum_u32(const unsigned *__restrict__ data,\n"
    "                                                               long long n, unsigned key,\n"
    "                                                               unsigned long long *partial) {\n"
    "  __shared__ unsigned long long part[256];\n"
    "  unsigned long long s = 0;\n"
    "  long long stride = (long long)gridDim.x * blockDim.x, tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  long long nv = ((unsigned long long)data & 15) ? 0 : n / 4;\n"
    "  for (long long q = tid; q < nv; q += DC_UNROLL * stride) {\n"
    "    uint4 v[DC_UNROLL];\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < DC_UNROLL; u++)\n"
    "      v[u] = q + u * stride < nv ? ((const uint4 *)data)[q + u * stride] : make_uint4(0, 0, 0, 0);\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < DC_UNROLL; u++) {\n"
    "      long long j = (q + u * stride) * 4;\n"
    "      if (q + u * stride < nv)\n"
    "        s += temper_sum_word(v[u].x, key, j) + temper_sum_word(v[u].y, key, j + 1) +\n"
    "             temper_sum_word(v[u].z, key, j + 2) + temper_sum_word(v[u].w, key, j + 3);\n"
    "    }\n"
    "  }\n"
    "  for (long long j = nv * 4 + tid; j < n; j += stride)\n"
    "    s += temper_sum_word(data[j], key, j);\n"
    "  part[threadIdx.x] = s;\n"
    "  for (unsigned w = 128; w > 0; w >>= 1) {\n"
    "    __syncthreads();\n"
    "    if (threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];\n"
    "  }\n"
    "  if (threadIdx.x == 0) partial[blockIdx.x] = part[0];\n"
    "}\n"
    "__device__ __forceinline__ unsigned long long temper_mix64(unsigned long long z) {\n"
    "  z += 0x9e3779b97f4a7c15ull; z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;\n"
    "  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull; return z ^ (z >> 31);\n"
    "}\n"
    "/* The bits an input element of type T holds for the value v, and the value they hold back. */\n"
    "template <int T> __device__ __forceinline__ unsigned long long temper_bits(float v, float *back) {\n"
    "  if (T == 0) { *back = v; return __float_as_uint(v); }\n"
    "  if (T == 1) { unsigned short h; float f; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(v));\n"
    "    asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h)); *back = f; return h; }\n"
    "  if (T == 2) { unsigned u = __float_as_uint(v); u = isnan(v) ? (u | 0x400000u) : u + 0x7fffu + ((u >> 16) & 1u);\n"
    "    *back = __uint_as_float(u & 0xffff0000u); return u >> 16; }\n"
    "  float r = rintf(v);\n"
    "  if (T == 3) { r = fminf(fmaxf(r, -128.0f), 127.0f); *back = r; return (unsigned char)(signed char)r; }\n"
    "  if (T == 4) { r = fminf(fmaxf(r, 0.0f), 255.0f); *back = r; return (unsigned char)r; }\n"
    "  if (T == 5) { r = fminf(fmaxf(r, -2147483648.0f), 2147483520.0f); *back = r; return (unsigned)(int)r; }\n"
    "  *back = r; return (unsigned long long)(long long)r;\n"
    "}\n"
    "/* Every float operation of the draw is an explicitly rounded one (or an approximate intrinsic, which\n"
    " * has a single instruction), so the compiler cannot contract or reorder any: the fill and its check\n"
    " * inline the same function and compute every value bit for bit alike. */\n"
    "template <int K> __device__ __forceinline__ float temper_draw(float a, float b, float u1, float u2, int second) {\n"
    "  if (K == 0) { float r = sqrtf(__fmul_rn(-1.38629436f, __log2f(__fsub_rn(1.0f, u1))));\n"
    "    float t = __fmul_rn(6.28318531f, u2);\n"
    "    return __fadd_rn(a, __fmul_rn(__fmul_rn(b, r), second ? __sinf(t) : __cosf(t))); }\n"
    "  float u = second ? u2 : u1;\n"
    "  if (K == 1) return __fadd_rn(a, __fmul_rn(__fsub_rn(b, a), u));\n"
    "  return fminf(fmaxf(floorf(__fadd_rn(a, __fmul_rn(__fadd_rn(__fsub_rn(b, a), 1.0f), u))), a), b);\n"
    "}\n"
    "/* A 32-bit hash of two words (the low-bias integer hash's constants, in 32-bit multiplies: a\n"
    " * 64-bit multiply costs several, and the fill must keep up with the memory). */\n"
    "__device__ __forceinline__ unsigned temper_hash32(unsigned x, unsigned y) {\n"
    "  x ^= y * 0x9e3779b9u; x ^= x >> 16; x *= 0x21f0aaadu; x ^= x >> 15; x *= 0x735a2d97u; return x ^ (x >> 15);\n"
    "}\n"
    "/* The bits of elements 2p and 2p + 1 of a fill keyed by key (temper_mix64 of its seed). */\n"
    "template <int T, int K> __device__ __forceinline__ ulonglong2 temper_fill_pair(float a, float b,\n"
    "                                                                              unsigned long long key, long long p) {\n"
    "  unsigned lo = (unsigned)p, hi = (unsigned)((unsigned long long)p >> 32);\n"
    "  unsigned h1 = temper_hash32(lo ^ (unsigned)key, hi ^ (unsigned)(key >> 32));\n"
    "  unsigned h2 = temper_hash32(h1 ^ (unsigned)(key >> 32), lo + 0x6a09e667u);\n"
    "  float u1 = (float)(h1 >> 8) * 0x1p-24f, u2 = (float)(h2 >> 8) * 0x1p-24f, back;\n"
    "  ulonglong2 bits;\n"
    "  bits.x = temper_bits<T>(temper_draw<K>(a, b, u1, u2, 0), &back);\n"
    "  if (K == 1 && back >= b) bits.x = temper_bits<T>(a, &back);\n"
    "  bits.y = temper_bits<T>(temper_draw<K>(a, b, u1, u2, 1), &back);\n"
    "  if (K == 1 && back >= b) bits.y = temper_bits<T>(a, &back);\n"
    "  return bits;\n"
    "}\n"
    "/* Elements 2p and 2p + 1 stored together (one store of both where they share a word), or read\n"
    " * back together. */\n"
    "template <int T> __device__ __forceinline__ void temper_put2(unsigned char *d, long long p, long long n,\n"
    "                                                           ulonglong2 v) {\n"
    "  if (2 * p + 1 < n) {\n"
    "    if (T == 0 || T == 5) ((uint2 *)d)[p] = make_uint2((unsigned)v.x, (unsigned)v.y);\n"
    "    else if (T == 1 || T == 2) ((unsigned *)d)[p] = (unsigned)v.x | (unsigned)v.y << 16;\n"
    "    else if (T == 3 || T == 4) ((unsigned short *)d)[p] = (unsigned short)(v.x | v.y << 8);\n"
    "    else ((ulonglong2 *)d)[p] = v;\n"
    "  } else if (T == 0 || T == 5) ((unsigned *)d)[2 * p] = (unsigned)v.x;\n"
    "  else if (T == 1 || T == 2) ((unsigned short *)d)[2 * p] = (unsigned short)v.x;\n"
    "  else if (T == 3 || T == 4) d[2 * p] = (unsigned char)v.x;\n"
    "  else ((unsigned long long *)d)[2 * p] = v.x;\n"
    "}\n"
    "template <int T> __device__ __forceinline__ ulonglong2 temper_get2(const unsigned char *s, long long p, long long n) {\n"
    "  ulonglong2 v = make_ulonglong2(0, 0);\n"
    "  if (2 * p + 1 < n) {\n"
    "    if (T == 0 || T == 5) { uint2 u = ((const uint2 *)s)[p]; v.x = u.x; v.y = u.y; }\n"
    "    else if (T == 1 || T == 2) { unsigned u = ((const unsigned *)s)[p]; v.x = u & 0xffffu; v.y = u >> 16; }\n"
    "    else if (T == 3 || T == 4) { unsigned u = ((const unsigned short *)s)[p]; v.x = u & 0xffu; v.y = u >> 8; }\n"
    "    else v = ((const ulonglong2 *)s)[p];\n"
    "  } else if (T == 0 || T == 5) v.x = ((const unsigned *)s)[2 * p];\n"
    "  else if (T == 1 || T == 2) v.x = ((const unsigned short *)s)[2 * p];\n"
    "  else if (T == 3 || T == 4) v.x = s[2 * p];\n"
    "  else v.x = ((const unsigned long long *)s)[2 * p];\n"
    "  return v;\n"
    "}\n"
    "/* With res null, writes the fill; otherwise counts the elements of buf that differ from it (res[0])\n"
    " * and the first of them (res[1]): one read of the buffer, no checksum to keep. Whole 16-byte vectors\n"
    " * (an even number of elements) where buf is aligned to them, each thread loading DC_UNROLL of them\n"
    " * before it draws; then the pairs after them (or every pair of an unaligned buffer) one at a time. */\n"
    "template <int T, int K> __device__ __forceinline__ void temper_fill_loop(unsigned char *buf, long long n, float a,\n"
    "    float b, unsigned long long seed, unsigned *res) {\n"
    "  const int E = 16 / TEMPER_ES(T);\n"
    "  unsigned long long key = temper_mix64(seed);\n"
    "  unsigned bad = 0, first = 0xffffffffu;\n"
    "  long long stride = (long long)gridDim.x * blockDim.x, tid = blockIdx.x * (long long)blockDim.x + threadIdx.x;\n"
    "  long long nv = ((unsigned long long)buf & 15) ? 0 : n / E;\n"
    "  for (long long q = tid; q < nv; q += DC_UNROLL * stride) {\n"
    "    uint4 got[DC_UNROLL];\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < DC_UNROLL; u++)\n"
    "      got[u] = res && q + u * stride < nv ? ((const uint4 *)buf)[q + u * stride] : make_uint4(0, 0, 0, 0);\n"
    "#pragma unroll\n"
    "    for (int u = 0; u < DC_UNROLL; u++) {\n"
    "      long long v = q + u * stride;\n"
    "      if (v >= nv) continue;\n"
    "      unsigned w[4] = {0, 0, 0, 0};\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < E / 2; j++) {\n"
    "        ulonglong2 bits = temper_fill_pair<T, K>(a, b, key, v * (E / 2) + j);\n"
    "        if (!res) { temper_vset<T>(w, 2 * j, bits.x); temper_vset<T>(w, 2 * j + 1, bits.y); continue; }\n"
    "        if (temper_vbits<T>(got[u], 2 * j) != bits.x) { bad++; first = min(first, (unsigned)(v * E + 2 * j)); }\n"
    "        if (temper_vbits<T>(got[u], 2 * j + 1) != bits.y) {\n"
    "          bad++; first = min(first, (unsigned)(v * E + 2 * j + 1)); }\n"
    "      }\n"
    "      if (!res) ((uint4 *)buf)[v] = make_uint4(w[0], w[1], w[2], w[3]);\n"
    "    }\n"
    "  }\n"
    "  for (long long p = nv * (E / 2) + tid; 2 * p < n; p += stride) {\n"
    "    ulonglong2 bits = temper_fill_pair<T, K>(a, b, key, p);\n"
    "    if (!res) { temper_put2<T>(buf, p, n, bits); continue; }\n"
    "    ulonglong2 got = temper_get2<T>(buf, p, n);\n"
    "    if (got.x != bits.x) { bad++; first = min(first, (unsigned)(2 * p)); }\n"
    "    if (2 * p + 1 < n && got.y != bits.y) { bad++; first = min(first, (unsigned)(2 * p + 1)); }\n"
    "  }\n"
    "  if (bad) { atomicAdd(&res[0], bad); atomicMin(&res[1], first); }\n"
    "}\n"
    "template <int T> __device__ __forceinline__ void temper_fill_kind(unsigned char *buf, long long n, int kind, float a,\n"
    "    float b, unsigned long long seed, unsigned *res) {\n"
    "  if (kind == 0) temper_fill_loop<T, 0>(buf, n, a, b, seed, res);\n"
    "  else if (kind == 1) temper_fill_loop<T, 1>(buf, n, a, b, seed, res);\n"
    "  else temper_fill_loop<T, 2>(buf, n, a, b, seed, res);\n"
    "}\n"
    "__device__ __forceinline__ void temper_fill_any(unsigned char *buf, long long n, int type, int kind, float a,\n"
    "    float b, unsigned long long seed, unsigned *res) {\n"
    "  switch (type) {\n"
    "  case 0: temper_fill_kind<0>(buf, n, kind, a, b, seed, res); break;\n"
    "  case 1: temper_fill_kind<1>(buf, n, kind, a, b, seed, res); break;\n"
    "  case 2: temper_fill_kind<2>(buf, n, kind, a, b, seed, res); break;\n"
    "  case 3: temper_fill_kind<3>(buf, n, kind, a, b, seed, res); break;\n"
    "  case 4: temper_fill_kind<4>(buf, n, kind, a, b, seed, res); break;\n"
    "  case 5: temper_fill_kind<5>(buf, n, kind, a, b, seed, res); break;\n"
    "  default: temper_fill_kind<6>(buf, n, kind, a, b, seed, res);\n"
    "  }\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256, 4) temper_fill(unsigned char *dst, long long n, int type,\n"
    "    int kind, float a, float b, unsigned long long seed) {\n"
    "  temper_fill_any(dst, n, type, kind, a, b, seed, 0);\n"
    "}\n"
    "extern \"C\" __global__ void __launch_bounds__(256, 4) temper_fill_check(const unsigned char *src, long long n,\n"
    "    int type, int kind, float a, float b, unsigned long long seed, unsigned *res) {\n"
    "  temper_fill_any((unsigned char *)src, n, type, kind, a, b, seed, res);\n"
    "}\n";

#define DEVCHECK_BLOCK 256

static int devcheck_ready(struct worker_state *ws, char *msg, size_t n)
{
    struct devcheck *dc = &ws->dc;
    if (dc->mod)
        return 0;
    struct temper_device *d = &ws->dev;
    int cuda = !strcmp(d->info.language, "cuda");
    const char *src = cuda ? devcheck_cu : devcheck_cl;
    struct temper_buf log;
    temper_buf_init(&log, 64u << 10);
    int hit;
    int err =
        worker_build_module(ws, src, strlen(src), cuda ? "" : "-cl-std=CL1.2", &log, &dc->mod, &hit, NULL, msg, n);
    temper_buf_free(&log);
    if (!err)
        err = temper_dev_kernel(d, dc->mod, "temper_cmp", &dc->cmp, msg, n);
    if (!err)
        err = temper_dev_kernel(d, dc->mod, "temper_sum_u32", &dc->sum_u32, msg, n);
    if (!err)
        err = temper_dev_kernel(d, dc->mod, "temper_touch", &dc->touch, msg, n);
    if (!err)
        err = temper_dev_kernel(d, dc->mod, "temper_fill", &dc->fill, msg, n);
    if (!err)
        err = temper_dev_kernel(d, dc->mod, "temper_fill_check", &dc->fill_check, msg, n);
    size_t blocks = (size_t)(d->info.compute_units > 0 ? d->info.compute_units : 1) * (d->info.is_gpu ? 16 : 2);
    dc->threads = blocks * DEVCHECK_BLOCK;
    if (!err)
        err = temper_dev_alloc(d, dc->threads * sizeof(uint64_t), &dc->results, msg, n);
    if (err) {
        devcheck_free(ws);
        return err;
    }
    return 0;
}

void devcheck_free(struct worker_state *ws)
{
    struct devcheck *dc = &ws->dc;
    temper_dev_release(&ws->dev, dc->results);
    temper_dev_release(&ws->dev, dc->clean);
    if (dc->mod)
        temper_dev_module_free(&ws->dev, dc->mod);
    memset(dc, 0, sizeof(*dc));
}

static int64_t double_bits(double v)
{
    int64_t b;
    memcpy(&b, &v, sizeof(b));
    return b;
}

/* The type codes of the comparison kernel, or -1 for a type it does not read. */
static int cmp_type(enum temper_dtype t)
{
    return t == TEMPER_DTYPE_F32 ? 0 : t == TEMPER_DTYPE_F16 ? 1 : t == TEMPER_DTYPE_BF16 ? 2 : -1;
}

int devcheck_compares(enum temper_dtype t, int64_t n)
{
    return cmp_type(t) >= 0 && n < 0xffffffffll;
}

int devcheck_compare(struct worker_state *ws, enum temper_dtype t, struct temper_dbuf *out, struct temper_dbuf *want,
                     int64_t n, double atol, double rtol, struct temper_compare *r, char *msg, size_t msg_size)
{
    memset(r, 0, sizeof(*r));
    r->count = n;
    r->first_bad = -1;
    if (n <= 0)
        return 0;
    if (!devcheck_compares(t, n))
        return temper_fail(msg, msg_size, TEMPER_ERANGE,
                           "device comparison handles f32, f16 and bf16 arrays under 2^32 elements");
    int err = devcheck_ready(ws, msg, msg_size);
    if (err)
        return err;
    struct devcheck *dc = &ws->dc;
    uint32_t init[5] = {0, 0xffffffffu, 0, 0, 0};
    err = temper_dev_write(&ws->dev, dc->results, 0, init, sizeof(init), msg, msg_size);
    if (err)
        return err;
    size_t blocks = ((size_t)n + DEVCHECK_BLOCK - 1) / DEVCHECK_BLOCK;
    if (blocks > dc->threads / DEVCHECK_BLOCK)
        blocks = dc->threads / DEVCHECK_BLOCK;
    struct temper_launch_dims dims = {{blocks, 1, 1}, {DEVCHECK_BLOCK, 1, 1}, 0};
    struct temper_karg args[7] = {
        {TEMPER_KARG_BUFFER, {.buf = out}},           {TEMPER_KARG_BUFFER, {.buf = want}},
        {TEMPER_KARG_I64, {.i64 = n}},                {TEMPER_KARG_I64, {.i64 = double_bits(atol)}},
        {TEMPER_KARG_I64, {.i64 = double_bits(rtol)}}, {TEMPER_KARG_I32, {.i32 = cmp_type(t)}},
        {TEMPER_KARG_BUFFER, {.buf = dc->results}}};
    uint32_t res[5];
    err = temper_dev_launch(&ws->dev, dc->cmp, &dims, 7, args, msg, msg_size);
    if (!err)
        err = temper_dev_read(&ws->dev, dc->results, 0, res, sizeof(res), msg, msg_size);
    if (err)
        return err;
    float max_abs, max_rel;
    memcpy(&max_abs, &res[3], 4);
    memcpy(&max_rel, &res[4], 4);
    r->mismatches = res[0];
    r->nonfinite = res[2];
    r->max_abs_err = max_abs;
    r->max_rel_err = max_rel;
    if (res[0]) {
        size_t size = temper_dtype_size(t);
        unsigned char got[4], wanted[4];
        r->first_bad = res[1];
        err = temper_dev_read(&ws->dev, out, (size_t)res[1] * size, got, size, msg, msg_size);
        if (!err)
            err = temper_dev_read(&ws->dev, want, (size_t)res[1] * size, wanted, size, msg, msg_size);
        if (!err) {
            r->first_got = temper_dtype_load(t, got, 0);
            r->first_want = temper_dtype_load(t, wanted, 0);
        }
    }
    return err;
}

/* The same mixing as the kernels, for the last bytes that do not fill a word. */
static uint32_t mix32(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

/* Bytes a CPU device's checksum reads back at a time. */
#define HOST_SUM_CHUNK (8u << 20)

/* devcheck_sum for a device whose memory is the host's (a CPU): XXH3 keyed by the run's secret,
 * over chunks read back. There a copy runs at memory speed, while the OpenCL runtime runs the
 * checksum kernel (a work-group reduction) several times slower than that; and xxHash's loop, not
 * one of temper's own per word, reads every byte (in the sanitizer build ASan checks each word
 * temper's code loads: the per-word loop was a tenth of the PoCL tests' time). A CPU device's sums
 * are compared only with sums of the same device, so they need not equal the GPU kernel's. */
static int host_sum(struct worker_state *ws, struct temper_dbuf *buf, size_t bytes, uint64_t key, uint64_t *sum,
                    char *msg, size_t msg_size)
{
    size_t chunk = bytes < HOST_SUM_CHUNK ? bytes : HOST_SUM_CHUNK;
    void *host = malloc(chunk + 1);
    XXH3_state_t *st = XXH3_createState();
    if (!host || !st || XXH3_64bits_reset_withSeed(st, key) != XXH_OK) {
        free(host);
        XXH3_freeState(st);
        return temper_fail(msg, msg_size, TEMPER_ENOMEM, "out of host memory for a checksum");
    }
    int err = 0;
    for (size_t at = 0; !err && at < bytes; at += chunk) {
        size_t n = bytes - at < chunk ? bytes - at : chunk;
        err = temper_dev_read(&ws->dev, buf, at, host, n, msg, msg_size);
        if (!err)
            XXH3_64bits_update(st, host, n);
    }
    *sum = XXH3_64bits_digest(st) ^ (uint64_t)bytes;
    XXH3_freeState(st);
    free(host);
    return err;
}

int devcheck_sum(struct worker_state *ws, struct temper_dbuf *buf, size_t bytes, uint64_t key, uint64_t *sum,
                 char *msg, size_t msg_size)
{
    if (!ws->dev.info.is_gpu)
        return host_sum(ws, buf, bytes, key, sum, msg, msg_size);
    int err = devcheck_ready(ws, msg, msg_size);
    if (err)
        return err;
    struct devcheck *dc = &ws->dc;
    int64_t words = (int64_t)(bytes / 4);
    uint64_t total = 0;
    if (words) {
        /* No more threads than words; each block sums its threads' sums, so one partial sum per
         * block comes back (this runs after every timed launch: the read-back must stay small). */
        size_t blocks = ((size_t)words + DEVCHECK_BLOCK - 1) / DEVCHECK_BLOCK;
        if (blocks > dc->threads / DEVCHECK_BLOCK)
            blocks = dc->threads / DEVCHECK_BLOCK;
        struct temper_launch_dims dims = {{blocks, 1, 1}, {DEVCHECK_BLOCK, 1, 1}, 0};
        struct temper_karg args[4] = {{TEMPER_KARG_BUFFER, {.buf = buf}},
                                      {TEMPER_KARG_I64, {.i64 = words}},
                                      {TEMPER_KARG_I32, {.i32 = (int32_t)(uint32_t)key}},
                                      {TEMPER_KARG_BUFFER, {.buf = dc->results}}};
        uint64_t *partial = malloc(blocks * sizeof(uint64_t));
        if (!partial)
            return TEMPER_ENOMEM;
        err = temper_dev_launch(&ws->dev, dc->sum_u32, &dims, 4, args, msg, msg_size);
        if (!err)
            err = temper_dev_read(&ws->dev, dc->results, 0, partial, blocks * sizeof(uint64_t), msg, msg_size);
        for (size_t i = 0; !err && i < blocks; i++)
            total += partial[i];
        free(partial);
        if (err)
            return err;
    }
    if (bytes % 4) {
        unsigned char tail[4] = {0};
        err = temper_dev_read(&ws->dev, buf, (size_t)words * 4, tail, bytes % 4, msg, msg_size);
        if (err)
            return err;
        uint32_t w;
        memcpy(&w, tail, 4);
        total += mix32(w ^ (uint32_t)key ^ ((uint32_t)words * 0x9e3779b9u));
    }
    *sum = total ^ (key >> 32) ^ (uint64_t)bytes;
    return 0;
}

/* The fill kernel's type codes, in enum temper_dtype's order. */
static int fill_type(enum temper_dtype t)
{
    return t == TEMPER_DTYPE_F32  ? 0 :
           t == TEMPER_DTYPE_F16  ? 1 :
           t == TEMPER_DTYPE_BF16 ? 2 :
           t == TEMPER_DTYPE_I8   ? 3 :
           t == TEMPER_DTYPE_U8   ? 4 :
           t == TEMPER_DTYPE_I32  ? 5 :
                                    6;
}

/* Launches the fill kernel k (temper_fill, or temper_fill_check with results) over n elements. */
static int fill_launch(struct worker_state *ws, struct temper_dkernel *k, struct temper_dbuf *buf,
                       enum temper_dtype t, int64_t n, enum temper_init_kind kind, double a, double b, uint64_t seed,
                       struct temper_dbuf *results, char *msg, size_t msg_size)
{
    struct devcheck *dc = &ws->dc;
    size_t pairs = ((size_t)n + 1) / 2, blocks = (pairs + DEVCHECK_BLOCK - 1) / DEVCHECK_BLOCK;
    if (blocks > dc->threads / DEVCHECK_BLOCK)
        blocks = dc->threads / DEVCHECK_BLOCK;
    struct temper_launch_dims dims = {{blocks, 1, 1}, {DEVCHECK_BLOCK, 1, 1}, 0};
    int code = kind == TEMPER_INIT_NORMAL ? 0 : kind == TEMPER_INIT_UNIFORM ? 1 : 2;
    struct temper_karg args[8] = {{TEMPER_KARG_BUFFER, {.buf = buf}},        {TEMPER_KARG_I64, {.i64 = n}},
                                  {TEMPER_KARG_I32, {.i32 = fill_type(t)}}, {TEMPER_KARG_I32, {.i32 = code}},
                                  {TEMPER_KARG_F32, {.f32 = (float)a}},     {TEMPER_KARG_F32, {.f32 = (float)b}},
                                  {TEMPER_KARG_I64, {.i64 = (int64_t)seed}}, {TEMPER_KARG_BUFFER, {.buf = results}}};
    return temper_dev_launch(&ws->dev, k, &dims, results ? 8 : 7, args, msg, msg_size);
}

int devcheck_fill(struct worker_state *ws, struct temper_dbuf *buf, enum temper_dtype t, int64_t n,
                  enum temper_init_kind kind, double a, double b, uint64_t seed, char *msg, size_t msg_size)
{
    if (n <= 0)
        return 0;
    int err = devcheck_ready(ws, msg, msg_size);
    return err ? err : fill_launch(ws, ws->dc.fill, buf, t, n, kind, a, b, seed, NULL, msg, msg_size);
}

int devcheck_fill_check(struct worker_state *ws, struct temper_dbuf *buf, enum temper_dtype t, int64_t n,
                        enum temper_init_kind kind, double a, double b, uint64_t seed, int64_t *changed,
                        int64_t *first, char *msg, size_t msg_size)
{
    *changed = 0;
    *first = -1;
    if (n <= 0)
        return 0;
    int err = devcheck_ready(ws, msg, msg_size);
    if (err)
        return err;
    struct devcheck *dc = &ws->dc;
    uint32_t res[2] = {0, 0xffffffffu};
    err = temper_dev_write(&ws->dev, dc->results, 0, res, sizeof(res), msg, msg_size);
    if (!err)
        err = fill_launch(ws, dc->fill_check, buf, t, n, kind, a, b, seed, dc->results, msg, msg_size);
    if (!err)
        err = temper_dev_read(&ws->dev, dc->results, 0, res, sizeof(res), msg, msg_size);
    if (!err && res[0]) {
        *changed = res[0];
        *first = res[1];
    }
    return err;
}

int devcheck_flush(struct worker_state *ws, char *msg, size_t msg_size)
{
    struct temper_device *d = &ws->dev;
    int err = temper_dev_flush_cache(d, msg, msg_size);
    if (err || !d->info.is_gpu)
        return err;
    err = devcheck_ready(ws, msg, msg_size);
    if (err)
        return err;
    struct devcheck *dc = &ws->dc;
    if (!dc->clean) {
        size_t bytes = (size_t)(d->info.cache_bytes ? d->info.cache_bytes : (64u << 20)) * 2;
        bytes = (bytes + 15) & ~(size_t)15;
        uint32_t zero = 0;
        err = temper_dev_alloc(d, bytes, &dc->clean, msg, msg_size);
        if (!err)
            err = temper_dev_fill(d, dc->clean, 0, bytes, &zero, sizeof(zero), msg, msg_size);
        if (err) {
            temper_dev_release(d, dc->clean);
            dc->clean = NULL;
            return err;
        }
        dc->clean_bytes = bytes;
    }
    /* The buffer holds zeros, so the sink (the results buffer) is never written: the key only
     * keeps the compiler from dropping the loads. */
    struct temper_launch_dims dims = {{dc->threads / DEVCHECK_BLOCK, 1, 1}, {DEVCHECK_BLOCK, 1, 1}, 0};
    struct temper_karg args[4] = {{TEMPER_KARG_BUFFER, {.buf = dc->clean}},
                                  {TEMPER_KARG_I64, {.i64 = (int64_t)(dc->clean_bytes / 16)}},
                                  {TEMPER_KARG_I32, {.i32 = 0x5eed}},
                                  {TEMPER_KARG_BUFFER, {.buf = dc->results}}};
    return temper_dev_launch(d, dc->touch, &dims, 4, args, msg, msg_size);
}
