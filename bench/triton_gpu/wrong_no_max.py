# A wrong Triton softmax: exp(x) / sum(exp(x)) without subtracting the row maximum, which overflows
# for the task's N(80, 4) inputs (exp(88.7) is FLT_MAX): incorrect.
# @temper task softmax
# @temper param BLOCK 1024
# @temper launch softmax_naive grid(R) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_naive(y, x, R, C, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        s += tl.where(mask, tl.exp(tl.load(x + row * C + start + cols, mask=mask, other=0.0)), 0.0)
    total = tl.sum(s, axis=0)
    for start in range(0, C, BLOCK):
        mask = start + cols < C
        v = tl.load(x + row * C + start + cols, mask=mask, other=0.0)
        tl.store(y + row * C + start + cols, tl.exp(v) / total, mask=mask)
