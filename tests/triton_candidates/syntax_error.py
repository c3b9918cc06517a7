# A Python syntax error in the candidate: compile_error, naming the line.
# @expect compile_error
# @expect-message SyntaxError
# @temper task softmax
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl


@triton.jit
def softmax_rows(y, x, R, C):
    row = tl.program_id(0
    tl.store(y + row, tl.load(x + row))
