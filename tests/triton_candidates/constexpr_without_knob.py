# A tl.constexpr parameter no knob gives: invalid, naming the parameter.
# @expect invalid
# @expect-message tl.constexpr parameter BLOCK has no knob
# @temper task softmax
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C, BLOCK: tl.constexpr):
    tl.store(y, tl.load(x))
