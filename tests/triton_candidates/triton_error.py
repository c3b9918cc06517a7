# Triton's own compile error (tl.arange takes a power of two): compile_error with Triton's message.
# @expect compile_error
# @expect-message power of 2
# @temper task softmax
# @temper param BLOCK 100
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    tl.store(y + cols, tl.load(x + cols))
