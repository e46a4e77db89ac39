"""Manifests from ``cotune k8s`` validate against the published CRD schemas (vendored,
see data/k8s/NOTICE.md), tightened to reject unknown fields, and follow the plan."""

from __future__ import annotations

import copy
import io
import json
import re
from contextlib import redirect_stdout
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_helpers import BASE_REQUEST, closed

from cotune.api import recommend_request
from cotune.cli import main
from cotune.errors import InfeasibleError, InputError
from cotune.k8s import JobOptions, layout_for, manifest_warnings, render_manifests

DATA = Path(__file__).parent / "data" / "k8s"
_QUANTITY = re.compile(r"^[0-9]+(\.[0-9]+)?([KMGTPE]i?|m)?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


@lru_cache(maxsize=None)
def _validator(kind: str):
    name = {"PyTorchJob": "pytorchjob.kubeflow.org.v1.json", "PodGroup": "podgroup.scheduling.volcano.sh.v1beta1.json"}[kind]
    return jsonschema.Draft7Validator(closed(json.loads((DATA / name).read_text())))


def _check(manifest: dict) -> None:
    _validator(manifest["kind"]).validate(manifest)
    # What the schema cannot say: names, label values, resource quantities.
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", manifest["metadata"]["name"])
    for value in manifest["metadata"].get("labels", {}).values():
        assert len(value) <= 63 and _LABEL_VALUE.match(value)
    text = json.dumps(manifest)
    for q in re.findall(r'"nvidia.com/gpu": "?([^",}]+)"?', text):
        assert _QUANTITY.match(q.strip()), q


@lru_cache(maxsize=None)
def _doc(deadline_s: float, workers: tuple[int, ...] | None = None) -> str:
    req = dict(copy.deepcopy(BASE_REQUEST), deadline_s=deadline_s)
    if workers:
        req["workers"] = list(workers)
    return json.dumps(recommend_request(req))


def _pods(job: dict) -> list[dict]:
    return list(job["spec"]["pytorchReplicaSpecs"].values())


@pytest.mark.parametrize("gang", ["volcano", "kueue", "none"])
@pytest.mark.parametrize("elastic", [True, False])
@pytest.mark.parametrize(("deadline_s", "workers"), [(1800, None), (600, (7, 8, 9)), (3600, (6,))])
def test_manifests_validate_and_follow_the_plan(gang, elastic, deadline_s, workers):
    doc = json.loads(_doc(deadline_s, workers))
    assert doc["status"] == "ok"
    plan = doc["plan"]
    out = render_manifests(doc, JobOptions(name="train-1", image="ghcr.io/me/train:1", gang=gang, elastic=elastic, command=("torchrun", "train.py")))
    for m in out:
        _check(m)
    job = out[-1]
    assert job["kind"] == "PyTorchJob"
    specs = job["spec"]["pytorchReplicaSpecs"]
    per_pod = int(job["spec"]["nprocPerNode"])
    gpus = sum(s["replicas"] * s["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] for s in specs.values())
    assert gpus == plan["workers"]  # the job asks for exactly the planned GPUs
    for s in specs.values():
        env = {e["name"]: e["value"] for e in s["template"]["spec"]["containers"][0]["env"]}
        assert env["COTUNE_LOCAL_BATCH"] == str(plan["local_batch"])
    lay = layout_for(plan, elastic=elastic)
    if lay.exact_hosts:
        assert sum(s["replicas"] for s in specs.values()) == plan["hosts"] and per_pod == plan["workers_per_host"][0]
    else:
        aff = specs[next(iter(specs))]["template"]["spec"]["affinity"]["podAffinity"]
        assert aff["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    if "elasticPolicy" in job["spec"]:
        ep = job["spec"]["elasticPolicy"]
        assert elastic and set(specs) == {"Worker"}
        assert plan["elastic"]["min_workers"] <= ep["minReplicas"] * per_pod <= plan["workers"] <= ep["maxReplicas"] * per_pod <= plan["elastic"]["max_workers"]
    else:
        assert "Master" in specs and specs["Master"]["replicas"] == 1
    if gang == "volcano":
        pg = out[0]
        assert pg["kind"] == "PodGroup" and pg["spec"]["minMember"] == job["spec"]["runPolicy"]["schedulingPolicy"]["minAvailable"]
        assert int(pg["spec"]["minResources"]["nvidia.com/gpu"]) == pg["spec"]["minMember"] * per_pod
        assert all(s["template"]["spec"]["schedulerName"] == "volcano" for s in specs.values())
    elif gang == "kueue":
        assert len(out) == 1 and job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "default"
    else:
        assert len(out) == 1 and "schedulingPolicy" not in job["spec"]["runPolicy"]


def test_schema_catches_a_typo():
    doc = json.loads(_doc(1800))
    job = render_manifests(doc, JobOptions(name="t", image="i"))[-1]
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["replica"] = 2
    with pytest.raises(jsonschema.ValidationError):
        _check(job)


def test_infeasible_and_bad_names_are_errors():
    with pytest.raises(InfeasibleError):
        render_manifests(json.loads(_doc(5)), JobOptions(name="t", image="i"))
    for bad in ("Train", "-x", "a" * 51, "a_b"):
        with pytest.raises(InputError):
            JobOptions(name=bad, image="i")


@pytest.mark.parametrize("image", [
    "train", "python:3.11-slim", "ghcr.io/me/train:1.0", "nvcr.io/nvidia/pytorch:24.01-py3", "localhost:5000/a/b:latest",
    "registry.example.com:5000/a_b/c__d/e-f:v1.2", "me/train@sha256:" + "0" * 64, "me/train:TAG_ok.1", "[::1]:5000/img",
])
def test_image_references_the_runtimes_parse_are_taken(image):
    assert JobOptions(name="t", image=image).image == image


@pytest.mark.parametrize(("image", "needle"), [
    # kubectl applied these; every pod then failed to start with InvalidImageName.
    ("me/Train:1", "the repository path is lower case"),
    ("ghcr.io/Me/train", "the repository path is lower case"),
    ("MyOrg/train:1", "'MyOrg' would be read as a registry host, and a repository path is lower case: write 'myorg/train:1'"),
    ("img:", "[registry[:port]/]path[:tag]"),
    ("a//b", "[registry[:port]/]path[:tag]"),
    ("me/train:-x", "[registry[:port]/]path[:tag]"),
    ("me/train:" + "t" * 129, "a tag is at most 128 characters"),
    ("me/train:tä", "a tag is ASCII letters, digits"),  # Python's \w took it; the runtimes do not
    ("me/train:١", "a tag is ASCII letters, digits"),  # an Arabic-Indic digit
    ("r.io/" + "x" * 300, "at most 255 characters"),
    ("me/train:1\nkind: Secret", "no spaces or control characters"),
])
def test_an_image_reference_the_runtimes_refuse_is_named_with_the_rule(image, needle):
    with pytest.raises(InputError) as info:
        JobOptions(name="t", image=image)
    assert needle in str(info.value) and "\n" not in str(info.value), str(info.value)


@settings(max_examples=200, deadline=None)
@given(gph=st.integers(1, 8), workers=st.integers(1, 64), data=st.data())
def test_layout_invariants(gph, workers, data):
    from cotune.solver import balanced_hosts

    hosts = data.draw(st.integers(-(-workers // gph), workers))
    lo = data.draw(st.integers(1, workers))
    hi = data.draw(st.integers(workers, 128))
    plan = {"workers": workers, "hosts": hosts, "gpus_per_host": gph, "workers_per_host": list(balanced_hosts(workers=workers, hosts=hosts)),
            "elastic": {"min_workers": lo, "max_workers": hi}}
    lay = layout_for(plan)
    assert lay.pods * lay.gpus_per_pod == workers
    assert lo <= lay.min_pods * lay.gpus_per_pod and lay.max_pods * lay.gpus_per_pod <= hi
    assert lay.min_pods <= lay.pods <= lay.max_pods
    if lay.exact_hosts:
        assert lay.pods == hosts and lay.gpus_per_pod <= max(plan["workers_per_host"])


def _cli(*argv: str) -> tuple[int, str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(list(argv))
    return code, buf.getvalue()


def test_cli_prints_valid_yaml():
    code, out = _cli("k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--price", "t4=0.526",
                     "--gang", "volcano", "--name", "cifar", "--command", "torchrun train.py")
    assert code == 0
    docs = list(yaml.safe_load_all(out))
    assert [d["kind"] for d in docs] == ["PodGroup", "PyTorchJob"]
    for d in docs:
        _check(d)
    assert docs[1]["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["command"] == ["torchrun", "train.py"]


def test_the_words_after_a_double_dash_are_the_container_command_word_for_word(capsys):
    # As kubectl run and torchrun take a command; --command 'x y' needs shell quoting inside
    # quoting, and `-- python train.py` was refused as "unrecognized arguments".
    code, out = _cli("k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--image", "ghcr.io/me/t:1",
                     "--", "torchrun", "train.py", "--lr", "0.1 x", "--", "--json")
    assert code == 0
    (job,) = [d for d in yaml.safe_load_all(out) if d["kind"] == "PyTorchJob"]
    _check(job)
    for replica in _pods(job):
        assert replica["template"]["spec"]["containers"][0]["command"] == [
            "torchrun", "train.py", "--lr", "0.1 x", "--", "--json"]
    code, out = _cli("k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--command", "python t.py",
                     "--", "python", "t.py")
    assert code == 2 and out == ""
    assert capsys.readouterr().err == ("cotune: the container command is given twice, as --command and after '--': "
                                       "keep one\n")
    code, out = _cli("k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--")
    assert code == 2 and "nothing after '--'" in capsys.readouterr().err


def test_cli_infeasible_prints_nothing(capsys):
    code = main(["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "5s"])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "" and captured.err.startswith("cotune: ")


SPOT_LABEL = "kubernetes.azure.com/scalesetpriority"


def test_tolerations_reach_every_pytorchjob_pod_and_validate():
    doc = json.loads(_doc(1800))
    out = render_manifests(doc, JobOptions(name="t", image="i", node_selector={SPOT_LABEL: "spot"},
                                           tolerations=(f"{SPOT_LABEL}=spot:NoSchedule", "dedicated")))
    for manifest in out:
        _check(manifest)
    (job,) = [m for m in out if m["kind"] == "PyTorchJob"]
    for replica in _pods(job):
        assert replica["template"]["spec"]["tolerations"] == [
            {"key": SPOT_LABEL, "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
            {"key": "dedicated", "operator": "Exists"}]


@pytest.mark.parametrize(("toleration", "needle"), [
    (":NoSchedule", "without a key would tolerate every taint"),
    ("a=b:Sometimes", "effect must be one of NoSchedule, PreferNoSchedule, NoExecute"),
    ("a=b c", "not a valid label value"),
    ("bad key", "not a valid label key"),
    ({"key": "a", "operator": "Exists", "value": "b"}, "operator Exists takes no value"),
    ({"key": "a", "operator": "In"}, "operator must be Equal or Exists"),
    ({"key": "a", "tolerationSeconds": 5}, "give KEY[=VALUE][:EFFECT]"),
])
def test_a_bad_toleration_is_refused_with_the_rule(toleration, needle):
    with pytest.raises(InputError) as info:
        JobOptions(name="t", image="i", tolerations=(toleration,))
    assert needle in str(info.value), str(info.value)


def test_a_selector_for_tainted_spot_nodes_without_its_toleration_is_warned_about(capsys):
    argv = ["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--name", "t", "--image", "i",
            "--command", "torchrun train.py", "--node-selector", f"{SPOT_LABEL}=spot"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert f"add --toleration {SPOT_LABEL}=spot:NoSchedule" in err and "stay Pending" in err, err
    assert main([*argv, "--toleration", f"{SPOT_LABEL}=spot:NoSchedule"]) == 0
    out, err = capsys.readouterr()
    assert "stay Pending" not in err and "tolerations:" in out


V100_LABEL = {"nvidia.com/gpu.product": "Tesla-V100-SXM2-16GB"}


@lru_cache(maxsize=None)
def _two_type_doc(gpu: str) -> str:
    # An answer that weighed t4 and v100 and chose `gpu` (t4 dear, or v100 dear).
    from _helpers import synthetic_records

    prices = {"t4": 0.5, "v100": 0.6} if gpu == "v100" else {"t4": 0.5, "v100": 9.0}
    return json.dumps(recommend_request({"schema_version": 1, "profile": {"records": synthetic_records(gpus=("t4", "v100"))},
                                         "target": 0.9, "deadline_s": 3600, "prices": prices,
                                         "gpus_per_host": {"v100": 8, "t4": 4}}))


def test_the_chosen_gpu_types_labels_reach_every_pod_and_validate():
    # A plan made for V100s among T4s and V100s had no node selector: its pods could start on T4 nodes.
    doc = json.loads(_two_type_doc("v100"))
    assert doc["plan"]["gpu"] == "v100"
    labels = {"V100": V100_LABEL, "t4": {"nvidia.com/gpu.product": "Tesla-T4"}}
    opts = JobOptions(name="t", image="i", command=("torchrun", "t.py"), node_selector={"pool": "gpu"}, gpu_labels=labels)
    out = render_manifests(doc, opts)
    for manifest in out:
        _check(manifest)
    (job,) = [m for m in out if m["kind"] == "PyTorchJob"]
    for replica in _pods(job):
        assert replica["template"]["spec"]["nodeSelector"] == {"pool": "gpu", **V100_LABEL}
    assert not any("nothing in the manifest sends its pods" in w for w in manifest_warnings(doc, opts))


def test_a_plan_among_several_gpu_types_without_their_labels_is_warned_about():
    doc = json.loads(_two_type_doc("t4"))
    assert doc["plan"]["gpu"] == "t4"
    said = manifest_warnings(doc, JobOptions(name="t", image="i", command=("x",)))
    assert any(w.startswith("warning: the plan is for t4 (the answer weighed v100 too), but nothing in the manifest "
                            "sends its pods to t4 nodes: add --gpu-label t4:KEY=VALUE") for w in said), said
    # a selector that names the type pins it too; a label given for another type only does not
    pinned = JobOptions(name="t", image="i", command=("x",), node_selector={"nvidia.com/gpu.product": "Tesla-T4"})
    assert not any("nothing in the manifest sends" in w for w in manifest_warnings(doc, pinned))
    other = JobOptions(name="t", image="i", command=("x",), gpu_labels={"v100": V100_LABEL})
    assert any("sends its pods to t4 nodes" in w for w in manifest_warnings(doc, other))
    # an answer of one type only (the bundled T4 profile) needs no such label
    assert not any("nothing in the manifest sends" in w
                   for w in manifest_warnings(json.loads(_doc(1800)), JobOptions(name="t", image="i", command=("x",))))


def test_the_answer_names_every_type_it_searched_and_the_warning_reads_them():
    # The warning knew only the types in the answer's rows: a type searched but never among
    # the runner-ups or the frontier (dominated everywhere) left a plan with no label unwarned.
    doc = json.loads(_two_type_doc("t4"))
    assert doc["gpus"] == ["t4", "v100"]
    for key in ("runner_ups", "pareto"):
        doc[key] = [row for row in doc[key] if row["gpu"] == "t4"]
    said = manifest_warnings(doc, JobOptions(name="t", image="i", command=("x",)))
    assert any("the plan is for t4 (the answer weighed v100 too)" in w for w in said), said
    del doc["gpus"]  # an answer saved before the field: only its rows tell
    assert not any("nothing in the manifest sends" in w for w in manifest_warnings(doc, JobOptions(name="t", image="i", command=("x",))))


@pytest.mark.parametrize("edit", [{"cluster": True}, {"cluster": {"gpus": 7}}, {"runner_ups": 3}, {"pareto": "t4"},
                                  {"gpus": "v100"}, {"gpus": [1, None]}, {"stay": ["t4"]}])
def test_a_hand_edited_answer_of_odd_types_still_renders_and_warns(edit):
    # 'cluster': true in a saved answer was an internal error in the GPU-type warning (the CLI fuzz).
    doc = {**json.loads(_two_type_doc("t4")), **edit}
    said = manifest_warnings(doc, JobOptions(name="t", image="i", command=("x",)))
    assert any("the plan is for t4 (the answer weighed v100 too)" in w for w in said), said


def test_a_gpu_label_that_contradicts_the_node_selector_is_refused():
    doc = json.loads(_two_type_doc("v100"))
    opts = JobOptions(name="t", image="i", node_selector={"nvidia.com/gpu.product": "Tesla-T4"}, gpu_labels={"v100": V100_LABEL})
    with pytest.raises(InputError, match=r"sets nvidia.com/gpu.product=Tesla-T4 and the gpu label of v100 .*drop one of them"):
        render_manifests(doc, opts)


@pytest.mark.parametrize("given, needle", [
    (["--gpu-label", "nvidia.com/gpu.product=Tesla-T4"], "expected GPU:KEY=VALUE"),
    (["--gpu-label", "t4:"], "expected KEY=VALUE"),
    (["--gpu-label", "t4:a=b", "--gpu-label", "T4:a=c"], "gives 'a' twice"),
    (["--gpu-label", "t4:bad key=x"], "not a valid label key"),
])
def test_a_bad_gpu_label_is_one_line_exit_2(capsys, given, needle):
    rc = main(["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--image", "i", *given])
    err = capsys.readouterr().err
    assert rc == 2 and needle in err and err.count("\n") == 1, err


def test_a_plan_spread_over_hosts_keeps_one_pod_a_node_and_validates():
    # Six workers planned as [2, 2, 2] on 4-GPU servers got a preferred podAffinity that
    # packed them as [4, 2]: another layout than the one timed and priced.
    doc = recommend_request(dict(copy.deepcopy(BASE_REQUEST), workers=[6], hosts="any"))
    assert doc["plan"]["workers_per_host"] == [2, 2, 2] and doc["plan"]["gpus_per_host"] == 4
    out = render_manifests(doc, JobOptions(name="spread", image="ghcr.io/me/train:1", command=("torchrun", "t.py")))
    for manifest in out:
        _check(manifest)
    (job,) = [m for m in out if m["kind"] == "PyTorchJob"]
    assert sum(replica["replicas"] for replica in _pods(job)) == 3
    for replica in _pods(job):
        assert replica["template"]["spec"]["affinity"] == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"cotune.dev/job": "spread"}}, "topologyKey": "kubernetes.io/hostname"}]}}


@pytest.mark.parametrize(("toleration", "silenced"), [
    (f"{SPOT_LABEL}=on-demand", False),
    (f"{SPOT_LABEL}=spot:NoExecute", False),
    (f"{SPOT_LABEL}:PreferNoSchedule", False),
    (f"{SPOT_LABEL}=spot:NoSchedule", True),
    (f"{SPOT_LABEL}=spot", True),
    (SPOT_LABEL, True),
    (f"{SPOT_LABEL}:NoSchedule", True),
])
def test_only_a_toleration_that_matches_the_spot_taint_silences_its_warning(toleration, silenced):
    # The key alone silenced it: KEY=on-demand or KEY=spot:NoExecute leaves the pods Pending.
    doc = json.loads(_doc(1800))
    opts = JobOptions(name="t", image="i", command=("x",), node_selector={SPOT_LABEL: "spot"}, tolerations=(toleration,))
    warned = any("stay Pending" in w for w in manifest_warnings(doc, opts))
    assert warned is not silenced


# 16 workers on 8-GPU hosts, spread on purpose as [3, 3, 3, 3, 2, 2]: cotune predicts it
# faster and likelier to succeed than the packed [8, 8].
UNEVEN_SPREAD = {"profile": "imagenet-resnet50", "target": 0.7, "max_workers": 32, "gpus_per_host": 8,
                 "prices": {"t4": 0.526}, "deadline_s": 20000, "workers": [16], "hosts": "any"}


@lru_cache(maxsize=None)
def _uneven_spread_doc() -> str:
    doc = recommend_request(UNEVEN_SPREAD)
    assert doc["plan"]["workers_per_host"] == [3, 3, 3, 3, 2, 2]
    return json.dumps(doc)


def test_an_uneven_spread_is_spread_over_nodes_not_packed_and_validates():
    # Its 16 one-GPU pods got a preferred podAffinity that packed them onto 2 nodes.
    out = render_manifests(json.loads(_uneven_spread_doc()), JobOptions(name="spread", image="i", command=("x",)))
    for manifest in out:
        _check(manifest)
    (job,) = [m for m in out if m["kind"] == "PyTorchJob"]
    for replica in _pods(job):
        spec = replica["template"]["spec"]
        assert "affinity" not in spec
        assert spec["topologySpreadConstraints"] == [{
            "maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"cotune.dev/job": "spread"}}}]


@pytest.mark.parametrize(("pair", "other", "own"), [
    (("a10", "a100"), "NVIDIA-A100-SXM4-80GB", "NVIDIA-A10"),
    (("l4", "l40s"), "NVIDIA-L40S", "NVIDIA-L4"),
])
def test_only_a_selector_naming_the_plans_gpu_as_a_word_silences_the_gpu_warning(pair, other, own):
    # "a10" in "nvidia-a100-sxm4-80gb" (and "l4" in "nvidia-l40s") silenced the warning for a
    # plan made for A10s (L4s): its pods were sent to another type's nodes, unwarned.
    from _helpers import synthetic_records

    doc = recommend_request({"profile": {"records": synthetic_records(gpus=pair)}, "target": 0.9, "max_workers": 8,
                             "prices": {pair[0]: 0.5, pair[1]: 5.0}})
    assert doc["plan"]["gpu"] == pair[0]

    def warned(product: str) -> bool:
        opts = JobOptions(name="j", image="i", command=("x",), node_selector={"nvidia.com/gpu.product": product})
        return any(f"the plan is for {pair[0]} " in w for w in manifest_warnings(doc, opts))

    assert warned(other) and not warned(own)


# --- a plan profiled on CPU (cotune profile --device cpu: gpu "cpu") ----------------------


@lru_cache(maxsize=None)
def _cpu_doc() -> str:
    from _helpers import synthetic_records

    doc = recommend_request({"profile": {"records": synthetic_records(gpus=("cpu",))}, "target": 0.9, "max_workers": 8,
                             "prices": {"cpu": 0.05}})
    assert doc["status"] == "ok" and doc["plan"]["gpu"] == "cpu"
    return json.dumps(doc)


@pytest.mark.parametrize("elastic", [True, False])
def test_a_cpu_plans_pytorchjob_and_podgroup_request_no_gpu_and_validate(elastic):
    # Every pod asked for nvidia.com/gpu: 1, and the gang waited for GPUs, for workers that run on cores.
    out = render_manifests(json.loads(_cpu_doc()), JobOptions(name="cpu-1", image="i", command=("x",), elastic=elastic))
    for manifest in out:
        _check(manifest)
    assert "nvidia.com/gpu" not in json.dumps(out)
    (group,) = [m for m in out if m["kind"] == "PodGroup"]
    assert "minResources" not in group["spec"]
    (job,) = [m for m in out if m["kind"] == "PyTorchJob"]
    assert job["metadata"]["annotations"]["cotune.dev/resources"].startswith("cpu plan: no GPU requested")


def test_rendering_a_cpu_plan_warns_that_no_cpu_request_is_set():
    warnings = manifest_warnings(json.loads(_cpu_doc()), JobOptions(name="cpu-1", image="i", command=("x",)))
    assert any("the plan is for cpu workers" in w and "--cpu-threads" in w for w in warnings)
