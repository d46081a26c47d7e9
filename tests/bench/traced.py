"""Run a module with tracemalloc on, writing a heap snapshot at each SIGUSR1 (bench_soak --trace).

    python -m tests.bench.traced OUT_DIR MODULE [ARGS...]

Snapshot n goes to OUT_DIR/snapshot-n.pickle (written to a temporary name, then renamed, so a
reader never sees half a file), after a full garbage collection, so what a diff of two shows
is memory still referenced. Frames kept per allocation: $BENCH_TRACE_FRAMES (default 12).
"""

from __future__ import annotations

import gc
import os
import runpy
import signal
import sys
import tracemalloc
from pathlib import Path


def main() -> None:
    out = Path(sys.argv[1])
    module = sys.argv[2]
    tracemalloc.start(int(os.environ.get("BENCH_TRACE_FRAMES", "12")))
    taken = 0

    def snapshot(*_: object) -> None:
        nonlocal taken
        taken += 1
        gc.collect()
        path = out / f"snapshot-{taken}.pickle"
        tracemalloc.take_snapshot().dump(str(path) + ".part")
        os.replace(str(path) + ".part", path)

    signal.signal(signal.SIGUSR1, snapshot)
    sys.argv = [module, *sys.argv[3:]]
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
