# args(...) gives three values to a kernel with four parameters that are not tl.constexpr: invalid.
# @expect invalid
# @expect-message passes 3 arguments but kernel softmax_rows takes 4
# @temper task softmax
# @temper param BLOCK 128
# @temper launch softmax_rows grid(R) args(y, x, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C, BLOCK: tl.constexpr):
    tl.store(y, tl.load(x))
