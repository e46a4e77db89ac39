"""The value plan (``--plan value``): a small seed, then the measurements cotune's answer
to the question names while they are worth their price — driven by a replacement
launcher that answers from a known law (no processes)."""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from profiler_helpers import of, spec

import profiler
from cotune.errors import InputError
from profiler import LaunchOutcome, LaunchRequest, ProbeSettings
from profiler._state import ProfileState
from profiler._value import PlanNote, ValuePlan


@dataclass
class LawLauncher:
    """Step time ``√(compute² + sync²)`` with compute linear in the local batch and sync
    growing with workers; out of memory at ``oom_at`` and above; learning curves that
    saturate more slowly at larger global batches (critical-batch law, B_noise = 64)."""

    oom_at: int = 10**9
    wall_s: float = 5.0
    calls: list = field(default_factory=list)

    @property
    def hosts(self) -> int:
        return 1

    def launch(self, request: LaunchRequest, *, poll=None) -> LaunchOutcome:
        task = json.loads(Path(request.args[0]).read_text())
        results = Path(task["result_dir"])
        b, w = task["local_batch"], request.workers
        self.calls.append((task["kind"], w, b))
        if b >= self.oom_at:
            (results / "rank0.json").write_text(json.dumps({"rank": 0, "status": "oom", "message": "fake OOM"}))
            return LaunchOutcome(returncode=3, timed_out=False, wall_s=self.wall_s)
        if task["kind"] == "timing":
            sync = 0.0 if w == 1 else 0.004 + 0.002 * math.log2(w)
            step = math.hypot(0.01 + 0.0005 * b, sync)
            result = {"rank": 0, "status": "ok", "step_time_s": step, "step_time_spread_s": 0.0,
                      "timed_steps": 10, "peak_memory_bytes": 1e6 * b, "sync_time_s": sync}
        else:
            scale = 3.0 * (1 + b * w / 64)
            with Path(task["progress_path"]).open("a") as fh:
                for k in range(1, task["max_epochs"] + 1):
                    fh.write(json.dumps({"epoch_index": k, "epoch": float(k),
                                         "metric": 0.95 * (1 - math.exp(-k / scale))}) + "\n")
            result = {"rank": 0, "status": "ok", "reason": "max_epochs", "epochs": task["max_epochs"]}
        (results / "rank0.json").write_text(json.dumps(result))
        return LaunchOutcome(returncode=0, timed_out=False, wall_s=self.wall_s)


def _profile(out: Path, launcher: LawLauncher, stream: io.StringIO | None = None, **kwargs):
    return profiler.profile(spec("tiny"), out=out, launcher=launcher, gpu="cpu", stream=stream or io.StringIO(),
                            probe=ProbeSettings(device="cpu"), curve=profiler.CurveSettings(max_epochs=30), **kwargs)


QUESTION = {"target": 0.9, "deadline_s": 600.0, "prices": {"cpu": 0.5}}


def test_the_seed_comes_first_then_the_plan_stops_saying_why(tmp_path):
    out, fake, stream = tmp_path / "v.jsonl", LawLauncher(), io.StringIO()
    summary = _profile(out, fake, stream, question=QUESTION, max_workers=4, min_batch=8, max_batch=128)
    assert fake.calls[:4] == [("timing", 1, 8), ("timing", 1, 128), ("timing", 4, 32), ("curve", 1, 32)]
    timing = [(w, b) for kind, w, b in fake.calls if kind == "timing"]
    assert len(timing) == len(set(timing))  # nothing measured twice
    assert all(1 <= w <= 4 and 8 <= b <= 128 for w, b in timing)
    assert summary.plan_note.startswith("value plan: done") and summary.plan_note in summary.describe()
    assert summary.failed == 0 and len(of(out, "eval")) == 30


def test_a_top_batch_out_of_memory_walks_down_the_ladder(tmp_path):
    out, fake = tmp_path / "v.jsonl", LawLauncher(oom_at=200)
    _profile(out, fake, question=QUESTION, max_workers=2, min_batch=8, max_batch=1024)
    tops = [b for kind, w, b in fake.calls[1:5] if kind == "timing" and w == 1]
    assert tops == [1024, 512, 256, 128]
    assert all(b < 200 for kind, _, b in fake.calls[4:])  # nothing at or above the memory limit after it


def test_an_existing_curve_is_used_instead_of_training_one(tmp_path):
    out = tmp_path / "v.jsonl"
    _profile(out, LawLauncher(), curves=[32], workers=[1], local_batches=[8])  # a previous run's curve
    fake = LawLauncher()
    _profile(out, fake, question=QUESTION, max_workers=2, min_batch=8, max_batch=128)
    assert ("curve", 1, 32) not in fake.calls and fake.calls[0] == ("timing", 1, 128)


def test_a_job_shorter_than_a_probe_buys_nothing_beyond_the_seed(tmp_path):
    # A probe pays 60 s of set-up: on a job that trains in seconds no probe can save its price.
    out, fake, stream = tmp_path / "v.jsonl", LawLauncher(), io.StringIO()
    summary = _profile(out, fake, stream, question={"target": 0.5, "prices": {"cpu": 0.5}}, max_workers=4,
                       min_batch=8, max_batch=128)
    assert len(fake.calls) == 4
    assert summary.plan_note.startswith("value plan: done: no measurement is worth its price")


def test_a_price_for_another_accelerator_is_refused_before_any_probe(tmp_path):
    fake = LawLauncher()
    with pytest.raises(InputError, match="this machine probes 'cpu'"):
        _profile(tmp_path / "v.jsonl", fake, question=dict(QUESTION, prices={"t4": 0.5}), max_workers=2)
    assert fake.calls == []


def test_a_bad_question_is_refused_before_any_probe(tmp_path):
    fake = LawLauncher()
    with pytest.raises(InputError, match="confidence"):
        _profile(tmp_path / "v.jsonl", fake, question=dict(QUESTION, confidence=1.5), max_workers=2)
    assert fake.calls == []


def test_the_plan_refuses_several_hosts():
    with pytest.raises(InputError, match="--nnodes"):
        next(ValuePlan(question=QUESTION, max_workers=4).points(ProfileState(), gpu="cpu", hosts=2))


def test_a_question_without_a_target_is_refused():
    with pytest.raises(InputError, match="--target"):
        ValuePlan(question={"deadline_s": 60.0}, max_workers=2)


def _big(out: Path, launcher: LawLauncher, stream: io.StringIO):
    question = {"target": 0.9, "deadline_s": 8 * 3600.0, "prices": {"cpu": 0.5}}
    return profiler.profile(spec("big_data"), out=out, launcher=launcher, gpu="cpu", stream=stream,
                            probe=ProbeSettings(device="cpu"), curve=profiler.CurveSettings(max_epochs=30),
                            question=question, max_workers=8, min_batch=8, max_batch=256)


def test_a_long_job_buys_probes_until_none_is_worth_its_price(tmp_path):
    out, fake, stream = tmp_path / "v.jsonl", LawLauncher(), io.StringIO()
    summary = _big(out, fake, stream)
    bought = fake.calls[4:]
    assert bought and all(kind == "timing" for kind, _, _ in bought), fake.calls
    assert len(set(fake.calls)) == len(fake.calls)
    assert summary.plan_note.startswith("value plan: done: no measurement is worth its price")


def test_running_the_same_command_again_asks_again_and_buys_nothing_new(tmp_path):
    out = tmp_path / "v.jsonl"
    _big(out, LawLauncher(), io.StringIO())
    again, stream = LawLauncher(), io.StringIO()
    summary = _big(out, again, stream)
    assert again.calls == [] and summary.ran == 0 and summary.plan_note.startswith("value plan: done")
