# A Triton launch with block(...): invalid (the block is 32 * num_warps threads).
# @expect invalid
# @expect-message takes no block(...)
# @temper task softmax
# @temper launch softmax_rows grid(R) block(128) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C):
    tl.store(y, tl.load(x))
