"""One request value for every door: validated once, the same answer and the same message
from Python, the CLI and HTTP (issue 13 item 1; issue 11 items 3, 4 and 8)."""

from __future__ import annotations

import dataclasses
import datetime
import json
import math
import re
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cotune
from cotune import InputError, RecommendRequest
from cotune._request import CLI_OPTIONS, DEFAULT_MAX_WORKERS, FIELD_NAMES, request_from_call
from cotune.cli import main
from cotune.solver import SearchSpaceTooLarge

EXAMPLE = "cifar10-resnet18"
REPO = __import__("pathlib").Path(__file__).resolve().parents[2]


@pytest.fixture
def two_gpu_profile(tmp_path):
    from _helpers import synthetic_records, write_jsonl

    return write_jsonl(tmp_path / "two.jsonl", synthetic_records(gpus=("t4", "v100")))


def _big_data_profile(tmp_path):
    """The bundled cifar10 profile with a training set of 10**15 samples: 10**9 workers are
    then real candidates (cifar10's 50,000 samples bound a step at 1,562 workers)."""
    from cotune.examples import example_path

    lines = example_path(EXAMPLE).read_text().splitlines()
    head = json.loads(lines[0])
    assert head["record"] == "workload"
    head["dataset_size"] = 10**15
    path = tmp_path / "big-data.jsonl"
    path.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n")
    return str(path)


def _cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# --- the Python door: every bad value is an InputError with a one-line pointer message ----------


@pytest.mark.parametrize(
    ("change", "pointer"),
    [
        ({"top": -1}, "/top"),
        ({"workers": [0]}, "/workers/0"),
        ({"max_workers": True}, "/max_workers"),
        ({"workers": [16.7]}, "/workers/0"),
        ({"deadline_s": "30m"}, "/deadline_s"),
        ({"target": None}, "/target"),
        ({"prices": [0.5, 1.0]}, "/prices"),
        ({"interval": 1.5}, "/interval"),
        ({"target": 10**400}, "/target"),
        ({"deadline_s": 10**30}, "/deadline_s"),
        ({"gpus_per_host": 10**30}, "/gpus_per_host"),
        ({"prices": {"t4": 10**400}}, "/prices/t4"),
        ({"confidence": float("nan")}, "/confidence"),
        ({"global_batch_range": (512, 64)}, "/global_batch_range"),
        ({"objective": "speed"}, "/objective"),
        ({"gpus": "t4"}, "/gpus"),
        ({"max_workers": {"t4": 0}}, "/max_workers/t4"),
    ],
)
def test_python_door_refuses_bad_values_with_a_pointer_message(change, pointer):
    with pytest.raises(InputError) as info:
        cotune.recommend(EXAMPLE, **({"target": 0.94} | change))
    text = str(info.value)
    assert text.startswith(f"{pointer}: ") and "\n" not in text and len(text) < 300, text


def test_the_message_names_field_rule_and_value():
    with pytest.raises(InputError, match=r"^/deadline_s: must be a finite number > 0, got -5$"):
        RecommendRequest(profile=EXAMPLE, target=0.9, deadline_s=-5)


def test_an_unknown_keyword_names_the_closest_field():
    with pytest.raises(InputError, match="did you mean 'deadline_s'"):
        cotune.recommend(EXAMPLE, target=0.9, deadline=60)


def test_an_unknown_keyword_beside_a_request_names_the_closest_field():
    # recommend(RecommendRequest(...), bogus=1) went to the request's replace first: a raw TypeError.
    req = RecommendRequest(profile=EXAMPLE, target=0.9)
    with pytest.raises(InputError, match="^got an unknown keyword 'deadline': did you mean 'deadline_s'"):
        cotune.recommend(req, deadline=60)


def test_replace_with_an_unknown_field_names_the_closest_field():
    req = RecommendRequest(profile=EXAMPLE, target=0.9)
    with pytest.raises(InputError, match="^got an unknown keyword 'deadline': did you mean 'deadline_s'"):
        req.replace(deadline=60)


def test_fractional_workers_are_refused_not_truncated():
    with pytest.raises(InputError, match="whole number"):
        RecommendRequest(profile=EXAMPLE, target=0.9, max_workers=16.7)
    assert RecommendRequest(profile=EXAMPLE, target=0.9, max_workers=16.0).max_workers == 16


def test_the_request_is_frozen_and_normalised():
    req = RecommendRequest(profile=EXAMPLE, target=0.9, gpus=["T4"], workers=[4, 2], prices={"T4": 1})
    assert req.gpus == ("t4",) and req.workers == (4, 2) and dict(req.prices) == {"t4": 1.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.target = 0.5  # type: ignore[misc]
    with pytest.raises(TypeError):
        req.prices["t4"] = 2.0  # type: ignore[index]


def test_the_request_pickles_and_serialises_for_process_pools_and_logs():
    import pickle

    req = RecommendRequest(profile=EXAMPLE, target=0.9, prices={"t4": 1}, max_workers={"t4": 3, "*": 8})
    again = pickle.loads(pickle.dumps(req))
    assert again == req and hash(again) == hash(req)
    assert json.loads(json.dumps(dict(req.max_workers))) == {"t4": 3, "*": 8}


def test_recommend_takes_the_request_value_or_the_same_keywords(cifar_models):
    kw = dict(target=0.94, deadline_s=1800, max_workers=12, prices={"t4": 0.526})
    by_value = cotune.recommend(RecommendRequest(profile=EXAMPLE, **kw), models=cifar_models)
    by_keywords = cotune.recommend(EXAMPLE, models=cifar_models, **kw)
    assert by_value.chosen == by_keywords.chosen and by_value.n_candidates == by_keywords.n_candidates


@given(field=st.sampled_from(["top", "pareto_limit", "gpus_per_host", "baseline_workers"]),
       value=st.one_of(st.booleans(), st.floats(allow_nan=True), st.integers(-10**40, 10**40), st.text(max_size=5), st.none()))
@settings(max_examples=150, deadline=None)
def test_any_value_is_accepted_bounded_or_an_input_error(field, value):
    try:
        req = RecommendRequest(profile=EXAMPLE, target=0.9, **{field: value})
    except InputError as exc:
        assert str(exc).startswith(f"/{field}") and "\n" not in str(exc)
    else:
        got = getattr(req, field)
        assert got is None or (type(got) is int and 0 <= got <= 10**15)


# --- defaults, each defined once; max_workers naming only some gpus --------------------------


def test_default_max_workers_is_defined_once():
    hits = [
        f"{p.name}:{line}" for p in (REPO / "cotune").rglob("*.py") for line in p.read_text().splitlines()
        if re.search(r"max_workers[^=]*=\s*16\b", line) and ">>>" not in line  # doc examples may say 16
    ]
    assert hits == [], hits  # the literal lives in DEFAULT_MAX_WORKERS only
    # Unset (None) until stated: recommend reads it as 16, a ReplanRequest states replan's 64.
    unset = RecommendRequest(profile=EXAMPLE, target=0.9)
    assert unset.max_workers is None and unset.cap_for("t4") == DEFAULT_MAX_WORKERS == 16


def test_a_cap_for_some_gpus_leaves_the_others_at_the_star_entry_or_the_default():
    req = RecommendRequest(profile=EXAMPLE, target=0.9, max_workers={"t4": 8})
    assert req.cap_for("t4") == 8 and req.cap_for("v100") == DEFAULT_MAX_WORKERS
    star = RecommendRequest(profile=EXAMPLE, target=0.9, max_workers={"*": 32, "t4": 8})
    assert star.cap_for("v100") == 32


def test_partial_max_workers_behaves_the_same_at_every_door(capsys, two_gpu_profile):
    """A profile with t4 and v100; max_workers names t4 only: Python, CLI and HTTP agree, with a note."""
    from cotune.api import recommend_request

    py = cotune.recommend(str(two_gpu_profile), target=0.7, max_workers={"t4": 3}).to_dict()
    code, out, err = _cli(capsys, "recommend", str(two_gpu_profile), "--target", "0.7", "--max-workers", "t4=3", "--json", "--quiet")
    assert code == 0, err
    cli = json.loads(out)
    records = [json.loads(line) for line in two_gpu_profile.read_text().splitlines() if line.strip()]
    http = recommend_request({"profile": {"records": records}, "target": 0.7, "max_workers": {"t4": 3}})
    for doc in (py, cli, http):
        assert doc["n_candidates"] == py["n_candidates"] and doc["recommendation"] == py["recommendation"]
        assert any("names no cap for v100" in n for n in doc["notes"])


def test_per_gpu_max_workers_with_a_cluster_is_not_a_key_error(cifar_models, tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('version = 1\n[gpu.t4]\non_demand = 16\non_demand_price_per_hour = 0.5\n')
    rec = cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, deadline_s=3600, cluster=str(path), max_workers={"t4": 8})
    assert rec.feasible and rec.chosen.workers <= 8
    # A cap for a gpu the profile never probed is a typo until shown otherwise: refused, at its pointer.
    with pytest.raises(InputError, match="names gpu v100, which has no timing probes") as info:
        cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, deadline_s=3600, cluster=str(path), max_workers={"v100": 2})
    assert info.value.where == "/max_workers/v100"


def test_a_schedulers_whole_inventory_and_price_list_is_searched_where_profiled_and_noted_elsewhere(cifar_models):
    # A scheduler sends every job its cluster's caps and prices; a profile of T4 probes alone
    # was refused ("price given for gpu v100 that is not in the search space"). Where every
    # searched type has its own cap and price, the others are a note, not an error.
    rec = cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, deadline_s=3600,
                           max_workers={"t4": 8, "v100": 4, "a100": 2}, prices={"t4": 0.526, "v100": 2.48, "a100:on_demand": 3.1})
    assert rec.feasible and rec.chosen.gpu == "t4" and rec.chosen.workers <= 8
    (note,) = [n for n in rec.notes if "without timing probes" in n]
    assert note.startswith("a100, v100 named in the caps, host sizes or prices") and "not searched" in note
    same = cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, deadline_s=3600, max_workers={"t4": 8},
                            prices={"t4": 0.526})
    assert same.chosen == rec.chosen
    # A typo still cannot leave the searched type at the default cap or unpriced.
    with pytest.raises(InputError, match="names gpu t5"):
        cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, max_workers={"t5": 8}, prices={"t4": 0.526})
    with pytest.raises(InputError, match="no price for t4"):
        cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, max_workers={"t4": 8}, prices={"t5": 0.526})


# --- the candidate limit: the same for every door, checked before any candidate exists --------


def test_huge_spaces_are_refused_before_enumeration_where_they_cannot_be_sampled(cifar_models, tmp_path, monkeypatch):
    """Spot/mixed stages cannot be sampled one row at a time: over the limit they are refused at once."""
    import dataclasses

    # A training set big enough that 10**9 workers are real candidates (cifar10's 50,000
    # samples bound a step at 1,562 workers of local batch 32: no huge space at all).
    big_models = dataclasses.replace(cifar_models, dataset_size=10**15)
    path = tmp_path / "c.toml"
    path.write_text('version = 1\n[checkpoint]\nwrite_s = 10\n[gpu.t4]\non_demand = 1000000\nspot = 1000000\n'
                    'on_demand_price_per_hour = 0.5\nspot_price_per_hour = 0.2\nrevocation_rate_per_hour = 0.1\n'
                    'replacement_delay_s = 60\n')
    def no_enumeration(space):  # the refusal comes from the count, before any candidate exists
        raise AssertionError("the space was enumerated before the limit was checked")

    monkeypatch.setattr("cotune._pipeline.enumerate_candidates", no_enumeration)
    for kw in ({"max_workers": 10**9}, {"max_workers": 10_000, "hosts": "any"}):
        with pytest.raises(SearchSpaceTooLarge) as info:
            cotune.recommend(EXAMPLE, models=big_models, target=0.94, deadline_s=1800, cluster=str(path), **kw)
        assert info.value.count > info.value.limit == 1_000_000


@pytest.mark.parametrize("extra", [["--max-workers", "1000000000"], ["--max-workers", "10000", "--hosts", "any"]])
def test_huge_spot_spaces_fail_fast_at_the_cli(capsys, tmp_path, extra):
    path = tmp_path / "c.toml"
    path.write_text('version = 1\n[checkpoint]\nwrite_s = 10\n[gpu.t4]\non_demand = 1000000\nspot = 1000000\n'
                    'on_demand_price_per_hour = 0.5\nspot_price_per_hour = 0.2\nrevocation_rate_per_hour = 0.1\n'
                    'replacement_delay_s = 60\n')
    code, out, err = _cli(capsys, "recommend", _big_data_profile(tmp_path), "--target", "0.94", "--deadline", "30m",
                          "--quiet", "--cluster", str(path), *extra)
    assert code == 2 and out == "" and err.count("\n") == 1 and "over the limit of 1,000,000" in err


@pytest.mark.slow
@pytest.mark.parametrize("extra", [["--max-workers", "1000000000"], ["--max-workers", "10000", "--hosts", "any"]])
def test_huge_on_demand_spaces_are_searched_not_enumerated_at_the_cli(capsys, tmp_path, extra):
    """On-demand spaces over the limit are sampled (cotune/solver/_optuna.py): an answer, a note, bounded work."""
    code, out, err = _cli(capsys, "recommend", _big_data_profile(tmp_path), "--target", "0.94", "--quiet", "--json", *extra)
    doc = json.loads(out)
    assert code == 0 and doc["n_candidates"] < 10_000
    assert any("over the limit of 1,000,000" in n for n in doc["notes"])


def test_the_training_set_bounds_the_global_batch_of_every_candidate(capsys, cifar_models):
    """cifar10's 50,000 samples: 10**9 workers is no huge space, since no step may hold more
    samples than the training set (a larger one was scored with an epoch shorter than a step)."""
    rec = cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, max_workers=10**9, gpus_per_host=4)
    frame = rec.candidates_frame()
    batches = sorted({int(b) for b in cifar_models.time_models["t4"].points_[:, 2]})
    # Brute force over worker counts well past the bound: every pair whose step fits the data.
    expected = sum(1 for w in range(1, 4000) for b in batches if w * b <= 50_000)
    assert len(frame) == rec.n_candidates == expected
    assert (frame["workers"] * frame["local_batch"]).max() <= 50_000
    assert not any("over the limit" in n for n in rec.notes)
    code, out, _ = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--quiet", "--json", "--max-workers", "1000000000")
    assert code == 0
    assert any("global batches above the profile's 50,000 training samples left out" in n for n in json.loads(out)["notes"])


# --- the CLI door: the same checks, in the option's name --------------------------------------


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--top", "-1"], "--top: must be a whole number >= 0 and <= 1000, got -1"),
        (["--max-workers", "t4=0"], "--max-workers t4: must be a whole number >= 1, got 0"),
        (["--max-workers", "16.7"], "whole number"),
        (["--gpus-per-host", "1" + "0" * 30], "at most 1e+15"),
        (["--price", "t4=1e400"], "finite"),
        (["--workers", "9" * 400], "at most 100 characters"),
        (["--interval", "1.5"], "--interval: must be a probability"),
        (["--global-batch", "512..64"], "--global-batch"),
        # an element of a list-valued option is counted from 1, not shown as a bare index ('--gpu 0')
        (["--gpu", ""], "--gpu (value 1): must be a non-empty string, got ''"),
        (["--global-batch", "1..0"], "--global-batch (value 2): must be a whole number >= 1, got 0"),
        (["--local-batch", ""], "expected comma-separated whole numbers such as 32,64,128, got none"),
    ],
)
def test_cli_messages_name_the_option(capsys, argv, needle):
    code, out, err = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", *argv)
    assert code == 2 and out == "" and err.startswith("cotune: ") and err.count("\n") == 1 and needle in err, err


def test_every_field_has_a_cli_option_in_recommend_and_k8s():
    from cotune.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices
    for command in ("recommend", "k8s"):
        options = {s for a in sub[command]._actions for s in a.option_strings}
        for name in FIELD_NAMES:
            flag = CLI_OPTIONS[name]
            assert flag == "PROFILE" or flag in options, (command, name, flag)


def test_serve_refuses_a_port_out_of_range(capsys):
    code, _, err = _cli(capsys, "serve", "--port", "70000")
    assert code == 2 and "65535" in err and err.count("\n") == 1


def test_request_from_call_accepts_a_request_and_applies_changes():
    req = RecommendRequest(profile=EXAMPLE, target=0.9)
    assert request_from_call(req) is req
    assert request_from_call(req, {"top": 2}).top == 2
    with pytest.raises(InputError, match="target"):
        request_from_call(EXAMPLE, {})


# --- what the output says ------------------------------------------------------------------------


def test_objective_time_prints_no_currency(capsys):
    code, out, _ = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--deadline", "1h", "--price", "t4=0.5",
                        "--objective", "time", "--quiet")
    assert code == 0 and "objective: time ·" in out and "(USD)" not in out.splitlines()[1]
    code, out, _ = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--deadline", "1h", "--price", "t4=0.5", "--quiet")
    assert "objective: cost (USD)" in out


def test_relax_hint_for_a_loss_target_says_raise(tmp_path):
    """goal 'min': an unreachable (too low) loss target must be *raised*."""
    from _helpers import synthetic_records, write_jsonl

    records = synthetic_records()
    for r in records:
        if r["record"] == "workload":
            r["goal"] = "min"
        if r["record"] == "eval":
            r["metric"] = 1.0 - r["metric"]  # accuracy → error rate, falling with epochs
    path = write_jsonl(tmp_path / "loss.jsonl", records)
    rec = cotune.recommend(str(path), target=1e-9)
    assert not rec.feasible
    assert "raise the target" in rec.relax[0] and "lower the target" not in rec.relax[0], rec.relax


# --- docs/request.md: every field, every door ---------------------------------------------------


def _field_rows() -> dict[str, list[str]]:
    text = (REPO / "docs" / "request.md").read_text()
    rows = {}
    for line in text.split("## Every field and its doors", 1)[1].split("## Re-planning", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = cells
    return rows


def test_the_field_table_lists_every_field_with_its_cli_option():
    rows = _field_rows()
    assert set(rows) == set(FIELD_NAMES)
    for name, (_, _, python, cli, json_field) in rows.items():
        assert CLI_OPTIONS[name].split()[0] in cli, (name, cli)
        assert json_field == "— (³)" or name in json_field, (name, json_field)


def test_the_field_table_matches_the_json_schema():
    from cotune.api import schema

    props = set(schema("recommend-request.v1")["properties"]) - {"schema_version"}
    rows = _field_rows()
    assert props == {n for n, cells in rows.items() if cells[4] != "— (³)"}


@pytest.mark.slow
def test_request_doc_examples_run():
    import os

    here = os.getcwd()
    os.chdir(REPO)
    try:
        for block in re.findall(r"```python\n(.*?)```", (REPO / "docs" / "request.md").read_text(), flags=re.S):
            exec(compile(block, "docs/request.md", "exec"), {})
    finally:
        os.chdir(here)


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--max-workers", "t4=8", "--max-workers", "t4=4"], "--max-workers gives 't4' twice (8 and 4)"),
        (["--max-workers", "8", "--max-workers", "4"], "--max-workers gives every gpu type twice"),
        (["--price", "t4=2", "--price", "T4=1"], "--price gives 't4' twice"),
    ],
)
def test_a_repeated_option_key_is_refused_not_overwritten(capsys, argv, words):
    assert main(["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", *argv]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1


def test_a_repeated_node_selector_or_replan_price_is_refused(capsys):
    assert main(["k8s", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--node-selector", "zone=a",
                 "--node-selector", "zone=b"]) == 2
    assert "--node-selector gives 'zone' twice ('a' and 'b')" in capsys.readouterr().err
    assert main(["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "45m", "--elapsed", "15m",
                 "--epochs-done", "30", "--current", "t4:on_demand:4:129", "--price", "t4=1", "--price", "t4=2"]) == 2
    assert "--price gives 't4' twice" in capsys.readouterr().err


@pytest.mark.parametrize(("key", "needle"), [
    ("t4:on-demand", "the market is written 'on_demand' (t4:on_demand)"),
    ("t4:OnDemand", "the market is written 'on_demand' (t4:on_demand)"),
    ("t4:reserved", "'t4:reserved' names no market cotune knows"),
    ("t4:spot", "spot prices need revocation rates"),
])
def test_a_price_key_with_a_misspelt_or_unknown_market_names_the_spelling(key, needle) -> None:
    # 't4:on-demand' was told that spot prices need a cluster file
    with pytest.raises(InputError, match=re.escape(needle)):
        cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800, prices={key: 0.5})


def test_a_search_space_count_past_two_to_the_53_is_stated_exactly() -> None:
    from cotune.solver._inputs import SearchSpaceTooLarge, check_candidate_limit

    count = 4_125_000_000_000_000_000_000_000_000_000  # 2 ** 53 is about 9.0e15
    with pytest.raises(SearchSpaceTooLarge) as info:
        check_candidate_limit(count, limit=10**6, rows_per_candidate=1.5)
    # the float product read 6,187,500,000,000,000,557,...
    assert info.value.count == count * 3 // 2 and f"{count * 3 // 2:,} candidates" in str(info.value)


def test_the_python_door_takes_the_types_python_callers_hold() -> None:
    # numpy arrays, pandas Series and Timedelta, datetime.timedelta, 0-d arrays and Decimal
    # were refused ('must be an array (a list), got a ndarray')
    import datetime
    from decimal import Decimal

    import numpy as np
    import pandas as pd

    base = dict(target=0.94, deadline_s=1800, workers=[2, 3, 4], prices={"t4": 0.526}, max_workers=16)
    want = cotune.recommend("cifar10-resnet18", **base).chosen
    for change in (dict(workers=np.array([2, 3, 4])), dict(workers=pd.Series([2, 3, 4])),
                   dict(deadline_s=datetime.timedelta(minutes=30)), dict(deadline_s=pd.Timedelta("30m")),
                   dict(target=np.array(0.94)), dict(target=Decimal("0.94")), dict(prices=pd.Series({"t4": 0.526})),
                   dict(max_workers=pd.Series({"t4": 16})), dict(max_workers=np.array(16)),
                   dict(workers={4, 2, 3}), dict(workers=frozenset([3, 2, 4])), dict(gpus={"t4"})):
        assert cotune.recommend("cifar10-resnet18", **{**base, **change}).chosen == want, change


@pytest.mark.parametrize(("change", "needle"), [
    (dict(workers=np.array([[2, 3]])), "/workers/0"),  # 2-d: its rows are not worker counts
    (dict(target=Decimal("NaN")), "/target"),
    (dict(deadline_s=datetime.timedelta(seconds=-5)), "/deadline_s"),
    (dict(max_workers="lots"), "must be a whole number >= 1 or an object of gpu → number"),
    (dict(local_batches={64, 0}), "/local_batches/0: must be a whole number >= 1, got 0"),  # sorted: 0 first, every run
])
def test_the_python_door_still_judges_what_those_types_hold(change, needle) -> None:
    with pytest.raises(InputError, match=re.escape(needle)):
        cotune.recommend("cifar10-resnet18", **{**dict(target=0.94, deadline_s=1800), **change})


def test_a_tiny_interval_is_answered_not_a_traceback(capsys):
    # The step-time σ calibrated at the interval's own level overflowed the value of
    # information ("OverflowError: math range error") at --interval 0.0000001.
    code, out, err = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--deadline", "30m", "--interval", "0.0000001",
                          "--json")
    assert code == 0 and err == ""
    chosen = json.loads(out)["recommendation"]
    assert chosen["time_interval_s"][0] <= chosen["time_s"] <= chosen["time_interval_s"][1]


@pytest.mark.parametrize(("listed", "max_workers", "needle"), [
    ("50,60", "16", "t4 allows at most 16 (max_workers 16)): list smaller ones, or raise max_workers"),
    ("5000", "6000", "t4 allows at most 1,562 (50,000 training samples at local batch 32)): list smaller ones"),
])
def test_listed_worker_counts_the_space_cannot_hold_are_named_not_answered_as_a_target(capsys, listed, max_workers, needle):
    # Zero candidates were answered "nothing feasible" with a hint to lower the target
    # (0.94) to 0.9466, which is above it.
    code, out, err = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--workers", listed, "--max-workers", max_workers)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("cotune: --workers: no candidate") and needle in err
    assert ("raise max_workers" in err) == (max_workers == "16")


def test_listed_worker_counts_the_space_cannot_hold_are_a_422_at_workers():
    from cotune.api import RequestError, recommend_request

    with pytest.raises(RequestError) as info:
        recommend_request({"profile": EXAMPLE, "target": 0.94, "workers": [50]})
    assert info.value.status == 422 and info.value.path == "/workers" and "no candidate" in info.value.detail


def test_repeated_gpus_workers_and_batches_are_one_choice_each_in_the_order_given():
    # 800,000 copies of "t4" (3 MB, under the body limit) held the solver for hours: the
    # candidate limit counted one type, the search went through every copy.
    req = RecommendRequest(profile=EXAMPLE, target=0.94, gpus=["t4", "T4", " t4 "] * 1000, workers=[4, 2, 4, 2, 1],
                           local_batches=(128, 64, 128))
    assert req.gpus == ("t4",) and req.workers == (4, 2, 1) and req.local_batches == (128, 64)


def test_a_recommendation_over_repeated_gpus_lists_each_gpu_once(capsys):
    code, out, err = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--gpu", "t4", "--gpu", "T4", "--json")
    assert code == 0, err
    assert json.loads(out)["gpus"] == ["t4"]


@pytest.mark.parametrize("interval", [0.9999999999999999, 0.9999995, 1 - 2**-40])
def test_an_interval_too_close_to_one_is_refused_at_every_door(capsys, interval):
    # (1 + p) / 2 rounds to 1: the normal quantile raised StatisticsError, read as "cannot
    # fit models to this profile" over HTTP and as a bug in cotune (exit 4) at the CLI.
    with pytest.raises(InputError, match=r"^/interval: must be a probability > 0 and <= 0\.999999, got "):
        cotune.recommend(EXAMPLE, target=0.94, interval=interval)
    with pytest.raises(InputError, match=r"^/interval: must be a probability > 0 and <= 0\.999999"):
        cotune.replan(EXAMPLE, target=0.94, deadline_s=3600, interval=interval,
                      progress={"epochs_done": 10, "elapsed_s": 600, "gpu": "t4", "market": "on_demand", "workers": 4,
                                "local_batch": 128})
    code, out, err = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--interval", repr(interval))
    assert code == 2 and "--interval: must be a probability > 0 and <= 0.999999" in err and err.count("\n") == 1, err


def test_the_widest_interval_allowed_is_answered():
    rec = cotune.recommend(EXAMPLE, target=0.94, deadline_s=3600, interval=0.999999)
    lo, hi = rec.chosen.time_interval_s
    assert 0 < lo <= rec.chosen.time_s <= hi < math.inf


def test_a_note_names_a_few_unknown_gpus_and_counts_the_rest():
    # A price list of 100,000 unknown GPU types made one note of 789 KB.
    prices = {**{f"g{i:06d}": 1.0 for i in range(100_000)}, "t4": 1.0}
    rec = cotune.recommend(EXAMPLE, target=0.94, prices=prices)
    (note,) = [n for n in rec.notes if "named in the caps, host sizes or prices" in n]
    assert note.startswith("g000000, g000001, g000002, g000003, g000004, g000005, g000006, g000007 and 99,992 more named")
    assert len(note) < 400


@pytest.mark.parametrize("models", ["x", 3, {"gpus": ["t4"]}])
def test_models_that_are_no_fitted_models_are_an_input_error_at_both_python_doors(models):
    # An AttributeError ('str' object has no attribute 'gpus') deep in the search.
    said = r"^models: must be the result of cotune.fit_models\(profile\)"
    with pytest.raises(InputError, match=said):
        cotune.recommend(EXAMPLE, target=0.94, models=models)
    with pytest.raises(InputError, match=said):
        cotune.replan(EXAMPLE, target=0.94, deadline_s=3600, models=models,
                      progress={"epochs_done": 10, "elapsed_s": 600, "gpu": "t4", "market": "on_demand", "workers": 4,
                                "local_batch": 128})


def test_a_whole_number_written_with_a_point_is_that_number_at_every_door(capsys):
    # The CLI refused --max-workers 16.0 ("expected a whole number") where HTTP and Python took 16.0.
    code, out, err = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--max-workers", "16.0", "--workers", "2.0,4",
                          "--json")
    assert code == 0, err
    assert json.loads(out)["recommendation"]["workers"] in (2, 4)  # '2.0' read as the worker count 2
    code, _, err = _cli(capsys, "recommend", EXAMPLE, "--target", "0.94", "--max-workers", "16.5")
    assert code == 2 and "expected a whole number, got '16.5'" in err


@pytest.mark.parametrize("field", ["top", "pareto_limit"])
def test_replan_refuses_recommends_table_sizes_rather_than_ignoring_them(field):
    progress = dict(epochs_done=20, elapsed_s=600, gpu="t4", workers=2, local_batch=128)
    with pytest.raises(InputError, match=rf"^/{field}: replan answers one decision"):
        cotune.replan("cifar10-resnet18", progress=progress, target=0.94, deadline_s=1800, **{field: 3})


@pytest.mark.parametrize("prices", [{"t4": 0.1, "t4:on_demand": 0.2}, {"T4:ON_DEMAND": 0.2, "t4": 0.1}])
def test_one_price_under_two_spellings_is_refused_not_silently_one_of_them(prices):
    with pytest.raises(InputError, match=r"names gpu 't4' twice"):
        cotune.recommend("cifar10-resnet18", target=0.94, prices=prices)


def test_replan_takes_the_caps_recommend_takes():
    # --max-workers 1000001 was refused with a message about a cluster file nobody gave
    progress = dict(epochs_done=10, elapsed_s=600, gpu="t4", workers=4, local_batch=128)
    res = cotune.replan("cifar10-resnet18", progress=progress, target=0.94, deadline_s=3600, max_workers=1_000_001)
    assert res.decision in ("stay", "switch")
    for call in (cotune.recommend, cotune.replan):  # one bound on a host's size, for every door
        kw = {"progress": progress} if call is cotune.replan else {}
        with pytest.raises(InputError, match=r"^/gpus_per_host: must be a whole number >= 1 and <= 4096, got 5000"):
            call("cifar10-resnet18", target=0.94, deadline_s=3600, gpus_per_host=5000, **kw)


def test_a_new_price_replaces_the_requests_under_either_spelling():
    # {**old, **new} kept 't4:on_demand' beside a new 't4', and which one won depended on order
    from cotune import Progress, ReplanRequest

    progress = Progress(epochs_done=10, elapsed_s=600, gpu="t4", market="on_demand", workers=4, local_batch=128)

    def stay_cost(old, new):
        request = RecommendRequest(profile="cifar10-resnet18", target=0.94, deadline_s=3600, prices=old)
        return cotune.replan(ReplanRequest(request=request, progress=progress, prices=new)).stay.cost

    expected = stay_cost({"t4": 0.1}, None)
    for old in ({"t4": 0.5}, {"t4:on_demand": 0.5}):
        for new in ({"t4": 0.1}, {"t4:on_demand": 0.1}):
            assert stay_cost(old, new) == pytest.approx(expected), (old, new)


def test_models_fitted_at_another_interval_are_refused_not_relabelled(cifar_models) -> None:
    # The level is part of the fit: an answer at the models' level labelled with the
    # request's would claim intervals it does not have.
    assert cifar_models.accuracy.interval == 0.9
    with pytest.raises(InputError, match=r"^/interval: the models given were fitted at interval 0.9, the request asks "
                                         r"for 0.5: fit them with cotune.fit_models\(profile, interval=0.5\)"):
        cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, deadline_s=3600, interval=0.5)
    with pytest.raises(InputError, match=r"^/interval: the models given were fitted at interval 0.9"):
        cotune.replan(EXAMPLE, models=cifar_models, target=0.94, deadline_s=3600, interval=0.99,
                      progress=cotune.Progress(epochs_done=5, elapsed_s=300, gpu="t4", market="on_demand", workers=4,
                                                        local_batch=128))
    same = cotune.recommend(EXAMPLE, models=cifar_models, target=0.94, deadline_s=3600, interval=0.9)
    assert same.interval == 0.9 and same.feasible


def test_a_local_batch_larger_than_the_training_set_points_at_its_field():
    # It was an InputError with no pointer: HTTP's and --json's error.path were null.
    with pytest.raises(InputError) as info:
        cotune.recommend(EXAMPLE, target=0.94, local_batches=[100_000])
    assert info.value.where == "/local_batches/0"
    assert str(info.value).startswith("/local_batches/0: local batch 100000 is more than the profile's")



_IMPOSSIBLE_PATHS = pytest.mark.parametrize(
    ("text", "problem"),
    [("", "is empty (got '')"), ("  ", "is empty (got '  ')"), ("a\x00b", "holds a NUL byte, which no path can (got 'a\\x00b')"),
     ("p" * 5000, "is 5,000 characters long, more than the 4,096 a path may have")],
    ids=["empty", "blank", "nul", "too-long"],
)


@_IMPOSSIBLE_PATHS
def test_a_profile_path_no_file_can_have_is_refused_with_one_message_at_every_door(text, problem, capsys):
    # `cotune fit ''` and load_profile('') said ".: is a directory" where recommend refused it.
    fix = "a profile file or a bundled example name (cotune examples lists them)"
    with pytest.raises(InputError) as via_load:
        cotune.load_profile(text)
    with pytest.raises(InputError) as via_request:
        cotune.recommend(text, target=0.9)
    detail = str(via_request.value).removeprefix("/profile: ")
    assert detail.startswith(problem) and detail.endswith(fix) and str(via_load.value) == f"the profile path {detail}"
    if "\x00" not in text:  # a command line cannot hold a NUL byte
        assert main(["fit", text]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"cotune: the profile path {problem[:9]}") and err.endswith(f"{fix}\n") and err.count("\n") == 1


@_IMPOSSIBLE_PATHS
def test_a_cluster_path_no_file_can_have_is_refused_with_one_message_at_every_door(text, problem):
    # load_cluster('') said ".: unknown cluster file type '(none)'".
    from cotune.spot import load_cluster

    with pytest.raises(InputError) as via_load:
        load_cluster(text)
    with pytest.raises(InputError) as via_request:
        RecommendRequest(profile="cifar10-resnet18", target=0.9, cluster=text)
    detail = str(via_request.value).removeprefix("/cluster: ")
    assert detail.startswith(problem) and "a cluster file (.toml, .yaml or .yml" in detail
    assert str(via_load.value) == f"the cluster file path {detail}"
