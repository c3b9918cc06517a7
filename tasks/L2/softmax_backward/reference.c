/* softmax_backward reference: the gradient of a row-wise softmax y = softmax(x) with respect to
 * its input, given y and the upstream gradient dy, row-major, in double:
 *   dx[r,c] = y[r,c] * (dy[r,c] - sum_c' dy[r,c'] * y[r,c'])
 * y and dy are drawn independently (y is not an exact softmax output; the formula does not
 * care), y uniform in [0, 2/C) so that its rows sum to about 1 as a softmax's do.
 * out[0] = dx[R,C]; in[0] = y[R,C], in[1] = dy[R,C]; scalars[0] = R, scalars[1] = C. */
void reference(double **out, const double **in, const long long *scalars);

void reference(double **out, const double **in, const long long *scalars)
{
    double *dx = out[0];
    const double *y = in[0], *dy = in[1];
    long long rows = scalars[0], cols = scalars[1];
    for (long long r = 0; r < rows; r++) {
        const double *yr = y + r * cols, *gr = dy + r * cols;
        double *dr = dx + r * cols;
        double s = 0.0;
        for (long long c = 0; c < cols; c++)
            s += yr[c] * gr[c];
        for (long long c = 0; c < cols; c++)
            dr[c] = yr[c] * (gr[c] - s);
    }
}
