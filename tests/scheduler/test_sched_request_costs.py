"""The service's request path: what a request may cost before it is refused (spot plans
weighed by their cost, the count checked before the fit), and where its errors point."""

from __future__ import annotations

import copy
import json

import pytest
from sched_helpers import BASE_REQUEST, EXAMPLE, example_records

from cotune.api import LimitError, Limits, RequestError, clear_cache, error_document, recommend_request, replan_request

OFFER = {"on_demand": 16, "spot": 16, "on_demand_price_per_hour": 0.5, "spot_price_per_hour": 0.15,
         "revocation_rate_per_hour": 0.1, "replacement_delay_s": "3m"}
SPOT = {"profile": EXAMPLE, "target": 0.94, "deadline_s": 1800,
        "cluster": {"version": 1, "checkpoint": {"write_s": 30}, "gpu": {"t4": OFFER}}}
REPLAN = {"profile": EXAMPLE, "target": 0.94, "deadline_s": 3600,
          "progress": {"epochs_done": 20, "elapsed_s": 900, "gpu": "t4", "market": "on_demand", "workers": 4, "local_batch": 32}}
# A profile whose one probed batch ran out of memory.
ALL_OOM = [
    {"record": "workload", "name": "w", "dataset_size": 50000},
    {"record": "step", "gpu": "t4", "workers": 1, "local_batch": 32, "step_time_s": 0.05},
    {"record": "eval", "global_batch": 32, "epoch": 1, "metric": 0.5},
    {"record": "failure", "gpu": "t4", "workers": 1, "local_batch": 32, "failure": "oom"},
]


def _err(fn, request, **kw) -> RequestError:
    with pytest.raises(RequestError) as info:
        fn(copy.deepcopy(request), **kw)
    return info.value


# --- D1: a spot plan counts as what it costs --------------------------------------------------


def test_a_spot_space_is_refused_when_its_weighted_count_passes_the_limit():
    # 176 configurations: 528 rows counted one each (admitted before), 35,376 weighed.
    exc = _err(recommend_request, SPOT, limits=Limits(max_candidates=10_000))
    assert isinstance(exc, LimitError) and exc.code == "search_space_too_large"
    assert "counts as 100 candidates" in exc.detail and "35,376" in exc.detail


def test_the_admission_budget_is_given_the_weighted_count():
    from cotune.api import SPOT_ROW_WEIGHT, candidate_count, parse_request
    from cotune.profile import read_profile
    from cotune.examples import example_path

    seen: list[int] = []

    class Admit:
        def __init__(self, n: int) -> None:
            seen.append(n)

        def __enter__(self) -> None:
            return None

        def __exit__(self, *exc: object) -> None:
            return None

    recommend_request(copy.deepcopy(SPOT), admit=Admit)
    prof = read_profile(example_path(EXAMPLE))
    batches: dict[str, set[int]] = {}
    for step in prof.steps:
        batches.setdefault(step.gpu, set()).add(int(step.local_batch * step.accum_steps))
    configurations = candidate_count(parse_request(copy.deepcopy(SPOT)), batches, dataset_size=prof.workload.dataset_size)
    assert seen == [configurations * (1 + 2 * SPOT_ROW_WEIGHT)]


# --- D2: the count before the fit ----------------------------------------------------------


def _no_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    import cotune.models

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("fit_models ran for a request over the limit")

    clear_cache()
    monkeypatch.setattr(cotune.models, "fit_models", refuse)


def test_a_recommend_request_over_the_limit_is_refused_before_any_fit(monkeypatch):
    _no_fit(monkeypatch)
    exc = _err(recommend_request, dict(BASE_REQUEST, max_workers=100_000, hosts="any"))
    assert exc.code == "search_space_too_large"


def test_a_replan_request_over_the_limit_is_refused_before_any_fit(monkeypatch):
    _no_fit(monkeypatch)
    exc = _err(replan_request, dict(REPLAN, max_workers=100_000, hosts="any"))
    assert exc.code == "search_space_too_large"


# --- D3: every 422 has its pointer and code --------------------------------------------------


def test_a_cluster_without_a_profiled_gpu_is_invalid_cluster_at_cluster():
    exc = _err(recommend_request, dict(SPOT, cluster=dict(SPOT["cluster"], gpu={"v100": OFFER})))
    assert (exc.code, exc.path) == ("invalid_cluster", "/cluster")
    assert exc.detail.startswith("the cluster offers v100 but the profile has timing probes for t4")


def test_a_gpu_asked_for_that_the_cluster_lacks_is_invalid_cluster_at_cluster():
    exc = _err(recommend_request, dict(SPOT, gpus=["t4"], cluster=dict(SPOT["cluster"], gpu={"v100": OFFER})))
    assert (exc.code, exc.path) == ("invalid_cluster", "/cluster")
    assert "gpu 't4' is not in the cluster (it lists v100)" in exc.detail


def test_an_out_of_memory_at_micro_batch_one_on_the_only_gpu_type_is_invalid_profile():
    # No batch fits on the one profiled type: what is missing is a probe of another type.
    progress = dict(REPLAN["progress"], local_batch=1, out_of_memory=True)
    exc = _err(replan_request, dict(REPLAN, progress=progress))
    assert (exc.code, exc.path) == ("invalid_profile", "/profile")
    assert "no local batch fits in its memory (out of memory at local batch 1): probe another gpu type" in exc.detail


def test_a_profile_whose_every_probed_batch_ran_out_of_memory_is_invalid_profile():
    exc = _err(recommend_request, {"profile": {"records": ALL_OOM}, "target": 0.6})
    assert (exc.code, exc.path) == ("invalid_profile", "/profile")
    assert "probe a local batch of at most 31" in exc.detail


def test_local_batches_all_above_the_memory_limit_point_at_local_batches():
    exc = _err(recommend_request, {"profile": {"records": ALL_OOM}, "target": 0.6, "local_batches": [64]})
    assert (exc.code, exc.path) == ("invalid_request", "/local_batches")
    assert "of at most 31" in exc.detail


def test_a_bad_value_at_the_cluster_is_invalid_cluster_in_the_cli_json_document():
    from cotune._checks import BadValue

    doc = error_document(BadValue("no such gpu", where="/cluster"))
    assert doc["error"]["code"] == "invalid_cluster" and doc["error"]["path"] == "/cluster"


def test_a_spot_progress_without_a_cluster_is_invalid_cluster_in_the_api_as_in_error_document():
    import cotune

    progress = dict(REPLAN["progress"], market="spot")
    exc = _err(replan_request, dict(REPLAN, progress=progress))
    with pytest.raises(Exception) as direct:
        cotune.replan(EXAMPLE, target=0.94, deadline_s=3600, progress=progress)
    assert (exc.code, exc.path) == (error_document(direct.value)["error"]["code"], "/cluster") == ("invalid_cluster", "/cluster")


def test_a_cluster_that_is_no_object_is_invalid_cluster():
    exc = _err(recommend_request, dict(BASE_REQUEST, cluster=5))
    assert (exc.code, exc.path) == ("invalid_cluster", "/cluster")


def test_a_spot_request_under_a_limit_below_one_configuration_is_told_no_request_lever_helps():
    exc = _err(recommend_request, dict(SPOT, workers=[1], local_batches=[128]), limits=Limits(max_candidates=200))
    assert exc.code == "search_space_too_large"
    assert "answers no request with a 'cluster'" in exc.detail and "at least 201" in exc.detail
    assert "lower max_workers" not in exc.detail


def test_a_json_value_that_is_no_array_is_not_told_about_python_lists():
    exc = _err(recommend_request, dict(BASE_REQUEST, workers=5))
    assert (exc.path, exc.detail) == ("/workers", "must be an array, got 5")


# --- D4: Python callers' containers and limits ------------------------------------------------


def test_a_tuple_is_named_as_a_tuple_with_the_fix():
    exc = _err(recommend_request, dict(BASE_REQUEST, gpus=("t4",)))
    assert exc.path == "/gpus" and exc.detail == "must be an array (a Python list), got a tuple of 1 item: pass a list"


def test_limits_that_are_not_limits_are_one_input_error():
    from cotune.errors import InputError

    with pytest.raises(InputError, match=r"^limits must be a cotune\.api\.Limits, got an object of 1 field: pass Limits\("):
        recommend_request(copy.deepcopy(BASE_REQUEST), limits={"max_records": 1})


# --- a profiled GPU type the cluster lacks is not counted ---------------------------------------


def test_a_profiled_gpu_type_the_cluster_does_not_offer_is_not_counted_against_the_limit():
    # The solver leaves such a type out with a note; counting it (at the default cap) refused,
    # over HTTP, requests that the CLI and Python answer.
    from cotune.api import parse_request
    from cotune.api._service import _admitted_count
    from cotune.profile import parse_profile

    records = example_records()
    copies = [dict(r, gpu="v100") for r in records if r.get("record") == "step"]
    one = parse_profile([json.dumps(r) + "\n" for r in records])
    two = parse_profile([json.dumps(r) + "\n" for r in records + copies])
    assert set(two.gpus) == {"t4", "v100"}
    req = parse_request(dict(SPOT, hosts="any", max_workers=32))
    assert _admitted_count(req, two, Limits()) == _admitted_count(req, one, Limits())


# --- a GPU type whose every batch ran out of memory is left out, not fatal ----------------------


TWO_GPUS = [
    {"record": "workload", "name": "w", "dataset_size": 50000},
    {"record": "step", "gpu": "t4", "workers": 1, "local_batch": 32, "step_time_s": 0.05},
    {"record": "step", "gpu": "v100", "workers": 1, "local_batch": 32, "step_time_s": 0.02},
    {"record": "eval", "global_batch": 32, "epoch": 1, "metric": 0.5},
]


def _v100_oom_at(local_batch: int) -> list[dict]:
    return TWO_GPUS + [{"record": "failure", "gpu": "v100", "workers": 1, "local_batch": local_batch, "failure": "oom"}]


def test_a_gpu_type_whose_every_probed_batch_ran_out_of_memory_is_left_out_with_a_note():
    doc = recommend_request({"profile": {"records": _v100_oom_at(32)}, "target": 0.6})
    assert doc["gpus"] == ["t4"]
    assert any(n.startswith("v100: not considered:") and "probe a local batch of at most 31" in n for n in doc["notes"])


def test_a_gpu_type_out_of_memory_at_local_batch_one_is_said_to_fit_no_batch_not_told_to_probe_zero():
    doc = recommend_request({"profile": {"records": _v100_oom_at(1)}, "target": 0.6})
    note = next(n for n in doc["notes"] if n.startswith("v100: not considered:"))
    assert "no local batch fits in its memory" in note and "at most 0" not in note


def test_the_only_gpu_type_asked_for_without_a_batch_in_memory_is_refused_naming_it():
    exc = _err(recommend_request, {"profile": {"records": _v100_oom_at(1)}, "target": 0.6, "gpus": ["v100"]})
    assert (exc.code, exc.path) == ("invalid_profile", "/profile")
    assert "'v100'" in exc.detail and "no local batch fits" in exc.detail and "at most 0" not in exc.detail
