# A launch option temper does not pass (num_ctas: thread-block clusters): invalid.
# @expect invalid
# @expect-message the launch option num_ctas is not supported
# @temper task softmax
# @temper param num_ctas 2
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C):
    tl.store(y, tl.load(x))
