"""``cotune k8s --answer FILE``: a saved answer (recommend or replan, CLI or service) rendered
without solving again — a re-plan's switch as its new size, with its learning-rate factor."""

from __future__ import annotations

import io
import json
import shutil
import sys
from contextlib import redirect_stderr, redirect_stdout
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
import yaml
from sched_helpers import closed

from cotune.api import schema
from cotune.cli import main

DATA = Path(__file__).parent / "data" / "k8s"
QUESTION = ["--target", "0.94", "--deadline", "30m", "--price", "t4=0.526", "--max-workers", "16"]
JOB = ["--name", "cifar", "--image", "ghcr.io/me/train:1", "--command", "torchrun train.py --resume"]


def _cli(*argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin.encode()))
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
    finally:
        sys.stdin = old
    return code, out.getvalue(), err.getvalue()


@lru_cache(maxsize=None)
def _pytorchjob_validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(closed(json.loads((DATA / "pytorchjob.kubeflow.org.v1.json").read_text())))


def _out_of_memory_job(folder: Path) -> Path:
    """A tracked job at 4 × 512 on t4 that ran out of memory there: every re-plan switches."""
    from cotune.examples import example_path
    from cotune.track import Tracker

    profile = folder / "job.jsonl"
    shutil.copy(example_path("cifar10-resnet18"), profile)

    class OutOfMemoryError(RuntimeError):
        pass

    with pytest.raises(OutOfMemoryError):
        with Tracker(profile, gpu="t4", workers=4, local_batch=512, window=20) as tracker:
            for epoch in range(3):
                for _ in range(25):
                    tracker.step(step_time_s=0.9)
                tracker.eval(metric=0.5 + 0.1 * epoch)
            raise OutOfMemoryError("CUDA out of memory")
    return profile


@pytest.fixture(scope="module")
def switch_answer(tmp_path_factory) -> Path:
    """A saved 'cotune replan --json' that switches: a job at 4 × 512 that ran out of memory there."""
    folder = tmp_path_factory.mktemp("answer")
    profile = _out_of_memory_job(folder)
    code, out, err = _cli("replan", str(profile), "--target", "0.93", "--deadline", "2h", "--max-workers", "16",
                          "--price", "t4=0.526", "--elapsed", "10m", "--json")
    assert code == 0, err
    path = folder / "replan.json"
    path.write_text(out)
    return path


def test_a_saved_recommend_answer_renders_what_the_question_renders(tmp_path):
    code, out, _ = _cli("recommend", "cifar10-resnet18", *QUESTION, "--json")
    assert code == 0
    saved = tmp_path / "rec.json"
    saved.write_text(out)
    asked = _cli("k8s", "cifar10-resnet18", *QUESTION, *JOB)
    answered = _cli("k8s", "--answer", str(saved), *JOB)
    assert answered[0] == asked[0] == 0 and answered[1] == asked[1]


def test_a_saved_switch_renders_its_new_size_the_remaining_deadline_and_the_learning_rate_factor(switch_answer):
    answer = json.loads(switch_answer.read_text())
    jsonschema.validate({"schema_version": 1, **answer}, schema("replan-response.v1"))
    assert answer["decision"] == "switch" and answer["plan"]["workers"] == answer["best"]["workers"]
    code, out, err = _cli("k8s", "--answer", str(switch_answer), *JOB, "--gang", "volcano")
    assert code == 0, err
    group, job = yaml.safe_load_all(out)
    _pytorchjob_validator().validate(job)
    best = answer["best"]
    pods = job["spec"]["pytorchReplicaSpecs"]
    gpus = sum(int(spec["replicas"]) * int(spec["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"])
               for spec in pods.values())
    assert gpus == best["workers"] and "elasticPolicy" not in job["spec"]  # one size: what the re-plan chose
    env = {e["name"]: e["value"] for e in next(iter(pods.values()))["template"]["spec"]["containers"][0]["env"]}
    assert env["COTUNE_LOCAL_BATCH"] == str(best["local_batch"]) and env["COTUNE_TARGET"] == "0.93"
    assert float(env["COTUNE_LR_SCALE"]) == pytest.approx(answer["lr_scale"]) and answer["lr_scale"] < 1
    notes = job["metadata"]["annotations"]
    assert notes["cotune.dev/deadline-s"] == f"{answer['remaining_deadline_s']:.0f}"  # what is left, not the whole 2 h
    assert notes["cotune.dev/lr-scale"] == f"{answer['lr_scale']:.6g}"
    assert group["kind"] == "PodGroup" and group["spec"]["minMember"] == sum(int(s["replicas"]) for s in pods.values())


def test_an_answer_is_read_from_stdin(switch_answer):
    from_file = _cli("k8s", "--answer", str(switch_answer), *JOB)
    from_stdin = _cli("k8s", "--answer", "-", *JOB, stdin=switch_answer.read_text())
    assert from_stdin[0] == 0 and from_stdin[1] == from_file[1]


@pytest.mark.parametrize("decision", ["stay", "infeasible"])
def test_a_replan_with_nothing_to_submit_renders_nothing_and_exits_1(switch_answer, tmp_path, decision):
    answer = json.loads(switch_answer.read_text()) | {"decision": decision, "reason": "because", "plan": None}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(answer))
    code, out, err = _cli("k8s", "--answer", str(path), *JOB)
    assert code == 1 and out == "" and err.count("\n") == 1 and f"the re-plan answer is '{decision}'" in err


@pytest.mark.parametrize(("argv", "needle"), [
    (["k8s", *JOB], "the following arguments are required: PROFILE, --target (or --answer FILE: a saved answer)"),
    (["k8s", "cifar10-resnet18", *JOB], "the following arguments are required: --target"),
    (["k8s", "--answer", "ANSWER", "cifar10-resnet18", *JOB], "--answer renders a saved answer: leave out PROFILE"),
    (["k8s", "--answer", "ANSWER", "--deadline", "1h", "--objective", "time", *JOB],
     "leave out --deadline, --objective (the answer already holds the question it answered)"),
    (["k8s", "--answer", "ANSWER", "--gpus-per-host", "8", *JOB], "leave out --gpus-per-host (the answer already"),
])
def test_the_question_or_a_saved_answer_but_not_both(switch_answer, argv, needle):
    code, out, err = _cli(*[str(switch_answer) if a == "ANSWER" else a for a in argv])
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1, err


@pytest.mark.parametrize(("content", "needle"), [
    (b"not json", "--answer FILE: not valid JSON"),
    (b"[1, 2]", "the answer must be a JSON object (cotune recommend/replan --json), got list"),
    (b'{"status": "ok"}', "the answer has no 'plan', 'recommendation'"),
    (b'{"decision": "switch", "best": {}}', "a re-plan answer renders from its 'plan'"),
    (b'{"decision": "maybe"}', "the re-plan answer's decision is 'maybe'"),
    (b'{"decision": "stay", "reason": "one\\ntwo"}', "there is no new job to submit (one two)"),
    (b'{"status": "infeasible", "plan": null, "relax": 5, "recommendation": null, "constraints": {}, "workload": "w", '
     b'"cost_unit": "USD", "interval": 0.9}', "nothing is feasible, so there is no job to render: relax the constraints"),
    (b"\x1f\x8b\x08\x00", "gzip-compressed: decompress it first"),
])
def test_a_file_that_is_no_answer_or_has_nothing_to_render_is_one_line(tmp_path, content, needle):
    path = tmp_path / "FILE"
    path.write_bytes(content)
    code, out, err = _cli("k8s", "--answer", str(path), *JOB)
    assert code in (1, 2) and out == "" and err.count("\n") == 1 and needle in err.replace(str(path), "FILE"), err


def test_a_missing_answer_file_is_named(tmp_path):
    code, _, err = _cli("k8s", "--answer", str(tmp_path / "nope.json"), *JOB)
    assert code == 2 and "--answer" in err and "nope.json" in err and err.count("\n") == 1


def test_a_saved_error_document_is_named_as_the_error_it_holds(tmp_path):
    # recommend --json prints an error.v1 document when the question fails; saved and rendered,
    # it read "the answer has no 'plan', 'recommendation', ...".
    code, out, _ = _cli("recommend", "no-such-profile", "--target", "0.94", "--json")
    assert code == 2
    saved = tmp_path / "rec.json"
    saved.write_text(out)
    code, out, err = _cli("k8s", "--answer", str(saved), *JOB)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "the answer is an error (unknown_profile), not a plan: no-such-profile: no such file" in err, err


def test_a_saved_infeasible_recommend_answer_renders_nothing(tmp_path):
    code, out, _ = _cli("recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "5s", "--json")
    assert code == 1
    saved = tmp_path / "rec.json"
    saved.write_text(out)
    code, out, err = _cli("k8s", "--answer", str(saved), *JOB)
    assert code == 1 and out == "" and "nothing is feasible, so there is no job to render" in err


def test_render_manifests_takes_a_switch_document_and_checks_what_it_reads(switch_answer):
    from cotune.errors import InputError
    from cotune.k8s import JobOptions, render_manifests

    answer = json.loads(switch_answer.read_text())
    opts = JobOptions(name="cifar-2", image="i", command=("c",), kind="trainjob")
    (job,) = render_manifests(answer, opts)
    assert job["spec"]["trainer"]["numNodes"] * job["spec"]["trainer"]["numProcPerNode"] == answer["best"]["workers"]
    code, out, _ = _cli("recommend", "cifar10-resnet18", *QUESTION, "--json")
    rec = json.loads(out)
    rec["plan"]["workers_per_host"] = [n + 1 for n in rec["plan"]["workers_per_host"]]  # a hand edit that no longer adds up
    with pytest.raises(InputError, match=r"/plan/workers_per_host: adds up to \d+ workers, not the plan's \d+"):
        render_manifests(rec, opts)


SPOT_CLUSTER = """version = 1
gpus_per_host = 4
[checkpoint]
write_s = 20
restart_s = 30
[gpu.t4]
on_demand = 16
spot = 32
on_demand_price_per_hour = 0.526
spot_price_per_hour = 0.158
revocation_rate_per_hour = 2.0
replacement_delay_s = "2m"
"""


@pytest.fixture(scope="module")
def spot_switch_answer(tmp_path_factory) -> Path:
    """A saved 'cotune replan --json' that switches to spot servers (ahead of schedule, spot t4 at a third of the price)."""
    folder = tmp_path_factory.mktemp("spot-answer")
    profile = _out_of_memory_job(folder)
    cluster = folder / "cluster.toml"
    cluster.write_text(SPOT_CLUSTER)
    code, out, err = _cli("replan", str(profile), "--target", "0.93", "--deadline", "2h", "--cluster", str(cluster),
                          "--elapsed", "1m", "--json")
    assert code == 0, err
    path = folder / "replan.json"
    path.write_text(out)
    return path


def test_a_spot_switch_carries_its_checkpoint_interval_to_the_job(spot_switch_answer):
    # The re-plan answer had no spot block for best: the switch's manifest lost the
    # checkpoint interval its time and cost assume (recommend's answer carried it).
    answer = json.loads(spot_switch_answer.read_text())
    assert answer["decision"] == "switch" and answer["best"]["market"] in ("spot", "mixed")
    jsonschema.validate({"schema_version": 1, **answer}, schema("replan-response.v1"))
    checkpoint_s = answer["spot"]["checkpoint_interval_s"]
    assert answer["spot"]["market"] == answer["best"]["market"] and checkpoint_s > 0
    code, out, err = _cli("k8s", "--answer", str(spot_switch_answer), *JOB, "--gang", "none")
    assert code == 0, err
    (job,) = yaml.safe_load_all(out)
    _pytorchjob_validator().validate(job)
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        env = {e["name"]: e["value"] for e in replica["template"]["spec"]["containers"][0]["env"]}
        assert env["COTUNE_CHECKPOINT_INTERVAL_S"] == f"{checkpoint_s:.0f}"
    assert job["metadata"]["annotations"]["cotune.dev/checkpoint-interval-s"] == f"{checkpoint_s:.0f}"


def test_a_switch_among_several_gpu_types_without_their_labels_is_warned_about(switch_answer, tmp_path):
    # The switch document kept only what the manifests are made of: the answer's 'gpus' was
    # dropped, and the GPU-type warning recommend answers get never came.
    answer = json.loads(switch_answer.read_text())
    answer["gpus"] = ["t4", "v100"]  # a re-plan that weighed v100 too and chose t4
    path = tmp_path / "replan.json"
    path.write_text(json.dumps(answer))
    code, out, err = _cli("k8s", "--answer", str(path), *JOB)
    assert code == 0 and out
    assert "warning: the plan is for t4 (the answer weighed v100 too), but nothing in the manifest sends its pods to t4 nodes" in err, err
    code, _, err = _cli("k8s", "--answer", str(path), *JOB, "--gpu-label", "t4:nvidia.com/gpu.product=Tesla-T4")
    assert code == 0 and "the answer weighed" not in err, err
