"""Two replays side by side: ``python -m benchmarks.compare A/results.json B/results.json``.

Made for the out-of-sample replay (``python -m benchmarks --priors held-out``) against the
same command with the shipped priors, but any two ``results.json`` of ``python -m
benchmarks`` compare: for every (setting, policy, probe budget) both have, the miss rate
with its causes (no plan / target / deadline / gave up), the median regret, the share of
its plans that succeed (the mean ``P(success)`` it promised them: for ``cotune`` and
``cotune_closed`` that is at the library's default confidence, the median, q = 0.5), the
same of the family's q = 0.9 variant, Brier score and ECE of
``P(success)`` over every candidate, and the coverage of the 90 % step-time and
epochs-to-target intervals; then, with ``--workloads``, the misses of each workload.
Each row says which run it comes from by the run's ``priors`` (``A (…)``/``B (…)`` when both
runs used the same).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

__all__ = ["rows", "workload_misses", "main"]

_KEY = ("setting", "policy", "probes")


def _label(data: dict) -> str:
    # a results.json written before --priors existed was planned with the shipped constants
    return str((data.get("priors") or {}).get("set") or "shipped")


def rows(a: dict, b: dict) -> list[tuple[tuple, dict, dict]]:
    """``(key, row of a, row of b)`` for every summary key both runs have, in ``a``'s order."""
    by_b = {tuple(r[k] for k in _KEY): r for r in b["summary"]}
    return [(key, r, by_b[key]) for r in a["summary"] if (key := tuple(r[k] for k in _KEY)) in by_b]


def workload_misses(data: dict, *, setting: str, policy: str, probes: int) -> dict[str, tuple[int, int]]:
    """``{workload: (misses, scenarios)}`` of one (setting, policy, probe budget)."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for o in data["regret"]["outcomes"]:
        if o["setting"] == setting and o["policy"] == policy and o["budget"] == probes:
            out[o["workload"]][0] += o["miss"] is not None
            out[o["workload"]][1] += 1
    return {w: (m, n) for w, (m, n) in sorted(out.items())}


def _pct(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    return "∞" if math.isinf(x) else f"{100 * x:.1f} %"


def _num(x: Any) -> str:
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.3f}"


def _cells(r: dict) -> list[str]:
    m = r["misses"]
    return [
        f"{_pct(r['miss_rate'])} ({m['no_plan']}/{m['target']}/{m['deadline']}/{m['gave_up']})",
        _pct(r["median_regret"]),
        f"{_pct(r.get('delivered'))} ({_pct(r.get('promised'))})",
        f"{_pct(r.get('delivered_q90'))} ({_pct(r.get('promised_q90'))})",
        f"{_num(r.get('brier'))} / {_num(r.get('ece'))}",
        f"{_pct(r.get('coverage_step_90'))} / {_pct(r.get('coverage_epochs_90'))}",
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=(__doc__ or "").splitlines()[0])
    ap.add_argument("a", type=Path, help="results.json of the first run")
    ap.add_argument("b", type=Path, help="results.json of the second run")
    ap.add_argument("--workloads", action="store_true", help="also each workload's misses per row")
    args = ap.parse_args(argv)
    from benchmarks.report import read_json

    try:
        a, b = read_json(args.a), read_json(args.b)
    except (OSError, ValueError) as exc:
        print(f"benchmarks.compare: cannot read a results.json: {exc}: pass two results.json files of python -m benchmarks",
              file=sys.stderr)
        return 2
    la, lb = _label(a), _label(b)
    if la == lb:
        la, lb = f"A ({la})", f"B ({lb})"
    heads = ["miss rate (no plan/target/deadline/gave up)", "median regret", "delivered (promised)",
             "delivered q=0.9 (promised)", "Brier / ECE of P(success)", "coverage step / epochs 90"]
    print("| setting | policy | probes | priors | " + " | ".join(heads) + " |")
    print("|" + "---|" * (4 + len(heads)))
    found = rows(a, b)
    for key, ra, rb in found:
        for label, r in ((la, ra), (lb, rb)):
            print(f"| {key[0]} | {key[1]} | {key[2]} | {label} | " + " | ".join(_cells(r)) + " |")
    if args.workloads:
        for key, _, _ in found:
            wa = workload_misses(a, setting=key[0], policy=key[1], probes=key[2])
            wb = workload_misses(b, setting=key[0], policy=key[1], probes=key[2])
            cells = [f"{w} {wa[w][0]}→{wb.get(w, (0, 0))[0]}/{wa[w][1]}" for w in wa]
            print(f"{key[0]}/{key[1]}/{key[2]} misses {la}→{lb}: " + ", ".join(cells))
    if not found:
        print("benchmarks.compare: the two runs share no (setting, policy, probes) row", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
