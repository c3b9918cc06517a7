# A candidate whose module, as it loads, lists the caller's home folder, where temper keeps its
# store and caches: the sandbox refuses it (the compile process reads only the system's folders,
# temper's toolkit and the interpreter's installation), so the verdict is compile_error.
# @expect compile_error
# @expect-message PermissionError
# @temper task softmax
# @temper launch softmax_rows grid(R) args(y, x, R, C)
import os

import triton
import triton.language as tl

os.listdir(os.path.expanduser("~root"))


@triton.jit
def softmax_rows(y, x, R, C):
    tl.store(y, tl.load(x))
