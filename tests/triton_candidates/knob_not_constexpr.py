# A knob that is not a tl.constexpr parameter (C is an ordinary argument): invalid, since Triton
# would never see the value.
# @expect invalid
# @expect-message param C: not a tl.constexpr parameter
# @temper task softmax
# @temper param C 128
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C):
    tl.store(y, tl.load(x))
