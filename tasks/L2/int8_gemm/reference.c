/* int8_gemm reference: Y[m,n] = float(acc) * 2^-(SA+SB), acc = sum_k A[m,k] * B[k,n], row-major,
 * A is M x K int8, B is K x N int8, Y is M x N f32.
 * acc is the exact integer sum (what int32 accumulation gives while |acc| < 2^31: K <= 133144 for
 * |A|, |B| <= 127); float() is the conversion of that integer to fp32 with round to nearest even
 * (exact while |acc| <= 2^24); the scaling by a power of two is then exact in fp32 (no overflow,
 * no underflow for SA + SB <= 100). So the result is fully determined and the harness compares
 * it exactly.
 * out[0] = Y[M,N]; in[0] = A[M,K], in[1] = B[K,N]; scalars = M, N, K, SA, SB. */
#include <math.h>

void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *a = in[0], *b = in[1];
    long long m = scalars[0], n = scalars[1], k = scalars[2], sa = scalars[3], sb = scalars[4];
    double scale = ldexp(1.0, (int)-(sa + sb));
    for (long long i = 0; i < m; i++) {
        double *yi = y + i * n;
        for (long long j = 0; j < n; j++)
            yi[j] = 0.0;
        for (long long p = 0; p < k; p++) { /* i-p-j order: streams rows of B; sums of integers
                                              below 2^53 are exact in double */
            double aip = a[i * k + p];
            const double *bp = b + p * n;
            for (long long j = 0; j < n; j++)
                yi[j] += aip * bp[j];
        }
        for (long long j = 0; j < n; j++)
            yi[j] = (double)(float)yi[j] * scale; /* round to fp32 (nearest even), then scale exactly */
    }
}
