"""Triton's own do_bench of the candidate's kernel at the softmax task's GPU bench shape, for the
same knob settings temper timed, beside torch.softmax; each output checked against torch."""
import importlib.util
import sys

import torch
import triton
from triton.testing import do_bench

spec = importlib.util.spec_from_file_location("cand", sys.argv[1])
cand = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cand)
R, C = 65536, 4096
x = torch.randn(R, C, device="cuda") * 4 + 80
y = torch.empty_like(x)
ref = torch.softmax(x.double(), dim=1).float()
print("triton", triton.__version__, torch.cuda.get_device_name())
for arg in sys.argv[2:]:
    block, warps = (int(v) for v in arg.split(","))
    run = lambda: cand.softmax_rows[(R,)](y, x, R, C, BLOCK=block, num_warps=warps, num_stages=3)
    run()
    err = ((y - ref).abs() / ref.abs()).max().item()
    ms = do_bench(run, warmup=100, rep=500)
    print(f"BLOCK={block} num_warps={warps}: do_bench {ms * 1e3:.1f} us, {8 * R * C / ms / 1e6:.0f} GB/s, max rel err {err:.2e}")
ms = do_bench(lambda: torch.softmax(x, dim=1), warmup=100, rep=500)
print(f"torch.softmax: do_bench {ms * 1e3:.1f} us, {8 * R * C / ms / 1e6:.0f} GB/s")
