"""benchmarks/tracker_overhead.py measures the tracker as examples/closed_loop.py uses it."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _example_settings() -> dict[str, int]:
    """window and warmup_steps of the example's Tracker(...), and its --evals-per-epoch default."""
    tree = ast.parse((REPO / "examples" / "closed_loop.py").read_text())
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = getattr(node.func, "id", getattr(node.func, "attr", None))
        keywords = {k.arg: k.value for k in node.keywords}
        if name == "Tracker":
            found.update({k: ast.literal_eval(keywords[k]) for k in ("window", "warmup_steps")})
        if name == "add_argument" and node.args and ast.literal_eval(node.args[0]) == "--evals-per-epoch":
            found["evals_per_epoch"] = ast.literal_eval(keywords["default"])
    return found


@pytest.mark.slow
def test_tracker_overhead_defaults_to_the_examples_window_warmup_and_evaluations(tmp_path: Path) -> None:
    # It measured window 100 and one evaluation per epoch (under 1 %) while the example
    # tracks with window 20 and four evaluations per epoch (about 1.5 %).
    pytest.importorskip("torch")
    from benchmarks import tracker_overhead

    out = tmp_path / "overhead.json"
    assert tracker_overhead.main(["--repeats", "1", "--epochs", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    measured = {k: result.get(k) for k in ("window", "warmup_steps", "evals_per_epoch")}
    assert measured == _example_settings()


def test_tracker_breakdown_times_every_piece_cold_and_warm(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import tracker_breakdown

    assert tracker_breakdown.main(["--calls", "3"]) == 0
    rows = [line.rsplit(maxsplit=2) for line in capsys.readouterr().out.splitlines()[2:]]
    assert [name.strip() for name, _, _ in rows] == [
        "nothing (the timer's own cost)", "Tracker.step, no record", "Tracker.step closing a 20-step window",
        "Tracker.eval (one eval record)", "ProfileWriter.write(eval record)", "record_from_dict (the full check)",
        "json.dumps of the record", "os.write of its line (the syscall)",
    ]
    assert all(float(cold) > 0 and float(warm) > 0 for _, cold, warm in rows)


def test_tracker_breakdown_wake_times_an_evaluation_under_each_helper_policy(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks import tracker_breakdown

    assert tracker_breakdown.main(["--wake", "--calls", "2", "--rounds", "1"]) == 0
    rows = capsys.readouterr().out.splitlines()[2:]
    assert [row.rsplit(maxsplit=4)[0].strip() for row in rows] == ["default policy", "as shipped (SCHED_BATCH)"]
