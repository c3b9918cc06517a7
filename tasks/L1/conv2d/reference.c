/* conv2d reference: 3x3 convolution (cross-correlation, as in deep-learning frameworks), stride 1,
 * zero padding 1, NCHW, in double:
 *   y[n,k,h,w] = sum over c < C, r < 3, s < 3 of x[n,c,h+r-1,w+s-1] * w[k,c,r,s],
 * where x outside 0 <= h+r-1 < H, 0 <= w+s-1 < W is zero. Shapes: y [N,K,H,W], x [N,C,H,W],
 * w [K,C,3,3], all row-major.
 * out[0] = y; in[0] = x, in[1] = w; scalars = N, C, H, W, K. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *y = out[0];
    const double *x = in[0], *wt = in[1];
    long long n_ = scalars[0], c_ = scalars[1], h_ = scalars[2], w_ = scalars[3], k_ = scalars[4];
    for (long long n = 0; n < n_; n++)
        for (long long k = 0; k < k_; k++) {
            double *yp = y + (n * k_ + k) * h_ * w_;
            for (long long i = 0; i < h_ * w_; i++)
                yp[i] = 0.0;
            for (long long c = 0; c < c_; c++) {
                const double *xp = x + (n * c_ + c) * h_ * w_;
                const double *wp = wt + (k * c_ + c) * 9;
                for (long long r = 0; r < 3; r++)
                    for (long long s = 0; s < 3; s++) {
                        double wv = wp[r * 3 + s];
                        for (long long h = 0; h < h_; h++) {
                            long long hi = h + r - 1;
                            if (hi < 0 || hi >= h_)
                                continue;
                            for (long long w = 0; w < w_; w++) {
                                long long wi = w + s - 1;
                                if (wi >= 0 && wi < w_)
                                    yp[h * w_ + w] += xp[hi * w_ + wi] * wv;
                            }
                        }
                    }
            }
        }
}
