# A candidate whose module, as it loads, writes outside the compile process's scratch folder: the
# sandbox refuses it (the compile process may write only its scratch folder), so the load fails and
# the verdict is compile_error with Python's refusal.
# @expect compile_error
# @expect-message Errno
# @temper task softmax
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import triton
import triton.language as tl

with open("/tmp/temper-triton-escape-test", "w") as f:
    f.write("escaped")


@triton.jit
def softmax_rows(y, x, R, C):
    tl.store(y, tl.load(x))
