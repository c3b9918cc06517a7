#!/usr/bin/env python3
"""example_rl_loop.py: how an RL loop scores a step's rollouts through `temper serve`.

A stand-in "policy" writes variants of a task's candidate (here: the vector_add OpenCL kernel with
other work-group sizes, and now and then a broken one); each step's rollouts are scored at once
with compute_score, concurrently, and the rewards printed. A real loop (verl's) passes its model's
answers as solution_str and the task's name as ground_truth, and calls compute_score from its
reward manager. Repeated answers cost nothing: the server answers them from its cache.

    build/temper serve &            # or TEMPER_URL=http://gym:8787 TEMPER_TOKEN=...
    python3 clients/python/example_rl_loop.py [--steps 3] [--rollouts 4]
"""
import argparse
import asyncio
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from temper_client import Client, TemperFailure, compute_score  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BASE = open(os.path.join(HERE, "..", "..", "tasks", "L1", "vector_add", "naive.cl")).read()


def policy(step, k):
    """One rollout: a model's answer, a kernel in a fenced block."""
    rng = random.Random(step * 1000 + k)
    wg = rng.choice([64, 128, 256])  # the work-group size, the grid sized to cover N with it
    src = BASE.replace("grid(ceil_div(N, 256)) block(256)", "grid(ceil_div(N, %d)) block(%d)" % (wg, wg))
    if wg != 256 and src == BASE:
        raise SystemExit("the vector_add baseline's launch line changed: update the example's policy")
    if rng.random() < 0.25:
        src = src.replace(";", "", 1)  # a broken answer: a compile error, reward 0
    return "Here is my kernel:\n```opencl\n%s```\n" % src


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--rollouts", type=int, default=4)
    ap.add_argument("--timing", action="store_true", help="time correct kernels (rewards speed)")
    args = ap.parse_args()
    # one client for every rollout: at most 8 requests in flight at once ($TEMPER_URL, $TEMPER_TOKEN)
    extra = {"lang": "opencl", "options": {"timing": args.timing}, "client": Client(concurrency=8)}
    for step in range(args.steps):
        answers = [policy(step, k) for k in range(args.rollouts)]
        # compute_score is synchronous (verl's shape); run the rollouts of a step concurrently
        tasks = [asyncio.to_thread(compute_score, "temper", a, "vector_add", extra) for a in answers]
        rewards = []
        for r in await asyncio.gather(*tasks, return_exceptions=True):
            if isinstance(r, TemperFailure):  # temper's own failure: skip the sample, do not score it
                print("  temper failed (%s): %s" % (r.kind, r.message))
                rewards.append(None)
            elif isinstance(r, Exception):
                raise r
            else:
                rewards.append(r)
        print("step %d rewards: %s" % (step, ["%.2f" % r if r is not None else "-" for r in rewards]))


if __name__ == "__main__":
    asyncio.run(main())
