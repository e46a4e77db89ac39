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
