"""Per-module figures of the last `mutmut run`, with the equivalent mutants taken out.

    python -m tests.mutation_report [MODULE_PREFIX ...]

mutmut keeps its verdicts in mutants/**/*.py.meta; the mutants that cannot change behaviour
are listed, each with its reason, under [tool.mutmut.equivalent] in pyproject.toml. A listed
mutant that still survives is "equivalent"; one that no longer exists (the code moved on) is
reported so the list can be pruned. Timeouts count as killed: the tests noticed.
"""

from __future__ import annotations

import fnmatch
import json
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# mutmut's exit codes for killed and timed out, and a test process the mutant crashed (-11: a Qt
# widget handed None segfaults the run; -9: killed at the CPU limit): the tests noticed.
KILLED = {1, 3, 24, 36, -24, 152, 255, -11, -9}
SURVIVED = {0}
NO_TESTS = {5, 33}


def config() -> dict[str, Any]:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"])


def equivalents() -> dict[str, str]:
    return dict(config().get("equivalent", {}))


def in_scope(source: str) -> bool:
    """As mutmut decides (fnmatch, `*` spans folders): a file mutated before the scope
    changed keeps its verdicts in mutants/, but no longer counts."""
    settings = config()
    only = settings.get("only_mutate") or ["*"]
    skip = settings.get("do_not_mutate", [])
    return any(fnmatch.fnmatch(source, p) for p in only) and not any(
        fnmatch.fnmatch(source, p) for p in skip
    )


def verdicts() -> dict[str, int | None]:
    found: dict[str, int | None] = {}
    for meta in sorted((ROOT / "mutants").rglob("*.py.meta")):
        source = meta.relative_to(ROOT / "mutants").as_posix().removesuffix(".meta")
        if in_scope(source):
            found.update(json.loads(meta.read_text("utf-8")).get("exit_code_by_key", {}))
    return found


def module_of(mutant: str) -> str:
    return mutant.rsplit(".", 1)[0]


def main(argv: list[str]) -> int:
    prefixes = argv or [""]
    known = equivalents()
    rows: dict[str, Counter[str]] = {}
    survivors: list[str] = []
    for name, code in verdicts().items():
        module = module_of(name)
        if (
            not any(module == p or module.startswith(p + ".") or not p for p in prefixes)
            or code is None
        ):
            continue
        counts = rows.setdefault(module, Counter())
        counts["total"] += 1
        if code in KILLED:
            counts["killed"] += 1
        elif code in SURVIVED and name in known:
            counts["equivalent"] += 1
        elif code in NO_TESTS:
            counts["no tests"] += 1
            survivors.append(name)
        else:
            counts["survived"] += 1
            survivors.append(name)
    print(
        f"{'module':45} {'killed':>7} {'survived':>8} {'no tests':>8} {'equiv':>6} {'total':>6}"
        f" {'score':>6}"
    )
    total: Counter[str] = Counter()
    for module, c in sorted(rows.items()):
        total.update(c)
        print(_row(module, c))
    if len(rows) > 1:
        print(_row("all checked", total))
    for name in survivors:
        print("survived:", name)
    stale = [n for n in known if n not in verdicts()]
    for name in stale:
        print("listed as equivalent but no longer generated:", name)
    return 0


def _row(module: str, c: Counter[str]) -> str:
    judged = c["total"] - c["equivalent"]
    score = 100.0 * c["killed"] / judged if judged else 100.0
    return (
        f"{module:45} {c['killed']:>7} {c['survived']:>8} {c['no tests']:>8}"
        f" {c['equivalent']:>6} {c['total']:>6} {score:>5.1f}%"
    )


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
