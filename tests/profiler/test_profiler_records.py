"""What the session records of a curve's epochs, and what the Python API refuses before any
probe, driven by a replacement launcher (no processes)."""

from __future__ import annotations

import io
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from profiler_helpers import FormulaLauncher, of, spec

import profiler
from cotune.errors import InputError
from profiler import CurveSettings, ProbeSettings
from profiler._noise import NoiseAccumulator


@dataclass
class EpochLauncher(FormulaLauncher):
    """Timing from a formula; every curve epoch's progress line is ``extra`` merged into the
    usual one (a metric or a noise scale a real worker may report)."""

    extra: dict = field(default_factory=dict)

    def step_time(self, local_batch: int, workers: int) -> tuple[float, float]:
        return 0.001 * local_batch, 0.0

    def metric(self, epoch: int, global_batch: int) -> float:
        return 1 - 0.5 / epoch

    def launch(self, request, *, poll=None):
        task = json.loads(Path(request.args[0]).read_text())
        if task["kind"] != "curve":
            return super().launch(request, poll=poll)
        self.calls.append(("curve", request.workers, task["local_batch"]))
        with Path(task["progress_path"]).open("a") as fh:
            for k in range(1, task["max_epochs"] + 1):
                line = {"epoch_index": k, "epoch": float(k), "metric": self.metric(k, 0), **self.extra}
                fh.write(json.dumps(line, allow_nan=True) + "\n")
        result = {"rank": 0, "status": "ok", "reason": "max_epochs", "epochs": task["max_epochs"]}
        (Path(task["result_dir"]) / "rank0.json").write_text(json.dumps(result))
        return profiler.LaunchOutcome(returncode=0, timed_out=False, wall_s=self.wall_s)


def _profile(out: Path, launcher: FormulaLauncher, **kwargs):
    kwargs.setdefault("probe", ProbeSettings(device="cpu"))
    return profiler.profile(spec("tiny"), out=out, launcher=launcher, gpu="t4", stream=io.StringIO(), **kwargs)


def test_an_evaluation_beyond_what_a_profile_holds_is_recorded_as_a_diverged_one(tmp_path):
    # A diverged language model's perplexity exp(40) = 2.4e17: the profile refused it as a number,
    # and the session stopped with exit 2 on this run and every rerun.
    out = tmp_path / "ppl.jsonl"
    _profile(out, EpochLauncher(extra={"metric": math.exp(40)}), workers=[1], local_batches=[16], curves=[32],
             curve=CurveSettings(max_epochs=2))
    assert [e["metric"] for e in of(out, "eval")] == [math.inf, math.inf]


def test_a_curve_stops_as_diverged_at_an_evaluation_beyond_what_a_profile_holds():
    from profiler._protocol import diverged_metric  # the workers' rule (both frameworks')

    assert diverged_metric(math.exp(40)) and diverged_metric(-2e15) and diverged_metric(math.nan)


def test_a_nan_noise_scale_is_left_out_of_the_profile(tmp_path):
    # NaN gradients of a diverging run: "noise record not written ... got nan", exit 2, on every rerun.
    out = tmp_path / "nan.jsonl"
    _profile(out, EpochLauncher(extra={"b_noise": math.nan}), workers=[1], local_batches=[16], curves=[32],
             curve=CurveSettings(max_epochs=2, noise=True))
    assert len(of(out, "eval")) == 2 and of(out, "noise") == []


def test_the_noise_accumulator_gives_no_noise_scale_from_nan_gradients():
    acc = NoiseAccumulator()
    for _ in range(3):
        acc.add(small_sq=math.nan, b_small=8, big_sq=math.nan, b_big=16)
    assert acc.b_noise() is None


def test_a_tracked_jobs_evaluations_are_not_taken_for_the_curves_epochs(tmp_path):
    out = tmp_path / "job.jsonl"
    _profile(out, EpochLauncher(), workers=[1], local_batches=[16], curves=[])
    with out.open("a") as fh:  # a job the tracker recorded at the curve's global batch and seed
        for epoch in (1, 2, 3):
            fh.write(json.dumps({"record": "eval", "global_batch": 32, "epoch": epoch, "metric": 0.5, "seed": 0,
                                 "job": "train-1"}) + "\n")
    _profile(out, EpochLauncher(), workers=[1], local_batches=[16], curves=[32], curve=CurveSettings(max_epochs=4))
    assert [e["epoch"] for e in of(out, "eval") if "job" not in e] == [1.0, 2.0, 3.0, 4.0]


@pytest.mark.parametrize("kwargs", [
    {"workers": [0], "local_batches": [8]},
    {"workers": [1], "local_batches": [-4]},
    {"workers": [1], "local_batches": [8.5]},
    {"workers": [1], "local_batches": [8], "curves": [0]},
])
def test_profile_refuses_a_batch_or_worker_count_below_one_before_any_file_or_probe(tmp_path, kwargs):
    out, fake = tmp_path / "api.jsonl", EpochLauncher()
    with pytest.raises(InputError, match="must be a whole number >= 1"):
        _profile(out, fake, **kwargs)
    assert fake.calls == [] and not out.exists()


@pytest.mark.parametrize("build", [
    lambda: ProbeSettings(max_timed_steps=0),
    lambda: ProbeSettings(timeout_s=0),
    lambda: ProbeSettings(device="gpu"),
    lambda: CurveSettings(max_epochs=0),
    lambda: CurveSettings(target=math.nan),
])
def test_settings_no_probe_can_run_with_are_refused_when_built(build):
    with pytest.raises(InputError, match="ProbeSettings|CurveSettings"):
        build()


def test_an_automatic_plans_curve_batch_beyond_the_training_set_is_refused_before_any_probe(tmp_path):
    out, fake = tmp_path / "cv.jsonl", EpochLauncher()
    with pytest.raises(InputError, match="--curves 1000 is more than the workload's 512 training samples"):
        _profile(out, fake, max_workers=1, min_batch=8, max_batch=8, curves=[1000])
    assert fake.calls == [] and not out.exists()


def test_a_package_module_spec_is_found_from_the_working_folder(tmp_path, monkeypatch):
    # The `cotune` console script's sys.path lacks the working folder (python -m has it).
    package = tmp_path / "cotune_test_cwd_pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "wlmod.py").write_text("from workloads import tiny as workload\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    try:
        assert profiler.load_workload("cotune_test_cwd_pkg.wlmod:workload").name == "tiny"
    finally:
        for name in ("cotune_test_cwd_pkg.wlmod", "cotune_test_cwd_pkg"):
            sys.modules.pop(name, None)
