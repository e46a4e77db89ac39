"""``cotune k8s --kind trainjob``: Kubeflow Trainer v2 TrainJobs validated against the
vendored CRD (``../shared/data/k8s-schemas/kubeflow-trainer-v2``, tag v2.3.0), and the
Kubernetes name and value rules every manifest follows (issue 13 item 3; issue 11 item 7)."""

from __future__ import annotations

import copy
import io
import json
import re
from contextlib import redirect_stderr, redirect_stdout
from functools import lru_cache

import jsonschema
import pytest
import yaml
from sched_helpers import BASE_REQUEST, REPO, closed

from cotune.api import recommend_request
from cotune.cli import main
from cotune.errors import InputError
from cotune.k8s import JobOptions, derive_name, job_name_max, layout_for, render_manifests

TRAINER_V2 = REPO.parent / "shared" / "data" / "k8s-schemas" / "kubeflow-trainer-v2"
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


@lru_cache(maxsize=None)
def _trainjob_validator() -> jsonschema.Draft7Validator:
    path = TRAINER_V2 / "trainer.kubeflow.org_trainjobs.yaml"
    if not path.is_file():
        pytest.skip(f"the vendored Trainer v2 CRDs are not beside the clone ({TRAINER_V2}): CI provides ../shared")
    crd = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    assert crd["spec"]["names"]["kind"] == "TrainJob"
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1alpha1")
    return jsonschema.Draft7Validator(closed(version["schema"]["openAPIV3Schema"]))


@lru_cache(maxsize=None)
def _doc(deadline_s: float, workers: tuple[int, ...] | None = None, gph: int = 4) -> str:
    req = dict(copy.deepcopy(BASE_REQUEST), deadline_s=deadline_s, gpus_per_host=gph)
    if workers:
        req["workers"] = list(workers)
    return json.dumps(recommend_request(req))


def _check(job: dict) -> None:
    _trainjob_validator().validate(job)
    assert _DNS_1035.match(job["metadata"]["name"]) and len(job["metadata"]["name"]) <= 50


@pytest.mark.parametrize("gang", ["volcano", "kueue", "none"])
@pytest.mark.parametrize(("deadline_s", "workers", "gph"), [(1800, None, 4), (600, (7, 8, 9), 4), (3600, (6,), 4), (1800, (3,), 1)])
def test_trainjob_validates_and_follows_the_plan(gang, deadline_s, workers, gph):
    doc = json.loads(_doc(deadline_s, workers, gph))
    plan = doc["plan"]
    out = render_manifests(doc, JobOptions(kind="trainjob", name="train-1", image="ghcr.io/me/train:1", gang=gang,
                                           command=("torchrun", "train.py"), node_selector={"nvidia.com/gpu.product": "Tesla-T4"}))
    assert len(out) == 1  # the runtime's podGroupPolicy makes any PodGroup
    job = out[0]
    _check(job)
    assert job["apiVersion"] == "trainer.kubeflow.org/v1alpha1" and job["kind"] == "TrainJob"
    assert job["spec"]["runtimeRef"] == {"apiGroup": "trainer.kubeflow.org", "kind": "ClusterTrainingRuntime", "name": "torch-distributed"}
    trainer = job["spec"]["trainer"]
    gpus_per_node = int(trainer["resourcesPerNode"]["limits"]["nvidia.com/gpu"])
    assert trainer["numNodes"] * trainer["numProcPerNode"] == plan["workers"]  # exactly the planned GPUs
    assert gpus_per_node == trainer["numProcPerNode"]
    assert trainer["image"] == "ghcr.io/me/train:1" and trainer["command"] == ["torchrun", "train.py"]
    env = {e["name"]: e["value"] for e in trainer["env"]}
    assert env["COTUNE_LOCAL_BATCH"] == str(plan["local_batch"]) and env["COTUNE_WORKERS"] == str(plan["workers"])
    lay = layout_for(plan, elastic=False)
    assert trainer["numNodes"] == lay.pods
    notes = job["metadata"]["annotations"]
    assert notes["cotune.dev/workers-range"] == f"{plan['elastic']['min_workers']}..{plan['elastic']['max_workers']}"
    pod = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.product": "Tesla-T4"}
    if not lay.exact_hosts and lay.pods > 1:
        assert pod["affinity"]["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    labels = job["metadata"]["labels"]
    if gang == "kueue":
        assert labels["kueue.x-k8s.io/queue-name"] == "default"
    elif gang == "volcano":
        assert notes["scheduling.volcano.sh/queue-name"] == "default" and "kueue.x-k8s.io/queue-name" not in labels
    else:
        assert "kueue.x-k8s.io/queue-name" not in labels and "scheduling.volcano.sh/queue-name" not in notes


def test_the_trainjob_schema_catches_a_typo():
    job = render_manifests(json.loads(_doc(1800)), JobOptions(kind="trainjob", name="t", image="i", command=("x",)))[0]
    job["spec"]["trainer"]["numNode"] = 2
    with pytest.raises(jsonschema.ValidationError):
        _check(job)


def test_cli_trainjob_yaml_and_json_agree():
    argv = ["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--price", "t4=0.526", "--kind", "trainjob",
            "--image", "ghcr.io/me/train:1", "--command", "torchrun train.py", "--gang", "kueue", "--quiet"]
    outs = []
    for extra in ([], ["--json"]):
        buf, err = io.StringIO(), io.StringIO()
        with redirect_stdout(buf), redirect_stderr(err):
            assert main(argv + extra) == 0
        assert err.getvalue() == ""  # image and command given: no warning
        outs.append(buf.getvalue())
    from_yaml = list(yaml.safe_load_all(outs[0]))
    from_json = json.loads(outs[1])["items"]
    assert from_yaml == from_json and from_yaml[0]["kind"] == "TrainJob"
    _check(from_yaml[0])


def test_without_image_and_command_the_cli_warns_loudly():
    buf, err = io.StringIO(), io.StringIO()
    with redirect_stdout(buf), redirect_stderr(err):
        code = main(["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--kind", "trainjob", "--quiet"])
    assert code == 0
    lines = err.getvalue().splitlines()
    assert any("no --image" in line for line in lines) and any("no --command" in line for line in lines)
    job = yaml.safe_load(buf.getvalue())
    assert "image" not in job["spec"]["trainer"] and "command" not in job["spec"]["trainer"]  # the runtime's, said aloud
    _check(job)


@pytest.mark.parametrize("name", ["1job", "Job", "-x", "a" * 51, "a_b", "job-", "x\ny", "job\n"])
def test_names_kubernetes_refuses_are_clear_errors(name):
    with pytest.raises(InputError, match="DNS-1035"):
        JobOptions(name=name)
    buf, err = io.StringIO(), io.StringIO()
    with redirect_stdout(buf), redirect_stderr(err):
        code = main(["k8s", "cifar10-resnet18", "--target", "0.94", f"--name={name}"])
    assert code == 2 and buf.getvalue() == "" and err.getvalue().count("\n") == 1 and "DNS-1035" in err.getvalue()


@pytest.mark.parametrize(("workload", "expected"), [("3d-unet", "job-3d-unet"), ("ResNet_50 (ImageNet)", "resnet-50-imagenet"),
                                                    ("", "cotune-job"), ("\x1b]0;x\x07", "job-0-x"), ("9" * 400, "job-" + "9" * 46)])
def test_derived_names_are_valid(workload, expected):
    name = derive_name(workload)
    assert name == expected and _DNS_1035.match(name) and len(name) <= 50


def test_a_huge_or_hostile_workload_name_is_not_put_raw_into_annotations():
    doc = json.loads(_doc(1800))
    doc["workload"] = "w\x1b[2J" + "x" * 300_000
    for kind in ("trainjob", "pytorchjob"):
        name = derive_name(doc["workload"], limit=job_name_max(kind=kind))  # a TrainJob's limit is shorter
        job = render_manifests(doc, JobOptions(kind=kind, name=name, image="i"))[-1]
        text = job["metadata"]["annotations"]["cotune.dev/workload"]
        assert len(text) <= 200 and "\x1b" not in text and _DNS_1035.match(job["metadata"]["name"])


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"image": "ghcr.io/me/train:1\nkind: Secret"}, "container image"),
        ({"image": "has space"}, "container image"),
        ({"node_selector": {"bad key!": "x"}}, "label key"),
        ({"node_selector": {"nvidia.com/gpu.product": "Tesla T4"}}, "label value"),
        ({"node_selector": {"a" * 64: "x"}}, "label key"),
        ({"gpu_resource": "nvidia.com/"}, "label key"),
        ({"kind": "mpijob"}, "kind"),
        # a trailing newline: '$' matches before it, so each check matches the whole value
        ({"image": "img:1\n"}, "container image"),
        ({"namespace": "ns\n"}, "namespace"),
        ({"queue": "q\n"}, "queue"),
        ({"gpu_resource": "nvidia.com/gpu\n"}, "label key"),
        ({"node_selector": {"zone\n": "a"}}, "label key"),
        ({"node_selector": {"zone": "a\n"}}, "label value"),
    ],
)
def test_bad_manifest_values_are_refused(options, words):
    with pytest.raises(InputError, match=words):
        JobOptions(name="ok", **options)


def test_cli_refuses_a_newline_in_the_image_and_a_bad_node_selector():
    for extra in (["--image", "a\nb"], ["--node-selector", "zone=us east"]):
        buf, err = io.StringIO(), io.StringIO()
        with redirect_stdout(buf), redirect_stderr(err):
            code = main(["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--quiet", *extra])
        assert code == 2 and buf.getvalue() == "" and err.getvalue().count("\n") == 1


@pytest.mark.parametrize("kind", ["trainjob", "pytorchjob"])
def test_the_manifest_carries_the_plans_interval_and_chance_not_only_its_median(kind):
    # Annotations held the median time and cost alone: a scheduler reading the job could not
    # tell how sure the plan was.
    doc = json.loads(_doc(1800))
    out = render_manifests(doc, JobOptions(kind=kind, name="train-1", image="ghcr.io/me/train:1", gang="none",
                                           command=("torchrun", "train.py")))
    job = next(o for o in out if o["kind"] in ("TrainJob", "PyTorchJob"))
    notes = job["metadata"]["annotations"]
    rec = doc["recommendation"]
    lo, hi = rec["time_interval_s"]
    assert notes["cotune.dev/predicted-time-interval-s"] == f"{lo:.0f}..{hi:.0f} (90%)"
    assert float(notes["cotune.dev/p-success"]) == pytest.approx(rec["p_success"], rel=1e-5)
    assert "cotune.dev/budget" not in notes and "cotune.dev/confidence" not in notes  # none asked


def test_the_manifest_names_the_budget_and_confidence_its_chance_was_judged_by():
    req = dict(copy.deepcopy(BASE_REQUEST), deadline_s=1800, budget=0.5, confidence=0.8)
    doc = recommend_request(req)
    assert doc["status"] == "ok"
    out = render_manifests(doc, JobOptions(kind="trainjob", name="train-1", image="ghcr.io/me/train:1", gang="none",
                                           command=("torchrun", "train.py")))
    notes = next(o for o in out if o["kind"] == "TrainJob")["metadata"]["annotations"]
    assert notes["cotune.dev/budget"] == f"0.5 {doc['cost_unit']}" and notes["cotune.dev/confidence"] == "0.8"
    assert float(notes["cotune.dev/p-success"]) >= 0.8


def test_tolerations_reach_the_trainjobs_pods_and_validate():
    # AKS taints its spot nodes: without a toleration the pods of a spot plan stay Pending.
    doc = json.loads(_doc(1800))
    spot = "kubernetes.azure.com/scalesetpriority"
    opts = JobOptions(kind="trainjob", name="train-1", image="ghcr.io/me/train:1", command=("torchrun", "train.py"),
                      node_selector={spot: "spot"}, tolerations=(f"{spot}=spot:NoSchedule", {"key": "gpu", "operator": "Exists"}))
    (job,) = render_manifests(doc, opts)
    _check(job)
    (patch,) = job["spec"]["runtimePatches"]
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["tolerations"] == [{"key": spot, "operator": "Equal", "value": "spot", "effect": "NoSchedule"},
                                  {"key": "gpu", "operator": "Exists"}]


@pytest.mark.parametrize(("options", "needle"), [
    # a string was read as a sequence of its characters: t, o, r, c, h, ...
    ({"command": "torchrun train.py"}, "command must be a sequence of words, e.g. ('torchrun', 'train.py'), got the text"),
    ({"command": [1, 2]}, "command word 0 is 1, not text"),
    ({"gpu_resource": None}, "gpu resource null must be text naming an extended resource, e.g. nvidia.com/gpu"),
    ({"max_restarts": "3"}, "max_restarts must be a whole number >= 0, e.g. 3, got '3'"),
    ({"node_selector": [("a", "b")]}, "node_selector must map label keys to values"),
    ({"node_selector": {"a": 1}}, "node selector value 1 must be text"),
    ({"node_selector": {1: "a"}}, "node selector key 1 must be text"),
    ({"gpu_labels": {"v100": {"nvidia.com/gpu.product": 100}}}, "gpu label of v100 value 100 must be text"),
    ({"elastic": "no"}, "elastic must be True or False, got 'no'"),
])
def test_an_option_of_the_wrong_type_is_an_input_error_naming_it(options, needle):
    with pytest.raises(InputError) as info:
        JobOptions(name="ok", **options)
    assert needle in str(info.value) and "\n" not in str(info.value), str(info.value)


def test_a_command_as_a_list_of_words_is_kept_as_those_words():
    assert JobOptions(name="ok", command=["torchrun", "train.py"]).command == ("torchrun", "train.py")


def test_a_command_word_that_is_not_utf8_is_one_line_exit_2():
    # Bytes the locale cannot decode reach argv as lone surrogates, and were written as "\udcff".
    err = io.StringIO()
    with redirect_stdout(io.StringIO()) as out, redirect_stderr(err):
        code = main(["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--image", "i",
                     "--", "torchrun", "tr\udcffain.py"])
    assert code == 2 and out.getvalue() == "" and err.getvalue().count("\n") == 1
    assert "command word 1 ('tr\\udcffain.py') is not valid UTF-8 text" in err.getvalue(), err.getvalue()


@pytest.mark.parametrize("kind", ["trainjob", "pytorchjob"])
def test_the_annotations_never_round_a_chance_or_a_level_up_to_certainty(kind):
    # --interval 0.999 read "(100%)" and a P(success) of 0.9999996 read "1".
    doc = json.loads(_doc(1800))
    doc["interval"] = 0.999
    doc["recommendation"]["p_success"] = 0.9999996
    doc["constraints"]["confidence"] = 0.9999999
    out = render_manifests(doc, JobOptions(kind=kind, name="train-1", image="i", command=("x",), gang="none"))
    notes = next(o for o in out if o["kind"] in ("TrainJob", "PyTorchJob"))["metadata"]["annotations"]
    assert notes["cotune.dev/predicted-time-interval-s"].endswith(" (99.9%)")
    assert notes["cotune.dev/p-success"] == "0.9999996" and notes["cotune.dev/confidence"] == "0.9999999"


def test_a_trainjob_spread_over_hosts_keeps_one_pod_a_node_and_validates():
    # [2, 2, 2] on 4-GPU servers: the runtime patch carried a preferred podAffinity that packed them.
    doc = recommend_request(dict(copy.deepcopy(BASE_REQUEST), workers=[6], hosts="any"))
    assert doc["plan"]["workers_per_host"] == [2, 2, 2]
    (job,) = render_manifests(doc, JobOptions(kind="trainjob", name="spread", image="i", command=("x",), gang="kueue"))
    _check(job)
    assert job["spec"]["trainer"]["numNodes"] == 3 and job["spec"]["trainer"]["numProcPerNode"] == 2
    (patch,) = job["spec"]["runtimePatches"]
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["affinity"] == {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"cotune.dev/job": "spread"}}, "topologyKey": "kubernetes.io/hostname"}]}}


def test_numpy_values_from_a_data_frame_are_taken_as_the_values_they_are():
    # np.bool_(True) read "elastic must be True or False, got true"; np.int64(3) read
    # "max_restarts must be a whole number >= 0, e.g. 3, got 3".
    import numpy as np

    opts = JobOptions(name="ok", elastic=np.bool_(False), max_restarts=np.int64(3))
    assert opts.elastic is False and opts.max_restarts == 3 and type(opts.max_restarts) is int
    json.dumps({"restarts": opts.max_restarts})


def test_a_trainjobs_uneven_spread_is_a_soft_anti_affinity_not_packing_and_validates():
    # 16 workers planned as [3, 3, 3, 3, 2, 2] on 8-GPU hosts: the runtime patch packed the 16
    # one-GPU pods onto 2 nodes. Its pod spec takes no topologySpreadConstraints.
    doc = recommend_request({"profile": "imagenet-resnet50", "target": 0.7, "max_workers": 32, "gpus_per_host": 8,
                             "prices": {"t4": 0.526}, "deadline_s": 20000, "workers": [16], "hosts": "any"})
    assert doc["plan"]["workers_per_host"] == [3, 3, 3, 3, 2, 2]
    (job,) = render_manifests(doc, JobOptions(kind="trainjob", name="spread", image="i", command=("x",), gang="kueue"))
    _check(job)
    (patch,) = job["spec"]["runtimePatches"]
    pod = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    assert pod["affinity"] == {"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": {
        "labelSelector": {"matchLabels": {"cotune.dev/job": "spread"}}, "topologyKey": "kubernetes.io/hostname"}}]}}


def test_more_tolerations_than_the_trainjob_crd_allows_are_refused_in_one_line():
    # 129 tolerations gave a TrainJob that failed its own CRD schema (maxItems 128).
    many = tuple(f"taint-{i}" for i in range(129))
    with pytest.raises(InputError) as info:
        JobOptions(kind="trainjob", name="t", tolerations=many)
    assert "toleration count 129 is over the 128" in str(info.value) and "\n" not in str(info.value)
    (job,) = render_manifests(json.loads(_doc(1800)), JobOptions(kind="trainjob", name="t", image="i", command=("x",),
                                                                  tolerations=many[:128]))
    _check(job)


def test_a_cpu_plans_trainjob_requests_no_gpu_and_validates():
    # resourcesPerNode asked for nvidia.com/gpu for a plan whose workers run on cores.
    from _helpers import synthetic_records

    doc = recommend_request({"profile": {"records": synthetic_records(gpus=("cpu",))}, "target": 0.9, "max_workers": 8,
                             "prices": {"cpu": 0.05}})
    assert doc["plan"]["gpu"] == "cpu"
    job = render_manifests(doc, JobOptions(kind="trainjob", name="cpu-1", image="i", command=("x",)))[0]
    _check(job)
    assert "resourcesPerNode" not in job["spec"]["trainer"] and "nvidia.com/gpu" not in json.dumps(job)
    assert job["metadata"]["annotations"]["cotune.dev/resources"].startswith("cpu plan: no GPU requested")
