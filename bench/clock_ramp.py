#!/usr/bin/env python3
"""clock_ramp.py: how long an H200 takes to reach its working clocks after idle, seen through a
compute-bound kernel (8192^3 bf16 torch.matmul, 1.4 ms at full speed): after sleeping IDLE
seconds, 120 launches back to back, each timed with CUDA events, the L2 cleared before each as
temper does. Prints, for each idle time, the time of launches 1-5, 10, 20, 40, 80 and 120 and the
first launch within 2 % of the last 20's median: the warm-up a timing protocol needs. Run on the
device machine (PyTorch is there); no arguments."""
import time

import torch


def main():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    flush = torch.empty(2 * 60 * 1024 * 1024 // 4, device="cuda", dtype=torch.float32)
    for _ in range(20):
        a @ b
    torch.cuda.synchronize()
    print("idle_s  " + "  ".join("#%-5d" % k for k in (1, 2, 3, 4, 5, 10, 20, 40, 80, 120)) + "  steady_ms  warm_at")
    for idle in (2.0, 0.5, 0.05, 0.0, 2.0, 0.5):
        time.sleep(idle)
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(120)]
        for s, e in ev:
            flush.fill_(1.0)
            s.record()
            a @ b
            e.record()
        torch.cuda.synchronize()
        ms = [s.elapsed_time(e) for s, e in ev]
        steady = sorted(ms[-20:])[10]
        warm = next((i + 1 for i, m in enumerate(ms) if abs(m - steady) <= 0.02 * steady), None)
        print("%-6.2f  " % idle + "  ".join("%.3f" % ms[k - 1] for k in (1, 2, 3, 4, 5, 10, 20, 40, 80, 120)) +
              "  %.3f  %s (%.0f ms in)" % (steady, warm, sum(ms[:warm - 1]) if warm else float("nan")))


if __name__ == "__main__":
    main()
