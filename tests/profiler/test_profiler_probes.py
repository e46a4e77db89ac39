"""Real torchrun probes on CPU: 1 and 2 processes, timing and learning curves."""

from __future__ import annotations

import pytest

import math

from profiler_helpers import FAST, of, run_cli, spec

from cotune.profile import read_profile


@pytest.mark.slow
def test_one_and_two_process_timing_probes_write_step_records(tmp_path, capsys, monkeypatch):
    machine_tmp = tmp_path / "machine-tmp"  # the temp dir torchrun and the workers would inherit
    machine_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(machine_tmp))
    out = tmp_path / "p.jsonl"
    code, err = run_cli(["--workload", spec("tiny"), "--workers", "1,2", "--local-batch", "8", "--out", str(out),
                         "--no-curves", *FAST], capsys)
    assert code == 0, err
    profile = read_profile(out)
    assert profile.workload.name == "tiny" and profile.workload.dataset_size == 512
    steps = {(s.workers, s.local_batch): s for s in profile.steps}
    assert set(steps) == {(1, 8), (2, 8)}
    for s in steps.values():
        assert s.gpu == "cpu" and s.hosts == 1
        assert 0 < s.step_time_s < 5
        assert s.sync_time_s is not None and 0 <= s.sync_time_s <= s.step_time_s
        assert s.step_time_spread_s is not None and s.step_time_spread_s >= 0
        assert s.peak_memory_bytes and s.peak_memory_bytes > 10e6  # a torch process is tens of MB at least
        assert 5 <= s.timed_steps <= 15
    costs = of(out, "probe_cost")
    assert [(c["workers"], c["outcome"]) for c in costs] == [(1, "ok"), (2, "ok")]
    assert all(c["wall_s"] > 0 for c in costs)
    assert not profile.failures
    # Nothing of the probes' left in the machine's temp dir (torchrun's agent made a
    # torchelastic_* folder there per probe); torch's compile cache may stay, as it is meant to.
    assert not [p.name for p in machine_tmp.iterdir() if not p.name.startswith("torchinductor_")]


@pytest.mark.slow
def test_curve_on_two_workers_records_evals_noise_and_stops_at_target(tmp_path, capsys):
    out = tmp_path / "c.jsonl"
    code, err = run_cli(["--workload", spec("tiny"), "--workers", "1", "--local-batch", "8", "--curves", "32",
                         "--curve-workers", "2", "--noise", "--target", "0.9", "--max-epochs", "15",
                         "--out", str(out), *FAST], capsys)
    assert code == 0, err
    profile = read_profile(out)
    evals = [e for e in profile.evals if e.global_batch == 32]
    assert evals, "the curve wrote no eval records"
    epochs = [e.epoch for e in evals]
    assert epochs == sorted(epochs) and len(set(epochs)) == len(epochs)
    # 512 samples, global batch 32 on 2 workers: exactly 16 steps (one full pass) per epoch.
    assert math.isclose(epochs[0], 1.0)
    assert evals[-1].metric >= 0.9 and all(e.metric < 0.9 for e in evals[:-1])  # stopped at the target
    assert len(evals) < 15
    # The DDP communication hook gives local (b=16) and all-reduced (B=32) gradients.
    assert profile.noise and all(n.b_noise > 0 and n.global_batch == 32 for n in profile.noise)
    done = of(out, "curve_done")
    assert len(done) == 1 and done[0]["reason"] == "target" and done[0]["workers"] == 2
    assert not list((tmp_path / "c.jsonl.cotune").glob("*.pt")), "checkpoint of a finished curve was left behind"


@pytest.mark.slow
def test_the_value_plan_runs_real_probes_then_says_why_it_stopped(tmp_path, capsys):
    out = tmp_path / "v.jsonl"
    code, err = run_cli(["--workload", spec("tiny"), "--plan", "value", "--target", "0.9", "--deadline", "30m",
                         "--price", "cpu=0.05", "--max-workers", "2", "--min-batch", "8", "--max-batch", "16",
                         "--max-epochs", "3", "--out", str(out), *[a for a in FAST if a != "--quiet"]], capsys)
    assert code == 0, err
    profile = read_profile(out)
    # The seed: both ends of the batch ladder on one worker, the middle on two, one curve.
    assert {(s.workers, s.local_batch) for s in profile.steps} >= {(1, 8), (1, 16), (2, 16)}
    assert {e.global_batch for e in profile.evals} == {16}
    assert profile.noise and all(n.global_batch == 16 and n.b_noise > 0 for n in profile.noise)
    notes = [ln for ln in err.splitlines() if ln.startswith("value plan:")]
    assert len(notes) == 1 and ("done" in notes[0] or "stopped" in notes[0]), err
