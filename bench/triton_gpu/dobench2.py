"""The same kernel through Triton's JIT with and without its argument specialisation
(do_not_specialize: no divisibility-by-16 facts about the pointers and R, C), to tell whether that
is what separates do_bench from temper's ahead-of-time build (which passes none)."""
import importlib.util
import sys

import torch
import triton
from triton.testing import do_bench

spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
cand = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cand)
plain = triton.jit(cand.softmax_rows.fn, do_not_specialize=["y", "x", "R", "C"])
R, C = 65536, 4096
x = torch.randn(R, C, device="cuda") * 4 + 80
y = torch.empty_like(x)
for arg in sys.argv[2:]:
    block, warps = (int(v) for v in arg.split(","))
    for name, k in (("specialised", cand.softmax_rows), ("not specialised", plain)):
        run = lambda: k[(R,)](y, x, R, C, BLOCK=block, num_warps=warps, num_stages=3)
        run()
        ms = do_bench(run, warmup=100, rep=500)
        print(f"BLOCK={block} num_warps={warps} {name}: {ms * 1e3:.1f} us")
