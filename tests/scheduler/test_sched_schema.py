"""The published JSON Schemas and the Python validator accept exactly the same requests."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sched_helpers import BASE_REQUEST, REPO

from cotune.api import SCHEMA_NAMES, RequestError, parse_request, schema


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_published_copy_is_the_packaged_schema(name):
    published = json.loads((REPO / "docs" / "schema" / f"{name}.json").read_text())
    assert published == schema(name)
    jsonschema.Draft202012Validator.check_schema(published)


@pytest.mark.parametrize("name", SCHEMA_NAMES)
def test_a_schema_names_no_cotune_version_but_the_one_that_serves_it(name):
    # recommend-response.v1 said p_reach/p_success were "added in cotune 0.2" while every
    # response, /health and the package said 0.1.0: a client could not tell what to expect.
    import re

    import cotune

    named = set(re.findall(r"cotune (\d+\.\d+(?:\.\d+)?)", json.dumps(schema(name))))
    assert named <= {cotune.__version__}


_VALIDATOR = jsonschema.Draft202012Validator(schema("recommend-request.v1"))

# Values of every JSON type, including the edges the two validators could disagree on.
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 5),
    st.sampled_from([0.0, 0.5, 1.0, 2.5, -1.0, 3.0, 1e-9]),
    st.sampled_from(["", "t4", "cost", "time", "packed", "any", "cifar10-resnet18", "x" * 201]),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["t4", "v100", "", "example", "records", "path", "record"]), inner, max_size=2),
    ),
    max_leaves=5,
)
# Plausible valid values too, so both sides of the equivalence are exercised.
_values = st.one_of(st.sampled_from([None, 0.9, 16, 1800.0, [64, 128], {"t4": 0.5}, "cost", "packed", "cifar10-resnet18"]), _values)
_fields = [
    "schema_version", "profile", "target", "deadline_s", "max_workers", "gpus_per_host", "prices", "objective",
    "budget", "confidence", "gpus", "local_batches", "workers", "hosts", "startup_s", "baseline_local_batch",
    "baseline_workers", "interval", "top", "pareto_limit", "deadline", "unknown",
]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changes=st.dictionaries(st.sampled_from(_fields), _values, max_size=3), drop=st.sampled_from([None, "profile", "target"]))
def test_schema_and_parser_agree(changes, drop):
    request = dict(BASE_REQUEST, **changes)
    if drop:
        request.pop(drop, None)
    schema_ok = _VALIDATOR.is_valid(request)
    try:
        parse_request(request)
        parser_ok = True
    except RequestError:
        parser_ok = False
    assert schema_ok == parser_ok, (request, [e.message for e in _VALIDATOR.iter_errors(request)])


def test_examples_in_docs_are_valid_requests():
    paths = sorted((REPO / "docs" / "schema").glob("example-*.json"))
    assert paths, "docs/schema/ has example requests"
    for path in paths:
        request = json.loads(path.read_text())
        _VALIDATOR.validate(request)
        parse_request(request)


_OFFER = {"on_demand": 8, "spot": 8, "on_demand_price_per_hour": 0.5, "spot_price_per_hour": 0.15,
          "revocation_rate_per_hour": 0.1, "replacement_delay_s": 120}
_CLUSTER = {"version": 1, "checkpoint": {"write_s": 20, "restart_s": 30}, "gpu": {"t4": _OFFER}}
_REPLAN = {"profile": "cifar10-resnet18", "target": 0.94, "deadline_s": 3600,
           "progress": {"epochs_done": 20, "elapsed_s": 900, "gpu": "t4", "market": "on_demand", "workers": 4, "local_batch": 32}}


def _cluster_at(field: str, value: object) -> dict:
    """The cluster with one field (``gpus_per_host``, ``checkpoint.write_s``, ``gpu.t4.spot``) set."""
    cluster = json.loads(json.dumps(_CLUSTER))
    *parents, last = field.split(".")
    node = cluster
    for key in parents:
        node = node[key]
    node[last] = value
    return cluster


# Each bound of the cluster parser: a value at it and one just past it.
_CLUSTER_BOUNDS = [
    ("gpus_per_host", 4096, 4097),
    ("gpu.t4.on_demand", 1_000_000, 1_000_001), ("gpu.t4.spot", 1_000_000, 1_000_001),
    ("gpu.t4.revocation_rate_per_hour", 100, 101), ("gpu.t4.replacement_delay_s", 1e9, 2e9),
    ("checkpoint.write_s", 1e9, 2e9), ("checkpoint.restart_s", 1e9, 2e9),
]


def _verdicts(name: str, request: dict) -> tuple[bool, bool]:
    """(the schema accepts ``request``, the parser accepts it)."""
    from cotune.api import parse_replan_request

    schema_ok = jsonschema.Draft202012Validator(schema(name)).is_valid(request)
    try:
        (parse_replan_request if name == "replan-request.v1" else parse_request)(request)
        return schema_ok, True
    except RequestError:
        return schema_ok, False


@pytest.mark.parametrize(("field", "at", "past"), _CLUSTER_BOUNDS)
@pytest.mark.parametrize("name", ["recommend-request.v1", "replan-request.v1"])
def test_the_schemas_bound_a_cluster_field_where_its_parser_does(name, field, at, past):
    base = {k: v for k, v in (_REPLAN if name == "replan-request.v1" else BASE_REQUEST).items() if k != "prices"}
    assert _verdicts(name, dict(base, cluster=_cluster_at(field, at))) == (True, True)
    assert _verdicts(name, dict(base, cluster=_cluster_at(field, past))) == (False, False)


@pytest.mark.parametrize("field", ["gpus_per_host", "gpu.t4.on_demand", "gpu.t4.spot", "gpu.t4.gpus_per_host"])
@pytest.mark.parametrize("name", ["recommend-request.v1", "replan-request.v1"])
def test_an_inline_clusters_whole_number_written_as_a_float_reads_as_that_number(name, field):
    # JSON Schema's "integer" takes 4.0, and so do the request's own whole-number fields; the
    # cluster's counts and server sizes were refused ("must be a whole number >= 0, got 4.0").
    base = {k: v for k, v in (_REPLAN if name == "replan-request.v1" else BASE_REQUEST).items() if k != "prices"}
    assert _verdicts(name, dict(base, cluster=_cluster_at(field, 4.0))) == (True, True)
    plain = {k: v for k, v in BASE_REQUEST.items() if k != "prices"}
    assert parse_request(dict(plain, cluster=_cluster_at(field, 4.0))) == parse_request(dict(plain, cluster=_cluster_at(field, 4)))
    for bad in (4.5, True):
        assert _verdicts(name, dict(base, cluster=_cluster_at(field, bad))) == (False, False)


@pytest.mark.parametrize("name", ["recommend-request.v1", "replan-request.v1"])
def test_the_schemas_refuse_a_cluster_gpu_name_the_parser_refuses(name):
    base = _REPLAN if name == "replan-request.v1" else BASE_REQUEST
    request = dict(base, cluster=dict(_CLUSTER, gpu={"x" * 101: _OFFER}))
    with pytest.raises(RequestError):
        parse_request(dict(BASE_REQUEST, cluster=request["cluster"]))
    assert not jsonschema.Draft202012Validator(schema(name)).is_valid(request)


@pytest.mark.parametrize("name", ["recommend-request.v1", "replan-request.v1"])
def test_the_schemas_refuse_a_checkpoint_size_of_zero_as_the_parser_does(name):
    base = {k: v for k, v in (_REPLAN if name == "replan-request.v1" else BASE_REQUEST).items() if k != "prices"}
    cluster = dict(_CLUSTER, checkpoint={"model_size_gb": 0, "bandwidth_gb_per_s": 1})
    assert _verdicts(name, dict(base, cluster=cluster)) == (False, False)
