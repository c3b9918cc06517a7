# The module raises while it loads: compile_error, with the exception and its line.
# @expect compile_error
# @expect-message line 10: RuntimeError: not today
# @temper task softmax
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


raise RuntimeError("not today")


@triton.jit
def softmax_rows(y, x, R, C):
    tl.store(y, tl.load(x))
