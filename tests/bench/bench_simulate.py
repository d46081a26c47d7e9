"""Simulator benchmark (R-SIM-1): a week of the `team` trace for all three policies.

Run from the repo root:  python -m tests.bench.bench_simulate [--trace team] [--profile]

Prints the wall time of the whole command's work (trace generation, three runs) and of each
run, with the number of requests; the target is under 60 s on a 2-core machine. `--profile`
prints the top of a cProfile of one `cost_aware` run (where the scheduler spends its time).
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

from sublane_desktop.core.simulation import generate, run_trace

POLICIES = ["round_robin", "score", "cost_aware"]
TARGET_SECONDS = 60.0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trace", default="team")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    began = time.perf_counter()
    trace = generate(args.trace, args.seed)
    results = run_trace(trace, POLICIES, seed=args.seed)
    total = time.perf_counter() - began
    for r in results:
        print(f"{r.policy:<12} {r.requests} requests in {r.elapsed_s:.2f} s")
    print(f"total {total:.2f} s (target < {TARGET_SECONDS:.0f} s)")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(run_trace, trace, ["cost_aware"], seed=args.seed)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)
    return 0 if total < TARGET_SECONDS else 1


if __name__ == "__main__":
    raise SystemExit(main())
