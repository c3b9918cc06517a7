# The launch names a kernel the file does not define under @triton.jit: invalid.
# @expect invalid
# @expect-message no kernel softmax_rows
# @temper task softmax
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


def softmax_rows(y, x, R, C):
    pass


@triton.jit
def other(y, x, R, C):
    tl.store(y, tl.load(x))
