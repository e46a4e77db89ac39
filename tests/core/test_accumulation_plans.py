"""A local batch measured only with gradient accumulation: held against the memory limit as
its micro-batch, and planned, reported and launched with its accumulation steps."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

import cotune
from cotune.cli import main


def _accum_profile(folder: Path, *, oom_at: int | None = None) -> str:
    """Step probes at micro-batch 64 × 4 accumulation steps (local batch 256 per optimizer
    step), curves at global batch 64 and 256, and optionally a later out-of-memory at ``oom_at``."""
    recs: list[dict] = [{"record": "workload", "name": "accum", "dataset_size": 50000, "metric": "top1", "goal": "max"}]
    recs += [{"record": "step", "gpu": "t4", "workers": w, "local_batch": 64, "accum_steps": 4, "step_time_s": 0.4}
             for w in (1, 2, 4)]
    if oom_at is not None:  # after the steps: none of them supersedes it
        recs.append({"record": "failure", "gpu": "t4", "workers": 1, "local_batch": oom_at, "failure": "oom"})
    recs += [{"record": "eval", "global_batch": b, "epoch": e, "metric": 0.95 * (1 - math.exp(-(e + 0.5) / t))}
             for b, t in ((64, 5), (256, 8)) for e in range(1, 30)]
    path = folder / "accum.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return str(path)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


_QUESTION = ("--target", "0.9", "--deadline", "2h", "--no-cache")


def test_an_oom_above_the_micro_batch_keeps_the_batch_probed_with_accumulation(tmp_path: Path) -> None:
    # The probes held 64 at once; an out-of-memory at 128 dropped their local batch 256.
    rec = cotune.recommend(_accum_profile(tmp_path, oom_at=128), target=0.9, deadline_s=7200.0)
    assert rec.chosen is not None
    assert (rec.chosen.local_batch, rec.chosen.accum_steps, rec.chosen.micro_batch) == (256, 4, 64)


def test_an_oom_at_the_micro_batch_drops_the_batch_naming_its_micro_batch(tmp_path: Path) -> None:
    # 256 alone read as if the probes had held 256 at once.
    with pytest.raises(cotune.ModelError, match=r"no local batch to consider for 't4': local batch 256 \(64 × 4 accumulation "
                                                r"steps\) \(every probed one\) is above its memory limit \(out of memory above 63\)"):
        cotune.recommend(_accum_profile(tmp_path, oom_at=64), target=0.9, deadline_s=7200.0)


def test_the_text_plan_states_the_accumulation_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "recommend", _accum_profile(tmp_path, oom_at=128), *_QUESTION, "--quiet")
    assert code == 0
    assert "local batch 256 = 64 × 4 accumulation steps (global 256)" in out


def test_the_json_recommendation_and_plan_carry_accum_steps(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _cli(capsys, "recommend", _accum_profile(tmp_path), *_QUESTION, "--json")
    doc = json.loads(out)
    assert code == 0
    assert (doc["recommendation"]["accum_steps"], doc["plan"]["accum_steps"]) == (4, 4)
    assert all(row["accum_steps"] == 4 for row in doc["runner_ups"] + doc["pareto"])


def test_a_batch_probed_without_accumulation_reports_one_step() -> None:
    doc = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800.0).to_dict()
    assert (doc["recommendation"]["accum_steps"], doc["plan"]["accum_steps"]) == (1, 1)


def test_the_k8s_job_carries_the_accumulation_steps_and_micro_batch(tmp_path: Path) -> None:
    from cotune.k8s import JobOptions, render_manifests

    doc = cotune.recommend(_accum_profile(tmp_path, oom_at=128), target=0.9, deadline_s=7200.0).to_dict()
    (job,) = [m for m in render_manifests(doc, JobOptions(name="accum", image="i", command=("c",), kind="pytorchjob"))
              if m["kind"] == "PyTorchJob"]
    spec = job["spec"]["pytorchReplicaSpecs"]
    container = next(iter(spec.values()))["template"]["spec"]["containers"][0]
    env = {e["name"]: e["value"] for e in container["env"]}
    assert (env["COTUNE_LOCAL_BATCH"], env["COTUNE_ACCUM_STEPS"], env["COTUNE_MICRO_BATCH"]) == ("256", "4", "64")


def test_a_saved_answer_whose_accum_steps_does_not_split_the_local_batch_is_one_line(tmp_path: Path) -> None:
    from cotune.errors import InputError
    from cotune.k8s import JobOptions, render_manifests

    doc = cotune.recommend(_accum_profile(tmp_path), target=0.9, deadline_s=7200.0).to_dict()
    doc["plan"]["accum_steps"] = 3  # a hand edit: 256 is no whole number of micro-batches of 3
    with pytest.raises(InputError, match=r"/plan/accum_steps: is 3, which does not split local batch 256"):
        render_manifests(doc, JobOptions(name="accum", image="i", command=("c",), kind="pytorchjob"))


def test_a_replan_switch_to_a_batch_measured_with_accumulation_carries_its_steps(tmp_path: Path) -> None:
    # replan admitted local batch 256 (its micro-batch 64 under the out-of-memory at 128) but
    # answered it with accum_steps 1: the launched job held 256 at once and ran out of memory.
    res = cotune.replan(
        _accum_profile(tmp_path, oom_at=128), target=0.9, deadline_s=2400.0, local_batches=[256],
        progress=dict(gpu="t4", workers=4, local_batch=64, epochs_done=5.0, elapsed_s=300.0, workers_lost=3),
    )
    assert res.decision == "switch" and res.best is not None, res.reason
    assert (res.best.local_batch, res.best.accum_steps) == (256, 4)
    assert res.plan is not None and res.plan.accum_steps == 4
    assert res.to_dict()["plan"]["accum_steps"] == 4
