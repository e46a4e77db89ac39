"""The plan, the budget and resume logic, driven by a replacement launcher (no processes).

The fake launcher also shows the seam a Kubernetes launcher plugs into: it only has to
start the workers of a request and let them write ``rank<N>.json``.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import pytest
from profiler_helpers import FormulaLauncher, of, spec

import profiler
from cotune.errors import InputError
from profiler import ProbeSettings
from profiler._plan import geometric_batches, worker_ladder


@dataclass
class FakeLauncher(FormulaLauncher):
    """Step time grows with batch and workers; out of memory above 64."""

    oom_at: int = 65

    def step_time(self, local_batch: int, workers: int) -> tuple[float, float]:
        return 0.001 * local_batch + 0.002 * (workers - 1), 0.002 * (workers - 1)

    def metric(self, epoch: int, global_batch: int) -> float:
        return 1 - 0.5 / epoch


def _profile(out: Path, launcher: FakeLauncher, **kwargs):
    return profiler.profile(spec("tiny"), out=out, launcher=launcher, gpu="t4", stream=io.StringIO(),
                            probe=ProbeSettings(device="cpu"), **kwargs)


def test_ladders():
    assert geometric_batches(8, 100) == [8, 16, 32, 64]
    assert worker_ladder(1) == [1] and worker_ladder(6) == [1, 2, 4, 6]


def test_auto_plan_climbs_to_the_first_oom_then_adds_workers_and_curves(tmp_path):
    out, fake = tmp_path / "auto.jsonl", FakeLauncher()
    summary = _profile(out, fake, max_workers=4, min_batch=8, max_batch=1024, curve=profiler.CurveSettings(max_epochs=3))
    timing = [(w, b) for kind, w, b in fake.calls if kind == "timing"]
    # Ladder on one worker stops at the first OOM (128 > 64); nothing above it is tried.
    assert timing[:5] == [(1, 8), (1, 16), (1, 32), (1, 64), (1, 128)]
    assert all(b <= 128 for _, b in timing)
    # Every larger worker count is probed at the middle and at both ends of the feasible range.
    assert {(w, b) for w, b in timing if w > 1} == {(w, b) for w in (2, 4) for b in (8, 32, 64)}
    # Three curves spread over the feasible global batches, after the middle-batch probes.
    curves = [b for kind, _, b in fake.calls if kind == "curve"]
    assert curves == [8, 16, 64] or curves == [8, 32, 64]
    assert len(of(out, "eval")) == 9 and summary.failed == 1 and summary.skipped_budget == 0
    assert summary.probe_wall_s == 10.0 * len(fake.calls)


def test_budget_cuts_the_plan_and_holds_across_runs(tmp_path):
    out = tmp_path / "budget.jsonl"
    first = _profile(out, FakeLauncher(wall_s=10.0), max_workers=2, budget_s=35.0, curves=[])
    assert first.ran == 3 and first.skipped_budget > 0  # 3 × 10 s fit in 35 s; the 4th would not
    # The same command again: the budget already spent counts, so nothing more runs.
    fake = FakeLauncher(wall_s=10.0)
    second = _profile(out, fake, max_workers=2, budget_s=35.0, curves=[])
    assert fake.calls == [] and second.skipped_done == 3
    # A larger budget continues where the first run stopped, without repeating a point.
    third = _profile(out, FakeLauncher(wall_s=10.0), max_workers=2, budget_s=1000.0, curves=[])
    assert third.ran > 0
    keys = [(s["workers"], s["local_batch"]) for s in of(out, "step")]
    assert len(keys) == len(set(keys))
    cost = sum(c["wall_s"] * c["workers"] for c in of(out, "probe_cost"))
    assert abs(third.probe_worker_s - cost) < 1e-9


def test_grid_skips_batches_above_an_oom_on_every_worker_count(tmp_path):
    out, fake = tmp_path / "grid.jsonl", FakeLauncher(oom_at=17)
    summary = _profile(out, fake, workers=[1, 2], local_batches=[8, 32, 16, 64])
    assert [(w, b) for _, w, b in fake.calls] == [(1, 8), (1, 16), (1, 32), (2, 8), (2, 16)]
    assert summary.skipped_oom == 3  # (1, 64), (2, 32), (2, 64)
    assert [(f["workers"], f["local_batch"], f["failure"]) for f in of(out, "failure")] == [(1, 32, "oom")]


def test_progress_is_plain_lines_when_not_a_tty(tmp_path):
    stream = io.StringIO()
    profiler.profile(spec("tiny"), out=tmp_path / "p.jsonl", launcher=FakeLauncher(), gpu="t4", stream=stream,
                     workers=[1], local_batches=[8, 16], probe=ProbeSettings(device="cpu"))
    text = stream.getvalue()
    assert "\r" not in text and "\x1b" not in text
    assert "[1/2] timing workers=1 local_batch=8: 0.008 s/step" in text
    assert "[2/2] timing workers=1 local_batch=16" in text and "left" in text


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_redraws_one_line_on_a_terminal(tmp_path):
    stream = _Terminal()
    profiler.profile(spec("tiny"), out=tmp_path / "p.jsonl", launcher=FakeLauncher(), gpu="t4", stream=stream,
                     workers=[1], local_batches=[8, 16], probe=ProbeSettings(device="cpu"))
    text = stream.getvalue()
    assert "\r\x1b[2K[" in text and "0/2 timing workers=1 local_batch=8" in text  # the live line, with a bar
    assert "[2/2] timing workers=1 local_batch=16" in text


def test_quiet_prints_nothing(tmp_path):
    stream = io.StringIO()
    profiler.profile(spec("tiny"), out=tmp_path / "p.jsonl", launcher=FakeLauncher(), gpu="t4", stream=stream,
                     workers=[1], local_batches=[8], probe=ProbeSettings(device="cpu"), quiet=True)
    assert stream.getvalue() == ""


def test_the_automatic_plan_never_asks_for_a_step_larger_than_the_training_set(tmp_path):
    out, fake, stream = tmp_path / "cap.jsonl", FakeLauncher(oom_at=10**9), io.StringIO()
    profiler.profile(spec("tiny"), out=out, launcher=fake, gpu="t4", stream=stream, probe=ProbeSettings(device="cpu"),
                     max_workers=2, min_batch=8, max_batch=1024, curves=[])
    timing = [(w, b) for kind, w, b in fake.calls if kind == "timing"]
    assert max(b for w, b in timing if w == 1) == 512  # the ladder stops at the 512 samples of "tiny"
    assert all(w * b <= 512 for w, b in timing)
    assert "a step of 2 × 512 samples is more than the workload's 512 training samples" in stream.getvalue()


def test_more_workers_per_host_than_gpus_is_refused_before_any_probe(tmp_path, monkeypatch):
    import pytest

    import profiler._gpu
    from cotune.errors import InputError

    monkeypatch.setattr(profiler._gpu, "local_device_count", lambda: 2)  # a host with two GPUs
    out, fake = tmp_path / "gpus.jsonl", FakeLauncher()
    with pytest.raises(InputError, match="--workers 4 puts 4 workers on each of 1 host.*at most 2 workers"):
        profiler.profile(spec("tiny"), out=out, launcher=fake, gpu="t4", stream=io.StringIO(),
                         probe=ProbeSettings(device="cuda"), workers=[1, 4], local_batches=[8], curves=[])
    with pytest.raises(InputError, match="--max-workers 8"):
        profiler.profile(spec("tiny"), out=out, launcher=fake, gpu="t4", stream=io.StringIO(),
                         probe=ProbeSettings(device="auto"), max_workers=8, curves=[])
    assert fake.calls == [] and not out.exists()
    # Within the host's GPUs, or on CPU, the same plans run.
    profiler.profile(spec("tiny"), out=out, launcher=fake, gpu="t4", stream=io.StringIO(),
                     probe=ProbeSettings(device="cuda"), workers=[1, 2], local_batches=[8], curves=[])
    profiler.profile(spec("tiny"), out=tmp_path / "cpu.jsonl", launcher=fake, gpu="cpu", stream=io.StringIO(),
                     probe=ProbeSettings(device="cpu"), workers=[1, 4], local_batches=[8], curves=[])
    assert [(w, b) for kind, w, b in fake.calls if kind == "timing"] == [(1, 8), (2, 8), (1, 8), (4, 8)]


def test_a_seed_given_twice_is_one_curve(tmp_path):
    out, fake = tmp_path / "seeds.jsonl", FakeLauncher()
    _profile(out, fake, workers=[1], local_batches=[8], curves=[16], seeds=[1, 1, 0],
             curve=profiler.CurveSettings(max_epochs=2))
    assert [(kind, b) for kind, _, b in fake.calls if kind == "curve"] == [("curve", 16), ("curve", 16)]
    assert sorted({e["seed"] for e in of(out, "eval")}) == [0, 1]


@pytest.mark.parametrize("question", [None, {"target": 0.9}])
def test_a_reversed_batch_range_is_refused_before_any_probe(tmp_path, question):
    # --min-batch 32 --max-batch 8: the ladder was the single rung 32, profiled as the range.
    out, fake = tmp_path / "rev.jsonl", FakeLauncher()
    with pytest.raises(InputError, match="--min-batch 32 is above --max-batch 8"):
        _profile(out, fake, min_batch=32, max_batch=8, question=question)
    assert fake.calls == [] and not out.exists()


def test_automatic_curves_on_several_workers_are_recorded_at_the_batch_they_train_at(tmp_path):
    # --curve-workers 3 over local batches 8..16: a curve chosen at global batch 8 trained at
    # 3 × (8 // 3) = 6 and was recorded at 8.
    out, fake = tmp_path / "cw.jsonl", FakeLauncher()
    _profile(out, fake, max_workers=1, min_batch=8, max_batch=16, curve_workers=3,
             curve=profiler.CurveSettings(max_epochs=1))
    trained = sorted(w * b for kind, w, b in fake.calls if kind == "curve")
    recorded = sorted(e["global_batch"] for e in of(out, "eval"))
    assert recorded == trained and all(b % 3 == 0 for b in recorded)
