"""What `cotune k8s` writes is what kubectl reads, and a saved answer that does not add up
is refused with the field at fault, never rendered into a wrong job."""

from __future__ import annotations

import io
import json
import re
import sys
from contextlib import redirect_stderr, redirect_stdout

import pytest
import yaml

from cotune.cli import main

QUESTION = ["--target", "0.94", "--deadline", "30m", "--price", "t4=0.526", "--max-workers", "16"]
JOB = ["--image", "ghcr.io/me/train:1"]


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


class _Yaml11Loader(yaml.SafeLoader):
    """Reads plain scalars as go-yaml (kubectl) does, where PyYAML's resolver reads strings:
    y/n as booleans, numbers with an exponent and no dot, leading-zero decimals."""


_Yaml11Loader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
_Yaml11Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(r"^[-+]?[0-9]+[eE][-+]?[0-9]+$"),
                                    list("-+0123456789"))
_Yaml11Loader.add_implicit_resolver("tag:yaml.org,2002:int", re.compile(r"^0[0-9]+$"), list("0"))


def _first_container(job):
    return next(iter(job["spec"]["pytorchReplicaSpecs"].values()))["template"]["spec"]["containers"][0]


@pytest.fixture(scope="module")
def answer(tmp_path_factory):
    code, out, err = _cli("recommend", "cifar10-resnet18", *QUESTION, "--json")
    assert code == 0, err
    path = tmp_path_factory.mktemp("k8s") / "rec.json"
    path.write_text(out)
    return path


def _edited(tmp_path, answer, edit) -> str:
    doc = json.loads(answer.read_text())
    edit(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return str(path)


def test_strings_a_yaml_11_reader_would_take_for_numbers_or_booleans_are_quoted(answer):
    words = ["torchrun", "train.py", "--lr", "1e-3", "--amp", "y", "--seed", "089", "--flag", "n", "--off", "off"]
    code, out, err = _cli("k8s", "--answer", str(answer), *JOB, "--name", "y", "--namespace", "n",
                          "--queue", "089", "--command", " ".join(words))
    assert code == 0, err
    docs = [d for d in yaml.load_all(out, Loader=_Yaml11Loader) if d["kind"] == "PyTorchJob"]
    (job,) = docs
    assert job["metadata"]["name"] == "y" and job["metadata"]["namespace"] == "n"  # was True / False
    container = _first_container(job)
    assert container["command"] == words  # '1e-3' was 0.001, '089' was 89, 'y' was True
    assert all(isinstance(e["value"], str) for e in container["env"])


@pytest.mark.parametrize("edit, where", [
    (lambda d: d["recommendation"].update(global_batch=999), "/recommendation/global_batch: is 999, but the plan runs"),
    (lambda d: d["plan"].update(gpus_per_host=2, workers_per_host=[3]), "/plan/workers_per_host/0: must be a whole number"),
    (lambda d: d["plan"]["elastic"].update(max_workers=10**10), "/plan/elastic/max_workers: must be a whole number"),
    (lambda d: d.update(schema_version=2), "/schema_version: is 2, and this cotune reads version 1"),
    (lambda d: d.update(status="weird"), "/status: must be one of ok, infeasible, got 'weird'"),
])
def test_a_saved_answer_that_does_not_add_up_is_refused_at_its_field(tmp_path, answer, edit, where):
    code, out, err = _cli("k8s", "--answer", _edited(tmp_path, answer, edit), *JOB)
    assert code == 2 and out == "" and err.count("\n") == 1 and where in err, err


def test_whole_counts_written_as_floats_are_rendered_as_integers(tmp_path, answer):
    def as_floats(d):
        d["plan"].update(workers=float(d["plan"]["workers"]), local_batch=float(d["plan"]["local_batch"]))
        d["recommendation"]["global_batch"] = float(d["recommendation"]["global_batch"])

    code, out, err = _cli("k8s", "--answer", _edited(tmp_path, answer, as_floats), *JOB, "--json")
    assert code == 0, err
    job = next(i for i in json.loads(out)["items"] if i["kind"] == "PyTorchJob")
    env = {e["name"]: e["value"] for e in _first_container(job)["env"]}
    assert "." not in env["COTUNE_WORKERS"] and "." not in env["COTUNE_GLOBAL_BATCH"]
    assert "x" in job["metadata"]["annotations"]["cotune.dev/plan"] and ".0x" not in job["metadata"]["annotations"]["cotune.dev/plan"]


def test_a_switch_is_named_apart_from_the_job_it_replaces(tmp_path):
    code, out, err = _cli("replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--price", "t4=0.526",
                          "--elapsed", "10m", "--epochs-done", "20", "--current", "t4:2:128", "--json")
    assert code == 0 and json.loads(out)["decision"] == "switch", err
    saved = tmp_path / "switch.json"
    saved.write_text(out)
    first, again = (_cli("k8s", "--answer", str(saved), *JOB, "--kind", "trainjob", "--json") for _ in range(2))
    name = json.loads(first[1])["items"][0]["metadata"]["name"]
    assert re.fullmatch(r"cifar10-resnet18-r[0-9a-f]{4}", name), name  # was 'cifar10-resnet18', the running job's
    assert json.loads(again[1])["items"][0]["metadata"]["name"] == name  # the same answer, the same name
    code, out, _ = _cli("k8s", "--answer", str(saved), *JOB, "--name", "mine", "--json")
    assert json.loads(out)["items"][-1]["metadata"]["name"] == "mine"


@pytest.mark.parametrize("runtime", ["torch.distributed", "2gpu-runtime"])
def test_a_runtime_is_named_as_kubernetes_names_objects(answer, runtime):
    code, out, err = _cli("k8s", "--answer", str(answer), *JOB, "--kind", "trainjob", "--runtime", runtime, "--json")
    assert code == 0, err  # DNS-1123 subdomains: dots and a leading digit are allowed
    assert json.loads(out)["items"][-1]["spec"]["runtimeRef"]["name"] == runtime


@pytest.mark.parametrize("resource", ["gpu", "kubernetes.io/gpu"])
def test_a_gpu_resource_the_api_server_refuses_is_refused_here(answer, resource):
    code, out, err = _cli("k8s", "--answer", str(answer), *JOB, "--gpu-resource", resource)
    assert code == 2 and out == "" and "not an extended resource name" in err, err


def test_a_trainjob_with_volcano_gang_says_the_runtime_must_provide_it(answer):
    code, _, err = _cli("k8s", "--answer", str(answer), *JOB, "--kind", "trainjob", "--gang", "volcano", "--json")
    assert code == 0 and "podGroupPolicy.volcano" in err
    code, _, err = _cli("k8s", "--answer", str(answer), *JOB, "--kind", "trainjob", "--gang", "kueue", "--json")
    assert code == 0 and "podGroupPolicy" not in err


def test_yaml_without_pyyaml_is_one_line_before_any_solve(monkeypatch):
    import cotune.cli._k8s as k8s_cli

    monkeypatch.setitem(sys.modules, "yaml", None)
    monkeypatch.setattr(k8s_cli, "recommend_from_args", lambda args: pytest.fail("solved before refusing"))
    code, out, err = _cli("k8s", "cifar10-resnet18", *QUESTION, *JOB)
    assert code == 2 and out == "" and "pip install 'cotune[k8s]', or pass --json" in err and err.count("\n") == 1


def test_a_spot_plans_checkpoint_interval_travels_with_the_job(tmp_path, answer):
    def with_checkpoints(d):
        d["plan"]["market"] = "spot"
        d["spot"] = {"market": "spot", "checkpoint_interval_s": 148.4}

    code, out, err = _cli("k8s", "--answer", _edited(tmp_path, answer, with_checkpoints), *JOB, "--json")
    assert code == 0, err
    job = next(i for i in json.loads(out)["items"] if i["kind"] == "PyTorchJob")
    env = {e["name"]: e["value"] for e in _first_container(job)["env"]}
    assert env["COTUNE_CHECKPOINT_INTERVAL_S"] == "148"
    assert job["metadata"]["annotations"]["cotune.dev/checkpoint-interval-s"] == "148"


@pytest.mark.parametrize("gang", ["kueue", "volcano"])
def test_a_queue_is_named_as_kubernetes_names_objects(answer, gang):
    # Volcano Queues and Kueue LocalQueues are DNS-1123 subdomains: 'team.a' was refused.
    code, out, err = _cli("k8s", "--answer", str(answer), *JOB, "--queue", "team.a", "--gang", gang, "--json")
    assert code == 0, err
    items = json.loads(out)["items"]
    assert "team.a" in json.dumps(items)
    code, out, err = _cli("k8s", "--answer", str(answer), *JOB, "--queue", "team_a", "--gang", gang)
    assert code == 2 and out == "" and "--queue 'team_a' is not a valid queue name" in err and err.count("\n") == 1


def _longest_trainjob_pod_name(job: dict) -> str:
    # The JobSet webhook checks <jobset>-<replicatedJob>-<jobIndex>-<podIndex>-abcde: the
    # trainer's JobSet is named after the TrainJob, its replicated job is "node".
    return f"{job['metadata']['name']}-node-0-{job['spec']['trainer']['numNodes'] - 1}-abcde"


def test_a_50_character_trainjob_name_is_refused_with_the_trainjobs_limit():
    # 49-50 characters passed, and the JobSet the trainer makes was refused by its webhook.
    code, out, err = _cli("k8s", "--kind", "trainjob", "--name", "a" * 50, "cifar10-resnet18", *QUESTION, *JOB)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "at most 46" in err and "TrainJob" in err and "(50 characters)" in err, err


@pytest.mark.parametrize("switch", [False, True])
def test_a_trainjob_name_derived_from_a_long_workload_fits_its_pods_names(tmp_path, answer, switch):
    def edit(doc):
        doc["workload"] = "w" * 80
        if switch:  # a re-plan's switch adds "-r" and 4 hex digits to the derived name
            doc["switch"] = True

    code, out, err = _cli("k8s", "--answer", _edited(tmp_path, answer, edit), *JOB, "--kind", "trainjob", "--json")
    assert code == 0, err
    job = json.loads(out)["items"][0]
    assert len(job["metadata"]["name"]) <= 46 and len(_longest_trainjob_pod_name(job)) <= 63, job["metadata"]["name"]


def test_a_trainjob_of_over_1000_nodes_needs_a_name_that_leaves_room_for_their_index(tmp_path, answer):
    def edit(doc):  # 2000 one-GPU hosts: pod indices of 4 digits
        plan = doc["plan"]
        plan.update(workers=2000, hosts=2000, gpus_per_host=1, workers_per_host=[1] * 2000)
        plan["elastic"] = {"min_workers": 2000, "max_workers": 2000}
        doc["recommendation"]["global_batch"] = 2000 * plan["local_batch"]

    path = _edited(tmp_path, answer, edit)
    code, out, err = _cli("k8s", "--answer", path, *JOB, "--kind", "trainjob", "--name", "a" * 46, "--json")
    assert code == 2 and out == "" and err.count("\n") == 1 and "use at most 45 characters" in err, err
    code, out, err = _cli("k8s", "--answer", path, *JOB, "--kind", "trainjob", "--name", "a" * 45, "--json")
    assert code == 0 and len(_longest_trainjob_pod_name(json.loads(out)["items"][0])) == 63, err


def test_a_trainjob_of_over_1000_nodes_without_a_name_derives_one_that_fits(tmp_path, answer):
    # The derived name took the 1000-node limit and the rendering then refused a name the
    # user never gave.
    def edit(doc):
        doc["workload"] = "w" * 80
        plan = doc["plan"]
        plan.update(workers=2000, hosts=2000, gpus_per_host=1, workers_per_host=[1] * 2000)
        plan["elastic"] = {"min_workers": 2000, "max_workers": 2000}
        doc["recommendation"]["global_batch"] = 2000 * plan["local_batch"]

    code, out, err = _cli("k8s", "--answer", _edited(tmp_path, answer, edit), *JOB, "--kind", "trainjob", "--json")
    assert code == 0, err
    assert len(_longest_trainjob_pod_name(json.loads(out)["items"][0])) <= 63
