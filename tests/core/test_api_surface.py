"""The Python API surface as the docs describe it: the value types a caller holds, each door
of a question resolving it alike, and every bad argument a cotune error naming it (review of
docs/api.md, docs/request.md and docs/models.md)."""

from __future__ import annotations

import numpy as np
import pytest

import cotune
from cotune import InfeasibleError, InputError, Progress, RecommendRequest, ReplanRequest
from cotune._checks import excerpt
from cotune.cli import main
from cotune.solver import SearchSpace, SearchSpaceTooLarge, enumerate_candidates

EXAMPLE = "cifar10-resnet18"
PROGRESS = dict(epochs_done=5, elapsed_s=120, gpu="t4", market="on_demand", workers=4, local_batch=129)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


# --- seconds held as numpy timedelta64 (docs/api.md: "each is then checked like its plain form") ---


@pytest.mark.parametrize("value", [
    np.timedelta64(1800 * 10**9, "ns"),  # a pandas timedelta column's item
    np.timedelta64(1800, "s"),
    np.timedelta64(30, "m"),
    np.timedelta64(1800 * 10**6, "us"),
    np.array(np.timedelta64(30, "m")),  # a 0-d array, what numpy reductions give
])
def test_a_numpy_timedelta64_deadline_is_read_as_its_seconds_in_any_unit(value: object) -> None:
    assert RecommendRequest(profile=EXAMPLE, target=0.94, deadline_s=value).deadline_s == 1800.0


def test_a_numpy_timedelta64_startup_and_elapsed_are_read_as_seconds() -> None:
    req = RecommendRequest(profile=EXAMPLE, target=0.94, startup_s=np.timedelta64(90, "s"))
    assert req.startup_s == 90.0
    assert Progress(**{**PROGRESS, "elapsed_s": np.timedelta64(2, "m")}).elapsed_s == 120.0


@pytest.mark.parametrize(("value", "needle"), [
    (np.timedelta64("NaT"), "NaT"),
    (np.timedelta64(1, "Y"), "fixed length"),  # a year has no fixed number of seconds
])
def test_a_timedelta64_that_is_no_fixed_duration_is_refused_at_the_field(value: object, needle: str) -> None:
    with pytest.raises(InputError, match=needle) as info:
        RecommendRequest(profile=EXAMPLE, target=0.94, deadline_s=value)
    assert info.value.where == "/deadline_s"


def test_a_timedelta64_where_a_number_belongs_is_refused_not_read_as_its_count() -> None:
    with pytest.raises(InputError, match=r"/target: must be a finite number, got a timedelta64\[ns\]"):
        RecommendRequest(profile=EXAMPLE, target=np.timedelta64(5, "ns"))


def test_excerpt_of_a_numpy_timedelta64_names_it_without_failing() -> None:
    assert excerpt(np.timedelta64(1800, "s")) == "a timedelta64[s] (1800 seconds)"


# --- replan's default cap, the same through every door (docs/request.md) -------------------------


def test_a_replan_request_without_a_cap_gets_replans_default_of_64() -> None:
    rr = ReplanRequest(request=RecommendRequest(profile=EXAMPLE, target=0.94, deadline_s=660),
                       progress=Progress(**PROGRESS))
    assert rr.request.cap_for("t4") == 64


def test_a_replan_request_with_a_per_gpu_cap_gets_64_for_the_types_it_leaves_unnamed() -> None:
    rr = ReplanRequest(request=RecommendRequest(profile=EXAMPLE, target=0.94, deadline_s=660, max_workers={"v100": 8}),
                       progress=Progress(**PROGRESS))
    assert rr.request.cap_for("t4") == 64 and rr.request.cap_for("v100") == 8


def test_a_replan_request_tells_a_stated_cap_of_16_from_an_unstated_one() -> None:
    def cap(**stated: object) -> int:
        rr = ReplanRequest(request=RecommendRequest(profile=EXAMPLE, target=0.94, deadline_s=660, **stated),
                           progress=Progress(**PROGRESS))
        return rr.request.cap_for("t4")

    assert (cap(max_workers=16), cap()) == (16, 64)


def test_the_keyword_door_and_a_replan_request_give_the_same_plan(cifar_models: object) -> None:
    kw = dict(target=0.94, deadline_s=660, objective="time")
    by_keywords = cotune.replan(EXAMPLE, progress=Progress(**PROGRESS), models=cifar_models, **kw)
    request = ReplanRequest(request=RecommendRequest(profile=EXAMPLE, **kw), progress=Progress(**PROGRESS))
    by_request = cotune.replan(request, models=cifar_models)
    assert by_request.best is not None and by_keywords.best is not None
    assert (by_request.best.workers, by_request.best.local_batch) == (by_keywords.best.workers, by_keywords.best.local_batch)


# --- replan's other doors ---------------------------------------------------------------------


def test_replan_takes_a_recommend_request_and_a_progress(cifar_models: object) -> None:
    result = cotune.replan(RecommendRequest(profile=EXAMPLE, target=0.94, deadline_s=660),
                           progress=PROGRESS, models=cifar_models)
    assert result.decision in ("stay", "switch", "infeasible")


def test_replans_unknown_keyword_lists_replans_own_keywords() -> None:
    with pytest.raises(InputError) as info:
        cotune.replan(EXAMPLE, target=0.94, deadline_s=660, progress=PROGRESS, xyzzy=1)
    known = str(info.value).split("known are ", 1)[1].split(", ")
    assert {"progress", "margin", "restart_s", "lr_rule", "job"} <= set(known)
    assert not {"workers", "top", "pareto_limit", "baseline_workers"} & set(known)


def test_replans_unknown_keyword_near_a_rule_keyword_names_it() -> None:
    with pytest.raises(InputError, match="did you mean 'margin'"):
        cotune.replan(EXAMPLE, target=0.94, deadline_s=660, progress=PROGRESS, margn=0.1)


def test_load_profile_reads_a_profile_ref() -> None:
    assert cotune.load_profile(cotune.ProfileRef(example="yolov3-voc")).workload.name == "yolov3-voc"


def test_read_profile_of_a_bundled_name_says_it_takes_a_path() -> None:
    with pytest.raises(cotune.ProfileNotFoundError, match=r"read_profile takes a file path; load_profile\('cifar10-resnet18'\)"):
        cotune.read_profile(EXAMPLE)


# --- SearchSpace and enumerate_candidates (docs/models.md): bounded like every door --------------


def test_enumerate_candidates_refuses_a_space_over_its_limit_before_allocating() -> None:
    space = SearchSpace(gpus=("t4",), max_workers={"t4": 10**12}, local_batches={"t4": (64,)})
    with pytest.raises(SearchSpaceTooLarge, match="over the limit of 1,000,000"):
        enumerate_candidates(space)


def test_enumerate_candidates_takes_a_limit_of_its_own() -> None:
    space = SearchSpace(gpus=("t4",), max_workers={"t4": 16}, local_batches={"t4": (64, 128)})
    assert len(enumerate_candidates(space, limit=32)) == 32
    with pytest.raises(SearchSpaceTooLarge):
        enumerate_candidates(space, limit=31)


@pytest.mark.parametrize(("change", "needle"), [
    ({"local_batches": {"t4": (0,)}}, r"local_batches\['t4'\]: must be a whole number >= 1, got 0"),
    ({"max_workers": {"t4": 10**16}}, r"max_workers\['t4'\]: must be a whole number >= 1 \(at most 1e\+15"),
    ({"max_workers": {"t4": 2.5}}, r"max_workers\['t4'\]: must be a whole number >= 1, got 2.5"),
    ({"gpus_per_host": 0}, r"gpus_per_host\['t4'\]: must be a whole number >= 1, got 0"),
    ({"workers": (0, 4)}, r"workers: must be a whole number >= 1, got 0"),
    ({"max_workers": {}}, r"max_workers has no entry for gpu 't4'"),
])
def test_a_search_space_refuses_counts_and_batches_out_of_bounds(change: dict, needle: str) -> None:
    given = {"gpus": ("t4",), "max_workers": {"t4": 16}, "local_batches": {"t4": (64,)}, **change}
    with pytest.raises(InputError, match=needle):
        SearchSpace(**given)


# --- errors as cotune's classes, and their documents --------------------------------------------


def test_error_document_of_an_infeasible_error_is_infeasible_not_internal() -> None:
    from cotune.api import error_document

    doc = error_document(InfeasibleError("nothing is feasible, so there is no job to render"))
    assert doc["error"] == {"code": "infeasible", "message": "nothing is feasible, so there is no job to render", "path": None}


def test_write_profile_of_a_non_profile_is_an_input_error_naming_it(tmp_path) -> None:
    with pytest.raises(InputError, match="write_profile writes a Profile .*got 'x'"):
        cotune.write_profile("x", tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


@pytest.mark.parametrize(("args", "kw", "where"), [
    (("x", [1.0]), {"increasing": True}, "coords"),
    ((np.array([[0, 0], [1, 1]]), np.array([1.0])), {"increasing": (True, True)}, "y"),
    ((np.array([[0, 0], [1, 1]]), np.array([1.0, 2.0])), {"increasing": (True,)}, "increasing"),
    ((np.array([[0], [1]]), np.array([np.nan, 2.0])), {"increasing": True}, "y"),
    ((np.array([0, 1]), np.array([1.0, 2.0]), np.array([1.0])), {"increasing": True}, "w"),
])
def test_isotonic_grid_bad_arguments_are_input_errors_naming_the_argument(args: tuple, kw: dict, where: str) -> None:
    with pytest.raises(InputError) as info:
        cotune.isotonic_grid(*args, **kw)
    assert info.value.where == where and str(info.value).startswith(f"{where}: ")


# --- the CLI: an abbreviated required option is named (docs/cli.md) ------------------------------


def test_an_abbreviated_required_option_is_named_as_not_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "replan", EXAMPLE, "--targ", "0.9", "--deadline", "1h")
    assert code == 2 and "--targ is not --target: options are written in full" in err


def test_an_abbreviated_required_profiler_option_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _cli(capsys, "profile", "--work", "x", "--out", "p.jsonl")
    assert code == 2 and "--work is not --workload: options are written in full" in err


# Type hints resolving at run time (typeguard, pydantic, sphinx autodoc): for the whole public
# surface, tests/core/test_public_api_typing.py.
