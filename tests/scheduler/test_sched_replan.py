"""Spot and re-planning reach schedulers: the cluster in the JSON request, POST /v1/replan,
and the same answer from Python, the CLI and HTTP (issue 13 item 2)."""

from __future__ import annotations

import copy
import io
import json
import warnings
from contextlib import redirect_stdout

import jsonschema
import pytest
from sched_helpers import EXAMPLE, REPO, without_timing

import cotune
from cotune.api import RequestError, parse_replan_request, recommend_request, replan_request, schema
from cotune.cli import main

CLUSTER = {
    "version": 1,
    "gpus_per_host": 1,
    "checkpoint": {"write_s": 30, "restart_s": 30},
    "gpu": {"t4": {"on_demand": 16, "spot": 16, "on_demand_price_per_hour": 0.526, "spot_price_per_hour": 0.158,
                   "revocation_rate_per_hour": 0.1, "replacement_delay_s": "3m"}},
}
SPOT_REQUEST = {"profile": EXAMPLE, "target": 0.94, "deadline_s": 1800, "cluster": CLUSTER}
REPLAN_REQUEST = {
    "profile": EXAMPLE, "target": 0.94, "deadline_s": 3600, "cluster": CLUSTER,
    "progress": {"epochs_done": 20, "elapsed_s": 900, "gpu": "t4", "market": "spot", "workers": 4, "local_batch": 129},
}


def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(schema(name))


@pytest.fixture(scope="module")
def cluster_file(tmp_path_factory):
    import yaml

    path = tmp_path_factory.mktemp("cluster") / "cluster.yaml"  # the same cluster as a file: one source of truth
    path.write_text(yaml.safe_dump(CLUSTER))
    return path


def test_cluster_in_the_json_request_plans_spot_like_the_python_door(cluster_file, response_validator):
    doc = recommend_request(copy.deepcopy(SPOT_REQUEST))
    response_validator.validate(doc)
    assert _validator("recommend-request.v1").is_valid(SPOT_REQUEST)
    assert doc["recommendation"]["market"] in ("spot", "mixed") and doc["spot"]["market"] == doc["recommendation"]["market"]
    py = cotune.recommend(EXAMPLE, target=0.94, deadline_s=1800, cluster=str(cluster_file)).to_dict()
    assert doc["recommendation"] == py["recommendation"] and doc["spot"] == py["spot"]
    # The cluster the plan was made for travels in the answer too.
    assert doc["cluster"]["source"] == "/cluster" and py["cluster"]["source"] == str(cluster_file)
    assert doc["cluster"]["gpus"] == py["cluster"]["gpus"] and doc["cluster"]["gpus"]["t4"]["spot_price_per_hour"] == 0.158
    assert recommend_request({"profile": EXAMPLE, "target": 0.94})["cluster"] is None


def test_a_bad_cluster_field_points_into_the_cluster():
    bad = copy.deepcopy(SPOT_REQUEST)
    bad["cluster"]["gpu"]["t4"]["spot_price_per_hour"] = -1
    with pytest.raises(RequestError) as info:
        recommend_request(bad)
    assert info.value.path == "/cluster" and "spot_price_per_hour" in info.value.detail and info.value.status == 422
    with pytest.raises(RequestError) as info:
        recommend_request(dict(SPOT_REQUEST, prices={"t4": 1.0}))
    assert info.value.path == "/prices" and "cluster file" in info.value.detail


def test_replan_request_answers_the_replan_document():
    doc = replan_request(copy.deepcopy(REPLAN_REQUEST))
    _validator("replan-response.v1").validate(doc)
    assert _validator("replan-request.v1").is_valid(REPLAN_REQUEST)
    assert doc["decision"] in ("stay", "switch", "infeasible") and doc["schema_version"] == 1
    assert doc["stay"]["gpu"] == "t4" and doc["stay"]["market"] == "spot"


def test_a_cap_for_an_unprofiled_gpu_is_refused_at_its_pointer_where_it_leaves_a_profiled_one_uncapped():
    # A typo in a per-gpu cap ("t5") would otherwise leave the real gpu at the default cap.
    with pytest.raises(RequestError) as info:
        replan_request(dict(copy.deepcopy(REPLAN_REQUEST), max_workers={"t5": 8, "a100": 4}))
    assert info.value.path == "/max_workers/a100" and info.value.status == 422 and "profiled: t4" in info.value.detail
    # Every profiled gpu capped (a scheduler's whole inventory): answered, the others noted.
    doc = replan_request(dict(copy.deepcopy(REPLAN_REQUEST), max_workers={"t4": 8, "a100": 4}))
    assert any(n.startswith("a100 named in the caps, host sizes or prices") for n in doc["notes"])


@pytest.mark.slow
def test_replan_is_the_same_at_every_door(capsys, cluster_file):
    http = replan_request(copy.deepcopy(REPLAN_REQUEST))
    progress = cotune.Progress(**REPLAN_REQUEST["progress"])
    py = cotune.replan(EXAMPLE, target=0.94, deadline_s=3600, cluster=str(cluster_file), progress=progress).to_dict()
    code = main(["replan", EXAMPLE, "--target", "0.94", "--deadline", "1h", "--cluster", str(cluster_file), "--elapsed", "900",
                 "--epochs-done", "20", "--current", "t4:spot:4:129", "--json"])
    cli = json.loads(capsys.readouterr().out)
    assert code == 0
    # the whole document, schema_version included (the CLI's and Python's lacked it)
    assert py == http and cli == http
    _validator("replan-response.v1").validate(cli)


@pytest.mark.slow
def test_a_job_that_has_just_started_is_elapsed_zero_at_every_door(capsys, cluster_file):
    just = copy.deepcopy(REPLAN_REQUEST)
    just["progress"].update(elapsed_s=0, epochs_done=0)
    http = replan_request(just)
    code = main(["replan", EXAMPLE, "--target", "0.94", "--deadline", "1h", "--cluster", str(cluster_file), "--elapsed", "0",
                 "--epochs-done", "0", "--current", "t4:spot:4:129", "--json"])
    assert code == 0, capsys.readouterr().err  # the CLI refused 0: 'duration must be positive'
    assert json.loads(capsys.readouterr().out) == http


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"progress": {"epochs_done": 1, "elapsed_s": 1, "gpu": "t4", "market": "cheap", "workers": 2, "local_batch": 8}}, "/progress/market"),
        ({"progress": {"epochs_done": -1, "elapsed_s": 1, "gpu": "t4", "market": "spot", "workers": 2, "local_batch": 8}}, "/progress/epochs_done"),
        # a field left out comes from the job's tracked records; the example has none
        ({"progress": {"epochs_done": 1, "gpu": "t4", "market": "spot", "workers": 2, "local_batch": 8}}, "/progress/elapsed_s"),
        ({"progress": {"epochs_done": 1, "elapsed_s": 1, "gpu": "t4", "market": "spot", "workers": 2, "local_batch": 8, "extra": 1}}, "/progress/extra"),
        ({"margin": 1.5}, "/margin"),
        ({"deadline_s": 0}, "/deadline_s"),  # a deadline of 0 is bad input; one already passed is not
        ({"workers": [4]}, "/workers"),  # a recommend field replan does not take
        ({"budget": -5}, "/budget"),
        ({"lr_rule": "cubic"}, "/lr_rule"),
        ({"progress": dict(REPLAN_REQUEST["progress"], spent=-1)}, "/progress/spent"),
        # a job on spot with no cluster file: the answer was "switch market", from nothing
        ({"cluster": None}, "/cluster"),
    ],
)
def test_bad_replan_requests_point_at_the_value(change, path):
    request = dict(copy.deepcopy(REPLAN_REQUEST), **change)
    with pytest.raises(RequestError) as info:
        parse_replan_request(request)
    assert info.value.path == path, (info.value.path, info.value.detail)


@pytest.mark.parametrize("name", ["replan-request.v1", "replan-response.v1"])
def test_replan_schemas_are_published_and_valid(name):
    published = json.loads((REPO / "docs" / "schema" / f"{name}.json").read_text())
    assert published == schema(name)
    jsonschema.Draft202012Validator.check_schema(published)


def test_replan_over_http(response_validator):
    pytest.importorskip("fastapi")
    pytest.importorskip("httpx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from fastapi.testclient import TestClient
    from cotune.serve import create_app

    client = TestClient(create_app())
    r = client.post("/v1/replan", json=REPLAN_REQUEST)
    assert r.status_code == 200, r.text
    _validator("replan-response.v1").validate(r.json())
    assert without_timing(r.json()) == without_timing(replan_request(copy.deepcopy(REPLAN_REQUEST)))
    bad = client.post("/v1/replan", json=dict(REPLAN_REQUEST, progress={"gpu": "t4"}))
    assert bad.status_code == 422 and bad.json()["error"]["path"].startswith("/progress/")
    r = client.post("/v1/recommend", json=SPOT_REQUEST)
    assert r.status_code == 200 and r.json()["spot"] is not None
    paths = client.get("/openapi.json").json()["paths"]
    assert "/v1/replan" in paths and "/v1/recommend" in paths


def test_k8s_accepts_the_cluster_top_and_prints_json(cluster_file):
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["k8s", EXAMPLE, "--target", "0.94", "--deadline", "30m", "--cluster", str(cluster_file), "--top", "2",
                     "--json", "--image", "ghcr.io/me/train:1", "--command", "torchrun train.py", "--quiet"])
    assert code == 0
    doc = json.loads(buf.getvalue())
    assert doc["kind"] == "List" and [o["kind"] for o in doc["items"]] == ["PodGroup", "PyTorchJob"]
    assert "(spot)" in doc["items"][-1]["metadata"]["annotations"]["cotune.dev/plan"] or "(mixed)" in doc["items"][-1]["metadata"]["annotations"]["cotune.dev/plan"]


def test_a_spot_plan_rendered_without_a_node_selector_is_warned_about():
    # Its cost assumes spot servers; nothing in the manifest sent the pods to spot nodes.
    from cotune.k8s import JobOptions, manifest_warnings, render_manifests

    doc = recommend_request(copy.deepcopy(SPOT_REQUEST))
    assert doc["plan"]["market"] in ("spot", "mixed")
    bare = JobOptions(name="train-1", image="ghcr.io/me/train:1", command=("torchrun", "train.py"), gang="none")
    render_manifests(doc, bare)
    (line,) = manifest_warnings(doc, bare)
    assert line.startswith("warning: the plan is priced on spot") and "--node-selector" in line
    placed = JobOptions(name="train-1", image="ghcr.io/me/train:1", command=("torchrun", "train.py"), gang="none",
                        node_selector={"cloud.google.com/gke-spot": "true"})
    assert manifest_warnings(doc, placed) == []
    on_demand = recommend_request({"profile": EXAMPLE, "target": 0.94, "deadline_s": 1800})
    assert manifest_warnings(on_demand, bare) == []


@pytest.mark.parametrize("change, path", [
    (dict(progress={**REPLAN_REQUEST["progress"], "gpu": "a100"}), "/progress/gpu"),
    (dict(progress={**REPLAN_REQUEST["progress"], "workers": 10**9}), "/progress/workers"),
    (dict(progress={**REPLAN_REQUEST["progress"], "workers_added": 10**6}), "/progress/workers_added"),
    (dict(job="j2"), "/job"),
    (dict(prices={"v100": 1.0}), "/prices/v100"),
    (dict(gpus_per_host=8), "/gpus_per_host"),
])
def test_a_replan_error_points_at_its_value(change, path):
    # Each answered 422 with "path": null.
    with pytest.raises(RequestError) as err:
        replan_request(dict(copy.deepcopy(REPLAN_REQUEST), **change))
    assert err.value.status == 422 and err.value.path == path, (err.value, err.value.path)


def test_a_cluster_without_the_jobs_gpu_points_at_the_cluster():
    # It answered 422 with "path": null and "/cluster:" only inside the message.
    v100 = {"version": 1, "gpus_per_host": 4, "gpu": {"v100": {"on_demand": 8, "on_demand_price_per_hour": 3.06}}}
    body = dict(copy.deepcopy(REPLAN_REQUEST), cluster=v100)
    body["progress"]["market"] = "on_demand"
    with pytest.raises(RequestError) as info:
        replan_request(body)
    assert info.value.path == "/cluster" and info.value.status == 422
    assert info.value.detail.startswith("gpu 't4', which the job runs on, is not in the cluster (it lists v100)")
