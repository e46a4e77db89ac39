"""benchmarks/gpu_check.py: fails clearly without CUDA; its steps run end to end (CPU rehearsal).

The CUDA + nccl path itself needs a GPU host and is not run here (docs/profiler.md §9).
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from benchmarks.gpu_check import main  # noqa: E402


@pytest.mark.skipif(torch.cuda.is_available(), reason="a CUDA device is present: the real check would run")
def test_without_cuda_it_fails_with_no_cuda_device_and_writes_the_outcome(tmp_path, capsys):
    out = tmp_path / "outcome.json"
    assert main(["--out", str(out)]) == 1
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1].startswith("FAIL: device: no CUDA device")
    outcome = json.loads(out.read_text())
    assert outcome["status"] == "fail" and outcome["reason"].startswith("device: no CUDA device")
    assert [c["name"] for c in outcome["checks"]] == ["device"]  # nothing was profiled
    assert outcome["versions"]["torch"] == torch.__version__


@pytest.mark.slow
def test_cpu_rehearsal_profiles_and_recommends_but_never_says_pass(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    from cotune.profile import read_profile

    root = Path(__file__).resolve().parents[2]
    monkeypatch.setenv("PYTHONPATH", str(root))  # the torchrun workers import this checkout
    out, kept = tmp_path / "outcome.json", tmp_path / "kept.jsonl"
    assert main(["--out", str(out), "--rehearse-on-cpu", "--keep", str(kept)]) == 0
    assert "REHEARSAL PASSED" in capsys.readouterr().out
    outcome = json.loads(out.read_text())
    assert outcome["status"] == "rehearsal" and outcome["backend"] == "gloo"
    assert [c["name"] for c in outcome["checks"]] == ["device", "profile", "recommend"]
    assert all(c["ok"] for c in outcome["checks"])
    profile = read_profile(kept)
    assert sorted(s.local_batch for s in profile.steps) == [32, 64] and len(profile.evals) >= 2
    assert {s.workers for s in profile.steps} == {2} and profile.failures == ()
