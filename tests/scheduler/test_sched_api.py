"""The plain-data API: one document shape, precise errors, limits, safe profile loading."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sched_helpers import BASE_REQUEST, EXAMPLE, example_records, without_timing

import cotune
from cotune.api import LimitError, Limits, RequestError, candidate_count, parse_request, recommend_request
from cotune.solver import SearchSpace, count_candidates, enumerate_candidates


def _err(request, **kw) -> RequestError:
    with pytest.raises(RequestError) as info:
        recommend_request(request, **kw)
    return info.value


@pytest.mark.slow
def test_document_is_recommendation_to_dict(response_validator):
    doc = recommend_request(copy.deepcopy(BASE_REQUEST))
    response_validator.validate(doc)
    kwargs = {k: v for k, v in BASE_REQUEST.items() if k != "profile"}
    rec = cotune.recommend(EXAMPLE, **kwargs)
    assert without_timing(doc) == without_timing(json.loads(json.dumps(rec.to_dict())))
    assert doc["status"] == "ok" and doc["schema_version"] == 1
    assert doc["plan"]["workers"] == doc["recommendation"]["workers"]


def test_inline_records_equal_example_name():
    inline = dict(BASE_REQUEST, profile={"records": example_records()})
    named = dict(BASE_REQUEST, profile={"example": EXAMPLE})
    assert without_timing(recommend_request(inline)) == without_timing(recommend_request(named))


def test_infeasible_is_an_answer_not_an_error(response_validator):
    doc = recommend_request(dict(BASE_REQUEST, target=0.999))
    response_validator.validate(doc)
    assert doc["status"] == "infeasible" and doc["recommendation"] is None and doc["plan"] is None
    assert doc["relax"] and "0.999" in doc["relax"][0]


def test_elastic_range_is_feasible_at_both_ends(cifar_models):
    doc = recommend_request(dict(BASE_REQUEST, deadline_s=3600))
    plan = doc["plan"]
    lo, hi = plan["elastic"]["min_workers"], plan["elastic"]["max_workers"]
    assert lo <= plan["workers"] <= hi
    models = cifar_models  # EXAMPLE's models, fitted once per session with the same defaults
    kwargs = {k: v for k, v in BASE_REQUEST.items() if k != "profile"} | {"deadline_s": 3600}
    for w in {lo, hi}:
        rec = cotune.recommend(EXAMPLE, models=models, **kwargs | {"workers": [w], "local_batches": [plan["local_batch"]]})
        assert rec.feasible, w
    for w in (lo - 1, hi + 1):  # just outside: infeasible, or outside the space
        if 1 <= w <= BASE_REQUEST["max_workers"]:
            rec = cotune.recommend(EXAMPLE, models=models, **kwargs | {"workers": [w], "local_batches": [plan["local_batch"]]})
            assert not rec.feasible, w


@pytest.mark.parametrize(
    ("change", "path", "words"),
    [
        ({"deadline": 60}, "/deadline", "did you mean 'deadline_s'"),
        ({"target": "high"}, "/target", "must be a finite number"),
        ({"target": True}, "/target", "must be a finite number"),
        ({"deadline_s": -5}, "/deadline_s", "must be a finite number > 0, got -5"),
        ({"confidence": 1.0}, "/confidence", "< 1, got 1.0"),
        ({"max_workers": 0}, "/max_workers", ">= 1"),
        ({"max_workers": {"t4": 2.5}}, "/max_workers/t4", "whole number"),
        ({"max_workers": {"a100": 4}}, "/max_workers/a100", "no timing probes in this profile (profiled: t4)"),
        ({"gpus": ["t4", "A100"]}, "/gpus/1", "gpu 'a100' has no timing probes in this profile (profiled: t4)"),
        ({"prices": {"t4": -1}}, "/prices/t4", ">= 0"),
        # one gpu under two spellings: the last would win without a word
        ({"prices": {"t4": 1, "T4": 2}}, "/prices/T4", "names gpu 't4' twice"),
        ({"max_workers": {"t4": 4, " t4": 8}}, "/max_workers/ t4", "names gpu 't4' twice"),
        ({"workers": []}, "/workers", "must not be empty"),
        ({"local_batches": [64, "x"]}, "/local_batches/1", "whole number"),
        ({"objective": "speed"}, "/objective", "'cost', 'time'"),
        ({"profile": {"example": EXAMPLE, "records": []}}, "/profile", "exactly one"),
        ({"profile": {"records": [{"x": 1}]}}, "/profile/records/0", "'record'"),
        # an empty records list was told "leave the field out for the default": there is none
        ({"profile": {"records": []}}, "/profile/records", "send the profile's records, its workload record first"),
        ({"schema_version": 2}, "/schema_version", "version 2"),
    ],
)
def test_bad_fields_point_at_the_value(change, path, words):
    exc = _err(dict(BASE_REQUEST, **change))
    assert exc.path == path and exc.status == 422
    assert words in exc.detail


def test_missing_and_non_object():
    assert "missing required field 'target'" in _err({"profile": EXAMPLE}).detail
    assert _err([1, 2]).path == "" and "must be an object" in _err("x").detail


def test_bad_record_inside_inline_profile_is_located():
    records = example_records()
    records[5] = dict(records[5], step_time_s="slow")
    exc = _err(dict(BASE_REQUEST, profile={"records": records}))
    assert exc.path == "/profile/records/5" and "step_time_s" in exc.detail and exc.code == "invalid_profile"


def test_unknown_example_never_becomes_a_path():
    for name in ("nope", "../data/profiles/cifar10-resnet18", "/etc/passwd"):
        exc = _err(dict(BASE_REQUEST, profile=name))
        assert exc.code == "unknown_profile" and "known are" in exc.detail


def test_paths_need_an_explicit_directory(tmp_path):
    (tmp_path / "job.jsonl").write_text("".join(json.dumps(r) + "\n" for r in example_records()))
    exc = _err(dict(BASE_REQUEST, profile={"path": "job.jsonl"}))
    assert exc.status == 403 and exc.code == "paths_disabled"
    for bad in ("../job.jsonl", str(tmp_path / "job.jsonl"), "missing.jsonl"):
        assert _err(dict(BASE_REQUEST, profile={"path": bad}), profile_dir=tmp_path).path == "/profile/path"
    doc = recommend_request(dict(BASE_REQUEST, profile={"path": "job.jsonl"}), profile_dir=tmp_path)
    assert doc["status"] == "ok"


def test_limits_are_checked_before_work():
    with pytest.raises(LimitError) as info:
        recommend_request(dict(BASE_REQUEST, profile={"records": example_records()}), limits=Limits(max_records=100))
    assert info.value.path == "/profile/records" and "limit of 100" in info.value.detail
    with pytest.raises(LimitError) as info:
        recommend_request(dict(BASE_REQUEST, max_workers=10**12, hosts="any"))
    assert info.value.code == "search_space_too_large"


def test_deep_nesting_is_refused_without_recursion():
    nested: object = 1
    for _ in range(5000):
        nested = [nested]
    exc = _err(dict(BASE_REQUEST, prices={"t4": nested}))
    assert "nested deeper" in exc.detail


@pytest.mark.parametrize("leaf", [1, "t4", None, [], {}])
def test_nesting_is_refused_from_the_first_value_deeper_than_the_limit(leaf):
    # Any value counts, a scalar or an empty container alike: MAX_DEPTH levels pass the
    # depth check (the field's own check judges them), one more is refused.
    from cotune._checks import MAX_DEPTH
    from cotune.api._request import _check_depth

    def request(depth: int) -> dict:
        value = leaf
        for _ in range(depth - 2):  # the request object and the "prices" object are two levels
            value = [value]
        return {"prices": {"t4": value}}

    _check_depth(request(MAX_DEPTH))
    with pytest.raises(RequestError, match="nested deeper than"):
        _check_depth(request(MAX_DEPTH + 1))


@settings(max_examples=60, deadline=None)
@given(
    caps=st.lists(st.integers(1, 40), min_size=1, max_size=3),
    batches=st.lists(st.integers(1, 6), min_size=1, max_size=3),
    gph=st.integers(1, 8) | st.lists(st.integers(1, 8), min_size=3, max_size=3),
    hosts=st.sampled_from(["packed", "any"]),
    workers=st.none() | st.lists(st.integers(1, 50), min_size=1, max_size=6),
    data=st.none() | st.integers(1, 200),
)
def test_candidate_count_matches_enumeration(caps, batches, gph, hosts, workers, data):
    gpus = tuple(f"g{i}" for i in range(min(len(caps), len(batches))))
    cap_map = {g: caps[i] for i, g in enumerate(gpus)}
    nb = {g: batches[i] for i, g in enumerate(gpus)}
    # One host size for all, or one per type (the request's "*" stands for the last type's).
    sizes = {g: gph for g in gpus} if isinstance(gph, int) else {g: gph[i] for i, g in enumerate(gpus)}
    asked = gph if isinstance(gph, int) else {**{g: sizes[g] for g in gpus[:-1]}, "*": sizes[gpus[-1]]}
    space = SearchSpace(
        gpus=gpus,
        max_workers=cap_map,
        local_batches={g: tuple(range(1, nb[g] + 1)) for g in gpus},
        gpus_per_host=sizes,
        hosts=hosts,
        workers=None if workers is None else tuple(workers),
        max_global_batch=data,
    )
    req = parse_request({"profile": "x", "target": 1, "max_workers": cap_map, "gpus_per_host": asked, "hosts": hosts, "workers": workers})
    values = {g: range(1, nb[g] + 1) for g in gpus}
    made = enumerate_candidates(space)
    assert candidate_count(req, values, dataset_size=data) == len(made) == count_candidates(space)
    # Each type's hosts follow its own size: packed is ⌈w / size⌉; "any" never fewer.
    for i, g in enumerate(gpus):
        mine = made.gpu == i
        least = -(-made.workers[mine] // sizes[g])
        assert (made.hosts[mine] >= least).all() and (made.hosts[mine] <= made.workers[mine]).all()
        if hosts == "packed":
            assert (made.hosts[mine] == least).all()
    if data is not None:
        assert (made.global_batch <= data).all()
        # Brute force: every (workers, batch) pair whose step fits, under each type's cap.
        pairs = {(int(g), int(w), int(b)) for g, w, b in zip(made.gpu, made.workers, made.local_batch)}
        listed = None if workers is None else set(workers)
        assert pairs == {(i, w, b) for i, g in enumerate(gpus) for w in range(1, cap_map[g] + 1)
                         for b in values[g] if w * b <= data and (listed is None or w in listed)}


def test_cotune_exports_recommend_request():
    assert cotune.recommend_request is recommend_request
    assert math.isfinite(np.float64(recommend_request(BASE_REQUEST)["recommendation"]["cost"]))


@pytest.mark.parametrize("version", [10**400, 2, 2.0, 1e300])
def test_a_schema_version_of_any_size_is_an_unsupported_version_not_a_500(version):
    # An integer of 400 digits was an OverflowError (float(version)) and a 500 (the HTTP fuzz).
    exc = _err(dict(BASE_REQUEST, schema_version=version))
    assert exc.status == 422 and exc.code == "unsupported_version" and exc.path == "/schema_version"
    assert len(str(exc)) < 300
