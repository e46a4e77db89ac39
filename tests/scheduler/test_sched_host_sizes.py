"""Servers of different sizes per GPU type (8-GPU V100 hosts beside 4-GPU T4 hosts): one
``gpus_per_host`` per type, at every door — Python, CLI, HTTP, the cluster file, replan, k8s."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from _helpers import synthetic_records, write_jsonl
from cotune import RecommendRequest, recommend
from cotune.api import RequestError, recommend_request, replan_request
from cotune.cli import main
from cotune.errors import InputError
from cotune.models import fit_models
from cotune.profile import parse_profile

REPO = Path(__file__).resolve().parents[2]
SIZES = {"t4": 4, "v100": 8}


@pytest.fixture(scope="module")
def two_gpu_records() -> list[dict]:
    return synthetic_records(gpus=("t4", "v100"))


@pytest.fixture(scope="module")
def two_gpu_models(two_gpu_records):
    return fit_models(parse_profile([json.dumps(r) for r in two_gpu_records]), n_bootstrap=8)


@pytest.fixture()
def profile_path(tmp_path, two_gpu_records) -> Path:
    path = tmp_path / "two.jsonl"
    write_jsonl(path, two_gpu_records)
    return path


def _ask(models, **kw):
    question = dict(target=0.9, deadline_s=3600, prices={"t4": 0.5, "v100": 2.5}, top=0)
    return recommend(parse_profile([json.dumps(r) for r in synthetic_records(gpus=("t4", "v100"))]), models=models,
                     **{**question, **kw})


@pytest.mark.parametrize("gpu, hosts", [("t4", 2), ("v100", 1)])
def test_eight_workers_take_the_hosts_their_gpu_types_servers_need(two_gpu_models, gpu, hosts):
    rec = _ask(two_gpu_models, gpus=(gpu,), workers=(8,), gpus_per_host=SIZES)
    assert rec.chosen.workers == 8 and rec.chosen.hosts == hosts
    assert rec.plan.gpus_per_host == SIZES[gpu] and sum(rec.plan.workers_per_host) == 8
    assert len(rec.plan.workers_per_host) == hosts


def test_the_star_entry_sizes_the_types_not_named(two_gpu_models):
    rec = _ask(two_gpu_models, gpus=("t4",), workers=(8,), gpus_per_host={"v100": 8, "*": 2})
    assert rec.chosen.hosts == 4 and rec.plan.gpus_per_host == 2
    req = RecommendRequest(profile="x", target=1, gpus_per_host={"v100": 8})
    assert req.host_size_for("v100") == 8 and req.host_size_for("t4") == 4  # the default, 4


def test_one_number_still_sizes_every_type(two_gpu_models):
    for gpu in ("t4", "v100"):
        rec = _ask(two_gpu_models, gpus=(gpu,), workers=(8,), gpus_per_host=8)
        assert rec.chosen.hosts == 1 and rec.plan.gpus_per_host == 8


@pytest.mark.parametrize("bad, where", [
    ({"t4": 0}, "/gpus_per_host/t4"),
    ({"t4": True}, "/gpus_per_host/t4"),
    ({"t4": 2.5}, "/gpus_per_host/t4"),
    ({}, "/gpus_per_host"),
    ({"t4": 4, " T4": 8}, "/gpus_per_host/ T4"),
    ("8", "/gpus_per_host"),
])
def test_a_bad_host_size_names_its_entry(bad, where):
    with pytest.raises(InputError) as info:
        RecommendRequest(profile="x", target=1, gpus_per_host=bad)
    assert info.value.where == where


def test_a_size_for_an_unprofiled_type_is_refused_unless_every_type_has_one(two_gpu_models):
    # A typo ('t5' for 't4') would otherwise leave t4 at the default size without a word.
    with pytest.raises(InputError, match=r"names gpu t5, which has no timing probes.*host size of its own") as info:
        _ask(two_gpu_models, gpus_per_host={"t5": 8, "v100": 8})
    assert info.value.where == "/gpus_per_host/t5"
    rec = _ask(two_gpu_models, gpus_per_host={"t4": 4, "v100": 8, "a100": 8})  # a whole inventory: fine
    assert any(n.startswith("a100 named in the caps, host sizes or prices") for n in rec.notes)


def test_the_cli_takes_one_size_per_type(profile_path, capsys):
    args = ["recommend", str(profile_path), "--target", "0.9", "--deadline", "1h", "--workers", "8", "--top", "0",
            "--gpus-per-host", "v100=8", "--gpus-per-host", "4", "--json"]
    for gpu, hosts in (("v100", 1), ("t4", 2)):
        assert main(args + ["--gpu", gpu]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["plan"]["hosts"] == hosts and doc["plan"]["gpus_per_host"] == SIZES[gpu]


@pytest.mark.parametrize("given, said", [
    (["--gpus-per-host", "v100=8", "--gpus-per-host", "v100=4"], "--gpus-per-host"),
    (["--gpus-per-host", "t4=0"], "--gpus-per-host t4"),
    (["--gpus-per-host", "=8"], "GPU=N"),
])
def test_the_cli_refuses_a_bad_size_in_one_line(profile_path, capsys, given, said):
    rc = main(["recommend", str(profile_path), "--target", "0.9", "--deadline", "1h", *given])
    err = capsys.readouterr().err
    assert rc == 2 and said in err and err.count("\n") == 1 and "Traceback" not in err


def test_http_takes_per_type_sizes_in_the_published_schema(two_gpu_records, response_validator):
    request = {"schema_version": 1, "profile": {"records": two_gpu_records}, "target": 0.9, "deadline_s": 3600,
               "workers": [8], "gpus": ["v100"], "gpus_per_host": {"v100": 8, "*": 4}}
    jsonschema.validate(request, json.loads((REPO / "docs/schema/recommend-request.v1.json").read_text()))
    doc = recommend_request(request)
    response_validator.validate(doc)
    assert doc["plan"]["gpus_per_host"] == 8 and doc["plan"]["hosts"] == 1
    with pytest.raises(RequestError) as info:
        recommend_request(dict(request, gpus_per_host={"v100": -1}))
    assert info.value.status == 422 and "/gpus_per_host/v100" in str(info.value)


CLUSTER = """
version = 1
gpus_per_host = 4

[checkpoint]
write_s = 30

[gpu.t4]
on_demand = 32
on_demand_price_per_hour = 0.5

[gpu.v100]
on_demand = 32
on_demand_price_per_hour = 2.5
gpus_per_host = 8
"""


def test_a_cluster_files_gpu_table_sizes_its_own_servers(two_gpu_models, tmp_path, response_validator):
    path = tmp_path / "fleet.toml"
    path.write_text(CLUSTER, encoding="utf-8")
    for gpu, hosts in (("v100", 1), ("t4", 2)):
        rec = _ask(two_gpu_models, gpus=(gpu,), workers=(8,), cluster=str(path), prices=None)
        assert rec.chosen.hosts == hosts and rec.plan.gpus_per_host == SIZES[gpu]
    doc = rec.to_dict()
    response_validator.validate(json.loads(json.dumps(doc)))
    assert doc["cluster"]["gpus_per_host"] == 4
    assert {g: e["gpus_per_host"] for g, e in doc["cluster"]["gpus"].items()} == {"t4": 4}  # only the searched type
    # The request agreeing with the file is no contradiction; disagreeing is, named with the file's key.
    assert _ask(two_gpu_models, gpus=("v100",), cluster=str(path), prices=None, gpus_per_host={"v100": 8}).feasible
    # 4 is the default size, yet stated it is a contradiction too (a request that states no
    # size is none: the file's rule).
    with pytest.raises(InputError, match=r"gpus_per_host 4 for v100 contradicts .*fleet.toml's gpu\.v100\.gpus_per_host = 8"):
        _ask(two_gpu_models, gpus=("v100",), cluster=str(path), prices=None, gpus_per_host={"v100": 4, "t4": 8})
    with pytest.raises(InputError, match=r"gpus_per_host 8 for t4 contradicts .*fleet.toml's gpus_per_host = 4"):
        _ask(two_gpu_models, gpus=("t4",), cluster=str(path), prices=None, gpus_per_host=8)


@pytest.mark.parametrize("value", ["0", "2.5", '"eight"', "5000"])
def test_a_bad_size_in_a_gpu_table_names_the_field(tmp_path, value, capsys):
    path = tmp_path / "fleet.toml"
    path.write_text(CLUSTER.replace("gpus_per_host = 8", f"gpus_per_host = {value}"), encoding="utf-8")
    rc = main(["recommend", "cifar10-resnet18", "--target", "0.9", "--cluster", str(path)])
    err = capsys.readouterr().err
    assert rc == 2 and "gpu.v100.gpus_per_host" in err and err.count("\n") == 1


def test_replan_lays_a_switch_out_on_the_new_types_servers(two_gpu_records):
    # A job on 4 x t4 (one 4-GPU host) where v100s are far cheaper: the switch's plan is
    # laid out on the servers of the type it moves to (8 GPUs), not the t4's (4).
    request = {"schema_version": 1, "profile": {"records": two_gpu_records}, "target": 0.9, "deadline_s": 3600,
               "prices": {"t4": 5.0, "v100": 0.6}, "gpus_per_host": {"t4": 4, "v100": 8},
               "progress": {"gpu": "t4", "market": "on_demand", "workers": 4, "local_batch": 64,
                            "epochs_done": 1, "elapsed_s": 60}}
    jsonschema.validate(request, json.loads((REPO / "docs/schema/replan-request.v1.json").read_text()))
    doc = replan_request(request)
    assert doc["decision"] == "switch" and doc["best"]["gpu"] == "v100", doc["reason"]
    assert doc["plan"]["gpus_per_host"] == 8 and doc["plan"]["hosts"] == -(-doc["best"]["workers"] // 8)
    # The switch moves the job to another type: rendered with no label for it, cotune k8s
    # warns (the answer names the types it weighed; a saved one without them, its two options).
    from cotune.k8s import JobOptions, manifest_warnings

    jsonschema.validate(doc, json.loads((REPO / "docs/schema/replan-response.v1.json").read_text()))
    assert doc["gpus"] == ["t4", "v100"]
    for answer in (doc, {k: v for k, v in doc.items() if k != "gpus"}):
        said = manifest_warnings(answer, JobOptions(name="t", image="i", command=("x",)))
        assert any("the plan is for v100 (the answer weighed t4 too)" in w for w in said), said


@pytest.mark.parametrize("gpu", ["v100", "t4"])
def test_k8s_pods_hold_the_chosen_types_server_size(profile_path, capsys, gpu):
    import yaml

    rc = main(["k8s", str(profile_path), "--target", "0.9", "--deadline", "1h", "--gpu", gpu, "--workers", "8",
               "--gpus-per-host", "v100=8", "--gpus-per-host", "t4=4", "--image", "example/train:1"])
    out = capsys.readouterr().out
    assert rc == 0
    job = next(d for d in yaml.safe_load_all(out) if d and d.get("kind") == "PyTorchJob")
    pods = []
    for spec in job["spec"]["pytorchReplicaSpecs"].values():
        limits = spec["template"]["spec"]["containers"][0]["resources"]["limits"]
        pods += [int(limits["nvidia.com/gpu"])] * int(spec["replicas"])
    assert pods == [SIZES[gpu]] * (8 // SIZES[gpu])
