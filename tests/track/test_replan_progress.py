"""Re-planning from the job's own tracked records: forecast, remaining work, nearest, budget, doors."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

import cotune
from cotune.errors import InputError
from cotune.examples import example_path
from cotune.profile import EvalRecord, StepRecord, append_records, read_profile

TARGET = 0.94


def _job_profile(dst: Path, *, stretch: float = 1.0, up_to_epoch: float = 15.0, job: str = "run1",
                 metric_drop: float = 0.0) -> Path:
    """The CIFAR-10 profile plus a tracked job at 4 x 128 whose curve is the measured one at
    global batch 512, its epochs stretched by ``stretch`` (a job slower to learn) and its
    metric lowered by ``metric_drop`` (a job that plateaus lower)."""
    shutil.copy(example_path("cifar10-resnet18"), dst)
    p = read_profile(dst)
    step = next(s for s in p.steps if (s.workers, s.hosts, s.local_batch) == (4, 1, 129))
    curve = [e for e in p.evals if e.global_batch == 512 and e.epoch * stretch <= up_to_epoch]
    per_epoch_s = 50_000 / 512 * step.step_time_s
    recs = [StepRecord(gpu="t4", workers=4, hosts=1, local_batch=128, step_time_s=step.step_time_s, job=job, timed_steps=100)]
    recs += [EvalRecord(global_batch=512, epoch=e.epoch * stretch, metric=e.metric - metric_drop, job=job,
                        elapsed_s=e.epoch * stretch * per_epoch_s) for e in curve]
    append_records(dst, recs)
    return dst


@pytest.fixture(scope="module")
def job_path(tmp_path_factory) -> Path:
    return _job_profile(tmp_path_factory.mktemp("job") / "job.jsonl")


def _replan(path: Path, models, **kw):
    args = dict(target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16) | kw
    return cotune.replan(path, models=models, **args)


def test_progress_comes_from_the_tracked_records(job_path: Path, cifar_models) -> None:
    r = _replan(job_path, cifar_models)
    last = max(e.epoch for e in read_profile(job_path).evals if e.job == "run1")
    assert r.job == "run1" and r.epochs_done == pytest.approx(last)
    assert r.forecast is not None and r.forecast.source == "curve+prior"
    assert r.progress_fraction == pytest.approx(last / (last + r.stay.epochs))
    assert r.stay.workers == 4 and r.stay.local_batch == 128


def test_a_tracked_jobs_repeated_evaluations_give_the_same_answer(tmp_path: Path, job_path: Path, cifar_models) -> None:
    # The job's records written twice (a profile concatenated with itself) doubled the curve's
    # points (10 -> 20) and moved the forecast, the chances and the progress; the fit counted
    # such repeats once already.
    twice = shutil.copy(job_path, tmp_path / "twice.jsonl")
    append_records(twice, [e for e in read_profile(job_path).evals if e.job == "run1"])
    once, again = _replan(job_path, cifar_models).to_dict(), _replan(twice, cifar_models).to_dict()
    before = once.pop("notes")
    extra = [n for n in again.pop("notes") if n not in before]
    assert again == once
    assert len(extra) == 1 and "job 'run1'" in extra[0] and "counted once" in extra[0]


@pytest.fixture(scope="module")
def past_median_path(tmp_path_factory) -> Path:
    """A job at 4 x 128 past its curve's median to PAST_MEDIAN_TARGET without reaching it:
    the measured curve at 512 to epoch 100, 0.004 lower (it peaks at 0.942)."""
    return _job_profile(tmp_path_factory.mktemp("past") / "past.jsonl", up_to_epoch=100.0, metric_drop=0.004)


PAST_MEDIAN_TARGET = 0.943


def _past_median(path: Path, models):
    r = _replan(path, models, target=PAST_MEDIAN_TARGET)
    f = r.forecast
    # the case itself: the curve's median given reached lies at the epochs seen, not reached
    assert f is not None and not f.reached and f.epochs_if_reached <= f.epochs_seen + 1e-9
    return r


def test_a_job_past_its_curves_median_without_the_target_has_work_left(past_median_path: Path, cifar_models) -> None:
    r = _past_median(past_median_path, cifar_models)
    # It read 1.0 ("100% of the work done") beside a STAY row with epochs left.
    assert r.stay.epochs > 0 and r.progress_fraction < 1.0
    assert r.progress_fraction == pytest.approx(r.epochs_done / (r.epochs_done + r.stay.epochs))


def test_the_forecast_note_is_given_the_target_not_reached_yet(past_median_path: Path, cifar_models) -> None:
    from cotune.units import format_chance

    r = _past_median(past_median_path, cifar_models)
    note = next(n for n in r.notes if n.startswith("the job's own curve"))
    # It forecast the target at the epochs already seen, at the unconditional chance (0.93
    # beside the STAY row's 0.88): now where the STAY row's epochs end, at its chance.
    assert f"given the target not reached by epoch {r.epochs_done:.3g}" in note
    assert f"forecasts it at epoch {r.epochs_done + r.stay.epochs:.3g}" in note
    assert f"staying's P(success) is {format_chance(r.stay.p_success)}" in note
    assert f"its median without that condition, epoch {r.forecast.epochs_if_reached:.3g}, is already past" in note


@pytest.mark.slow
def test_the_cli_table_and_json_report_one_progress(past_median_path: Path, capsys) -> None:
    from cotune.cli import main

    args = ["replan", str(past_median_path), "--target", str(PAST_MEDIAN_TARGET), "--deadline", "3h",
            "--price", "t4=0.526", "--max-workers", "16"]
    assert main([*args, "--json"]) == 0
    progress = json.loads(capsys.readouterr().out)["progress_fraction"]
    assert main(args) == 0
    assert f"· {progress:.0%} of the work done" in capsys.readouterr().out
    assert progress < 0.995  # it read 1.0, "100% of the work done", with epochs left


def test_stay_is_the_median_of_the_job_forecast_given_the_target_is_not_reached_yet(job_path: Path, cifar_models) -> None:
    from scipy.stats import norm

    from cotune.solver import Candidates, estimate

    r = _replan(job_path, cifar_models)
    last, fc = r.epochs_done, r.forecast
    one = lambda v: np.array([v])  # noqa: E731
    row = Candidates(gpus=("t4",), markets=("on_demand",), gpu=one(0), market=one(0), workers=one(4), hosts=one(1),
                     local_batch=one(128))
    step_sigma = float(estimate(row, cifar_models, target=TARGET, price_per_hour=np.array([[0.526]])).step_log_sigma[0])
    sigma = math.hypot(fc.log_sigma, step_sigma)
    # Total epochs log-normal around the job's forecast, conditioned on E > epochs done:
    # P(E > x | E > d) = ½ at the conditional median x.
    survive = norm.sf((math.log(last) - math.log(fc.epochs_if_reached)) / sigma)
    median = fc.epochs_if_reached * math.exp(sigma * norm.isf(survive / 2))
    assert r.stay.epochs == pytest.approx(median - last, rel=1e-6)
    assert r.stay.epochs >= fc.epochs_if_reached - last - 1e-9  # not reached by now is evidence of more work


def test_a_job_slower_to_learn_than_the_model_has_more_work_left(tmp_path: Path, job_path: Path, cifar_models) -> None:
    slow = _job_profile(tmp_path / "slow.jsonl", stretch=1.6, up_to_epoch=24.0)
    fast, late = _replan(job_path, cifar_models), _replan(slow, cifar_models)
    assert late.forecast.epochs_if_reached > fast.forecast.epochs_if_reached
    assert late.stay.time_s > fast.stay.time_s


def test_a_deadline_nothing_meets_is_infeasible_and_names_the_nearest(job_path: Path, cifar_models) -> None:
    r = _replan(job_path, cifar_models, deadline_s=200.0)
    assert r.decision == "infeasible" and r.nearest is not None and "the nearest is" in r.reason
    others = [c for c in (r.stay, r.best) if c is not None]
    assert all(r.nearest.time_s <= c.time_s + 1e-9 for c in others)
    assert r.to_dict()["nearest"]["workers"] == r.nearest.workers



def test_an_infeasible_answer_names_a_deadline_that_is_enough(job_path: Path, cifar_models) -> None:
    import re

    from cotune.units import parse_duration

    r = _replan(job_path, cifar_models, deadline_s=200.0)
    found = re.search(r"relax the deadline \(--deadline / deadline_s\) to at least (\S+) from the job.s start", r.reason)
    assert r.decision == "infeasible" and found, r.reason
    needed = parse_duration(found.group(1))
    assert needed > 200.0
    assert _replan(job_path, cifar_models, deadline_s=needed).decision in ("stay", "switch")


@pytest.mark.slow
def test_the_budget_left_after_spending_bounds_every_option(job_path: Path, cifar_models) -> None:
    free = _replan(job_path, cifar_models)
    need = min(c.cost for c in (free.stay, free.best) if c is not None)
    r = _replan(job_path, cifar_models, budget=1.0, progress={"spent": 1.0 - 0.5 * need})
    assert r.budget_left == pytest.approx(0.5 * need) and r.decision == "infeasible"
    ok = _replan(job_path, cifar_models, budget=1.0, progress={"spent": 0.1})
    assert ok.decision in ("stay", "switch") and ok.chosen.cost <= 0.9


def test_the_chance_of_every_option_counts_the_budget_left(job_path: Path, cifar_models) -> None:
    # As in `recommend`, a budget is met at the confidence: P(success) is of ending by the
    # deadline *and* within the budget left, so it falls as the budget left shrinks toward
    # the option's own median cost, and a budget far above it changes nothing.
    free = _replan(job_path, cifar_models)
    assert free.stay is not None
    need = free.stay.cost
    chances = [_replan(job_path, cifar_models, budget=0.1 + k * need, progress={"spent": 0.1}).stay.p_success
               for k in (100.0, 1.3, 1.0, 0.8)]
    assert chances[0] == pytest.approx(free.stay.p_success, abs=1e-9)
    assert chances[0] > chances[1] > chances[2] > chances[3]
    assert chances[2] < 0.75  # at its median remaining cost, about an even chance (given reached)


def test_a_switch_that_changes_the_batch_reports_the_learning_rate_factor(job_path: Path, cifar_models) -> None:
    r = _replan(job_path, cifar_models, margin=0.0, lr_rule="linear", restart_s=0.0)
    assert r.decision == "switch"
    if "change_batch" in r.changes:
        assert r.lr_scale == pytest.approx(r.best.global_batch / 512)
    else:
        assert r.lr_scale is None


def test_a_reached_target_means_nothing_is_left(tmp_path: Path, cifar_models) -> None:
    done = _job_profile(tmp_path / "done.jsonl", up_to_epoch=200.0)
    r = cotune.replan(done, models=cifar_models, target=0.9, deadline_s=3 * 3600, prices={"t4": 0.526})
    assert r.decision == "stay" and r.forecast.reached and "stop training" in r.reason
    assert r.progress_fraction == 1.0
    # and the STAY row shows nothing left (it showed the model's epochs, time and cost still to go)
    assert (r.stay.epochs, r.stay.time_s, r.stay.cost, r.stay.p_success) == (0.0, 0.0, 0.0, 1.0)
    assert r.best is None and r.gain is None  # nothing to move to (BEST showed work left, gain -its cost)


def test_without_tracked_records_progress_must_be_given(cifar_models) -> None:
    with pytest.raises(cotune.InputError, match="no tracked records of a running job"):
        cotune.replan("cifar10-resnet18", models=cifar_models, target=TARGET, deadline_s=3600)


@pytest.mark.parametrize("given, said", [
    ({"epochs_done": -1}, "/progress/epochs_done: must be a finite number >= 0, got -1"),
    ({"epochs_done": 3, "elapsed_s": -5}, "/progress/elapsed_s: must be a finite number >= 0, got -5"),
    ({"gpu": "t4", "market": "bogus"}, "/progress/market: must be one of"),
])
def test_a_bad_progress_value_is_named_before_the_fields_left_to_the_records(cifar_models, given, said) -> None:
    # {"epochs_done": -1} alone was told "'elapsed_s' is not given": the -1 was named only
    # once every other field was given.
    from cotune.api import RequestError, replan_request

    with pytest.raises(cotune.InputError, match=re.escape(said)):
        cotune.replan("cifar10-resnet18", models=cifar_models, target=TARGET, deadline_s=3600, progress=given)
    with pytest.raises(RequestError, match=re.escape(said)):
        replan_request({"profile": "cifar10-resnet18", "target": TARGET, "deadline_s": 3600, "progress": given})


def test_without_a_cluster_file_the_market_is_on_demand_unless_stated_at_every_door(cifar_models, capsys) -> None:
    # Without a cluster file only on-demand servers are searched (spot needs revocation
    # rates): a job's market left out was refused ("'market' is not given") at all three doors.
    from cotune.api import replan_request
    from cotune.cli import main

    given = dict(gpu="t4", workers=2, local_batch=257, epochs_done=30, elapsed_s=600)
    py = cotune.replan("cifar10-resnet18", models=cifar_models, target=TARGET, deadline_s=2400, max_workers=16,
                       prices={"t4": 0.526}, progress=given)
    stated = cotune.replan("cifar10-resnet18", models=cifar_models, target=TARGET, deadline_s=2400, max_workers=16,
                           prices={"t4": 0.526}, progress=dict(given, market="on_demand"))
    assert py.stay.market == "on_demand" and py.to_dict() == stated.to_dict()
    doc = replan_request({"profile": "cifar10-resnet18", "target": TARGET, "deadline_s": 2400, "max_workers": 16,
                          "prices": {"t4": 0.526}, "progress": given})
    assert doc["stay"] == py.to_dict()["stay"]
    code = main(["replan", "cifar10-resnet18", "--target", str(TARGET), "--deadline", "40m", "--max-workers", "16",
                 "--price", "t4=0.526", "--current", "t4:2:257", "--epochs-done", "30", "--elapsed", "10m", "--json"])
    out = capsys.readouterr().out
    assert code == 0 and json.loads(out)["stay"] == doc["stay"]
    # With a cluster file the market is not implied: spot or on demand must be said.
    with pytest.raises(cotune.InputError, match="with a cluster file the market is not implied"):
        cotune.replan("cifar10-resnet18", models=cifar_models, target=TARGET, deadline_s=2400,
                      cluster={"version": 1, "gpu": {"t4": {"on_demand": 16, "on_demand_price_per_hour": 0.526}}},
                      progress=given)


def test_http_request_without_progress_reads_it_from_inline_records(job_path: Path) -> None:
    from cotune.api import parse_replan_request

    records = [json.loads(line) for line in job_path.read_text().splitlines() if line.strip()]
    rr = parse_replan_request({"profile": {"records": records}, "target": TARGET, "deadline_s": 10800,
                               "progress": {"elapsed_s": 200, "spent": 0.05}, "budget": 2, "lr_rule": "linear"})
    assert (rr.progress.gpu, rr.progress.workers, rr.progress.local_batch) == ("t4", 4, 128)
    assert rr.progress.elapsed_s == 200 and rr.progress.spent == 0.05 and rr.lr_rule == "linear"
    assert rr.request.cluster is None and rr.request.budget == 2


@pytest.mark.slow
def test_cli_replan_from_tracked_records_answers_the_response_schema(job_path: Path, capsys) -> None:
    import jsonschema

    from cotune.api import schema
    from cotune.cli import main

    rc = main(["replan", str(job_path), "--target", "0.94", "--deadline", "3h", "--price", "t4=0.526",
               "--max-workers", "16", "--spent", "0.01", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["job"] == "run1" and out["spent"] == 0.01
    jsonschema.validate({"schema_version": 1, **out} if "schema_version" not in out else out, schema("replan-response.v1"))
    assert math.isfinite(out["forecast"]["epochs_if_reached"]) and np.isfinite(out["progress_fraction"])


@pytest.mark.slow
def test_post_v1_replan_reads_progress_from_the_records_and_refuses_a_bad_rule(job_path: Path) -> None:
    import sys

    import httpx

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scheduler"))
    from sched_server import running_server

    records = [json.loads(line) for line in job_path.read_text().splitlines() if line.strip()]
    body = {"profile": {"records": records}, "target": TARGET, "deadline_s": 10800, "prices": {"t4": 0.526},
            "max_workers": 16, "progress": {"elapsed_s": 300}}
    scheduled = body | {"progress": {"elapsed_s": 300, "schedule_epochs": 200}}
    with running_server() as url:
        ok = httpx.post(url + "/v1/replan", json=body, timeout=120)
        bad = httpx.post(url + "/v1/replan", json=body | {"lr_rule": "cubic"}, timeout=120)
        sched = httpx.post(url + "/v1/replan", json=scheduled, timeout=120)
        bad_sched = httpx.post(url + "/v1/replan", json=body | {"progress": {"schedule_epochs": -1}}, timeout=120)
    assert ok.status_code == 200, ok.text
    doc = ok.json()
    assert doc["decision"] in ("stay", "switch") and doc["job"] == "run1" and doc["forecast"]["source"] == "curve+prior"
    assert 400 <= bad.status_code < 500 and "lr_rule" in bad.text
    assert sched.status_code == 200 and any("schedule ends at epoch 200" in n for n in sched.json()["notes"])
    assert 400 <= bad_sched.status_code < 500 and "schedule_epochs" in bad_sched.text


def test_a_service_reads_tracked_records_by_path_only_inside_its_profile_dir(job_path: Path) -> None:
    from cotune.api import RequestError, replan_request

    body = {"profile": {"path": str(job_path)}, "target": TARGET, "deadline_s": 10800}
    with pytest.raises(RequestError, match="profiles by path are disabled") as info:
        replan_request(body)  # no profile_dir: the file is never opened for its progress either
    assert info.value.status == 403


def test_a_revocation_on_spot_feeds_the_same_decision(job_path: Path, cifar_models) -> None:
    cluster = str(Path(__file__).resolve().parents[2] / "examples" / "cluster.toml")
    r = cotune.replan(job_path, models=cifar_models, target=TARGET, deadline_s=3 * 3600, cluster=cluster,
                      progress={"market": "spot", "workers_lost": 2})
    assert r.stay is not None and r.stay.workers == 2 and r.stay.market == "spot"
    assert r.forecast is not None and r.forecast.source == "curve+prior" and r.decision in ("stay", "switch")


def test_a_schedule_that_ends_soon_lowers_the_chance_of_staying(job_path: Path, cifar_models) -> None:
    open_end = _replan(job_path, cifar_models)
    last = open_end.epochs_done
    soon = _replan(job_path, cifar_models, progress={"schedule_epochs": last + 1.0})
    later = _replan(job_path, cifar_models, progress={"schedule_epochs": last + 40.0})
    assert soon.stay.p_success < later.stay.p_success <= open_end.stay.p_success + 1e-9
    # The job needs tens of epochs more; one is left in its schedule: it is reached within it
    # with about its P(success), and then within that one epoch; no confidence above it is met.
    assert soon.stay.p_success < 0.05 and soon.stay.p_reach == pytest.approx(soon.stay.p_success, rel=1e-6)
    assert soon.stay.epochs <= 1.0 + 1e-9 and soon.stay.epochs_interval[1] <= 1.0 + 1e-9
    assert soon.stay.time_at_confidence_s == math.inf
    assert open_end.stay.epochs > 5.0
    assert any("schedule ends at epoch" in n for n in soon.notes)


def test_staying_is_weighed_with_a_smaller_batch_to_move_to_once_its_schedule_ends(job_path: Path, cifar_models) -> None:
    last = _replan(job_path, cifar_models).epochs_done
    r = _replan(job_path, cifar_models, progress={"schedule_epochs": last + 40.0})
    note = next(n for n in r.notes if "weighed with that fallback" in n)
    weighed = float(re.search(r"P\(success\) ([0-9.]+) at an expected cost", note).group(1))
    moved = re.search(r"move to (\d+) x t4 on_demand at local batch (\d+)", note)  # named as the rows are
    assert weighed >= r.stay.p_success + 0.01  # the STAY row keeps staying alone
    assert int(moved[1]) * int(moved[2]) < 4 * 128  # a smaller global batch than the job's
    # A schedule that runs past the deadline leaves no time to move after it: staying alone.
    far = _replan(job_path, cifar_models, progress={"schedule_epochs": last + 2000.0})
    assert not any("weighed with that fallback" in n for n in far.notes)


def test_a_job_past_its_schedule_end_cannot_succeed_by_staying(job_path: Path, cifar_models) -> None:
    r = _replan(job_path, cifar_models)
    past = _replan(job_path, cifar_models, progress={"schedule_epochs": 0.5 * r.epochs_done})
    assert past.stay.p_success == 0.0 and past.decision != "stay"


def test_a_schedule_end_that_is_not_a_positive_number_is_refused_at_every_door(job_path: Path, capsys) -> None:
    from cotune.api import RequestError, replan_request
    from cotune.cli import main
    from cotune.errors import InputError

    with pytest.raises(InputError, match="schedule_epochs"):
        cotune.replan(job_path, target=TARGET, deadline_s=10800, progress={"schedule_epochs": 0})
    rc = main(["replan", str(job_path), "--target", "0.94", "--deadline", "3h", "--schedule-epochs", "-3"])
    err = capsys.readouterr().err
    assert rc == 2 and "--schedule-epochs" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    records = [json.loads(line) for line in job_path.read_text().splitlines() if line.strip()]
    body = {"profile": {"records": records}, "target": TARGET, "deadline_s": 10800, "progress": {"schedule_epochs": "ten"}}
    with pytest.raises(RequestError) as info:
        replan_request(body)
    assert 400 <= info.value.status < 500 and "/progress/schedule_epochs" in str(info.value)


def test_a_tracked_schedule_end_reaches_replan_from_the_records(tmp_path: Path, cifar_models) -> None:
    path = _job_profile(tmp_path / "sched.jsonl")
    last = max(e.epoch for e in read_profile(path).evals if e.job == "run1")
    append_records(path, [EvalRecord(global_batch=512, epoch=last + 0.5, metric=0.5, job="run1", elapsed_s=100.0,
                                     schedule_epochs=last + 1.5)])
    from cotune.track import job_progress, progress_from_records

    assert job_progress(read_profile(path)).schedule_epochs == pytest.approx(last + 1.5)
    told = _replan(path, cifar_models)
    assert any("schedule ends at epoch" in n for n in told.notes)
    by_hand = _replan(path, cifar_models, progress={"schedule_epochs": last + 1.5})
    assert told.stay.p_success == pytest.approx(by_hand.stay.p_success)
    # A progress given in full is taken as given: the records are not read for it.
    full = progress_from_records(read_profile(path), epochs_done=10, elapsed_s=60, gpu="t4", market="on_demand",
                                 workers=4, local_batch=128)
    assert full.schedule_epochs is None


def test_several_tracked_jobs_without_a_choice_say_which_was_replanned(tmp_path: Path, cifar_models) -> None:
    path = _job_profile(tmp_path / "two.jsonl")
    append_records(path, [StepRecord(gpu="t4", workers=8, hosts=2, local_batch=128, step_time_s=0.3, job="run2", timed_steps=50),
                          EvalRecord(global_batch=1024, epoch=1.0, metric=0.4, job="run2", elapsed_s=60.0)])
    r = _replan(path, cifar_models)
    assert r.job == "run2"
    assert any("jobs 'run1', 'run2': re-planned 'run2', the last tracked" in n for n in r.notes), r.notes
    chosen = _replan(path, cifar_models, job="run1")
    assert chosen.job == "run1" and not any("the last tracked" in n for n in chosen.notes)


def test_after_a_change_of_batch_the_tracked_epochs_are_placed_at_the_new_batch(tmp_path: Path, cifar_models) -> None:
    # The tracker counts epochs from the job's start across the change (512 -> 1024 at epoch
    # 15); replan reads them at 1024 from where the hand-over put the job, not from 15.
    from cotune.solver import job_frame

    path = _job_profile(tmp_path / "moved.jsonl")
    p = read_profile(path)
    step = next(s for s in p.steps if (s.workers, s.hosts, s.local_batch) == (8, 2, 129))
    last = max(e.metric for e in p.evals if e.job == "run1")
    append_records(path, [
        StepRecord(gpu="t4", workers=8, hosts=2, local_batch=128, step_time_s=step.step_time_s, job="run1", timed_steps=100),
        EvalRecord(global_batch=1024, epoch=16.0, metric=last + 0.001, job="run1"),
        EvalRecord(global_batch=1024, epoch=17.0, metric=last + 0.002, job="run1"),
    ])
    r = _replan(path, cifar_models)
    frame = job_frame(cifar_models, evals=[e for e in read_profile(path).evals if e.job == "run1"], global_batch=1024,
                      epochs_done=17.0, target=TARGET, goal="max")
    d, at = frame.handovers[0].epoch, frame.handovers[0].at_epoch  # at: the last evaluation at 512
    assert at == max(e.epoch for e in p.evals if e.job == "run1")
    assert d != pytest.approx(at)  # epochs at 1024 are not epochs at 512
    assert r.epochs_done == pytest.approx(17.0)  # the job's own count, as tracked
    assert r.forecast is not None and r.forecast.epochs_seen == pytest.approx(d + 17.0 - at)
    assert r.progress_fraction == pytest.approx((d + 17.0 - at) / (d + 17.0 - at + r.stay.epochs))
    assert any(f"changed global batch 512 -> 1024 at its epoch {at:.3g}" in n for n in r.notes)


def test_a_tracked_job_that_moved_counts_a_miss_as_the_job_redone_where_it_started(tmp_path: Path, cifar_models) -> None:
    # cotune.solver.miss_cost: spent plus the whole job at the configuration of the job's
    # first step record (4 x 128 here), not at the one it runs after it added workers.
    path = _job_profile(tmp_path / "moved.jsonl")
    append_records(path, [StepRecord(gpu="t4", workers=8, hosts=2, local_batch=128, step_time_s=0.3, job="run1",
                                     timed_steps=50)])
    told = _replan(path, cifar_models, progress={"spent": 1.5})
    note = next(n for n in told.notes if n.startswith("a miss is counted as wasting"))
    assert "it started at (4 x t4 on_demand, local batch 128)" in note
    from cotune import recommend

    whole = recommend("cifar10-resnet18", models=cifar_models, target=TARGET, workers=(4,), local_batches=(128,),
                      prices={"t4": 0.526}).chosen.cost
    assert f"wasting {1.5 + whole:.4g}" in note and f"plus {whole:.4g}, the whole job" in note


def test_a_tracked_job_that_moved_back_switches_only_for_a_backed_off_margin(tmp_path: Path, cifar_models) -> None:
    # cotune.solver.backoff_margin: 4 x 128 -> 8 x 128 -> 4 x 128 is one return, so the 5 %
    # margin is 10 % and a better chance must beat staying's by 0.10.
    path = _job_profile(tmp_path / "back.jsonl")
    for workers, hosts in ((8, 2), (4, 1)):
        append_records(path, [StepRecord(gpu="t4", workers=workers, hosts=hosts, local_batch=128, step_time_s=0.3,
                                         job="run1", timed_steps=50)])
    r = _replan(path, cifar_models)
    assert r.margin == pytest.approx(0.10)
    note = next(n for n in r.notes if n.startswith("the job has moved back"))
    assert "by choice 1 time(s): a switch must save more than 10% (the 5% margin doubled each time, at most 50%)" in note
    assert "beat staying's by 0.10" in note
    plain = _replan(_job_profile(tmp_path / "plain.jsonl"), cifar_models)
    assert plain.margin == pytest.approx(0.05) and not any(n.startswith("the job has moved back") for n in plain.notes)


def test_a_tracked_job_back_from_a_revocation_keeps_the_plain_margin(tmp_path: Path, cifar_models) -> None:
    # 4 x 128 -> 2 x 128 (two workers revoked) -> 4 x 128 (replaced): recovery, not a return.
    path = _job_profile(tmp_path / "revoked.jsonl")
    for workers, cause in ((2, "revocation"), (4, "replan")):
        append_records(path, [StepRecord(gpu="t4", workers=workers, hosts=1, local_batch=128, step_time_s=0.3,
                                         job="run1", timed_steps=50, cause=cause)])
    r = _replan(path, cifar_models)
    assert r.margin == pytest.approx(0.05) and not any(n.startswith("the job has moved back") for n in r.notes)


@pytest.mark.slow  # cotune fit's cross-validation refits the models: several seconds
def test_a_job_tracked_for_one_evaluation_at_a_new_batch_keeps_every_door_answering(tmp_path: Path, capsys) -> None:
    # A just-started job: one evaluation, at a global batch no probe curve has and an epoch
    # between two columns of the accuracy model's epoch grid. Its batch's surface row was
    # all NaN, and 'cotune fit' and an infeasible 'recommend' (its hints) raised IndexError.
    from cotune.cli import main

    dst = tmp_path / "fresh.jsonl"
    shutil.copy(example_path("cifar10-resnet18"), dst)
    append_records(dst, [StepRecord(gpu="t4", workers=3, hosts=1, local_batch=100, step_time_s=0.2, job="run1",
                                    timed_steps=100),
                         EvalRecord(global_batch=300, epoch=1.37, metric=0.41, job="run1", elapsed_s=60.0)])
    assert main(["fit", str(dst), "--no-cache"]) == 0
    rc = main(["recommend", str(dst), "--target", "0.94", "--deadline", "1m", "--price", "t4=0.526", "--no-cache"])
    err = capsys.readouterr().err
    assert rc == 1 and "Traceback" not in err  # infeasible, with its hints


def _oom_record(local_batch: int = 128):
    from cotune.profile import FailureRecord

    return FailureRecord(gpu="t4", workers=4, hosts=1, local_batch=local_batch, failure="oom", message="CUDA out of memory")


def test_a_job_that_ran_out_of_memory_where_it_runs_is_moved_below_that_batch(tmp_path: Path) -> None:
    path = _job_profile(tmp_path / "oom.jsonl")
    append_records(path, [_oom_record()])  # the tracker's record, after the job's steps at 128
    r = cotune.replan(path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16)
    assert r.decision == "switch"
    assert r.reason == "the job ran out of memory at local batch 128 on t4: it cannot continue as it ran"
    assert r.stay is not None and r.stay.p_success == 0.0
    assert r.best is not None and r.best.local_batch < 128
    assert any("staying is not an option; every option runs a local batch below 128" in n for n in r.notes)


def test_an_out_of_memory_a_later_step_superseded_leaves_the_job_where_it_is(tmp_path: Path, job_path: Path) -> None:
    path = _job_profile(tmp_path / "retried.jsonl")
    head = path.read_text().splitlines(keepends=True)
    # the out-of-memory first (a probe of long ago), the job's steps at 128 after it
    path.write_text(head[0] + _oom_json() + "".join(head[1:]))
    r = cotune.replan(path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16)
    base = cotune.replan(job_path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16)
    assert not any("ran out of memory" in n for n in r.notes)
    assert (r.decision, r.stay.p_success) == (base.decision, base.stay.p_success)


def _oom_json() -> str:
    from cotune.profile import record_to_dict

    return json.dumps(record_to_dict(_oom_record())) + "\n"


def test_a_schedulers_replan_request_with_the_jobs_out_of_memory_inline_moves_it(tmp_path: Path) -> None:
    # The same answer through the JSON door (POST /v1/replan's function): the records inline.
    from cotune.api import replan_request

    path = _job_profile(tmp_path / "oom.jsonl")
    append_records(path, [_oom_record()])
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    out = replan_request({"profile": {"records": records}, "target": TARGET, "deadline_s": 10800,
                          "prices": {"t4": 0.526}, "max_workers": 16})
    assert out["decision"] == "switch" and "ran out of memory at local batch 128" in out["reason"]
    assert out["stay"]["p_success"] == 0.0 and out["best"]["local_batch"] < 128


def test_an_out_of_memory_the_profile_does_not_hold_is_reported_at_every_door(tmp_path: Path, job_path: Path,
                                                                               capsys) -> None:
    # Rank 1 ran out of memory: torchrun stopped rank 0, whose tracker wrote nothing, so the
    # re-plan said STAY at the batch that had just failed. The request now says so itself.
    from cotune.api import replan_request
    from cotune.cli import main

    before = job_path.read_bytes()
    r = cotune.replan(job_path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16,
                      progress={"out_of_memory": True})
    assert r.decision == "switch" and r.reason == "the job ran out of memory at local batch 128 on t4: it cannot continue as it ran"
    assert r.stay.p_success == 0.0 and r.best.local_batch < 128
    assert any("ran out of memory at local batch 128 on t4 (as the re-plan reports)" in n for n in r.notes)
    assert job_path.read_bytes() == before  # reported, not written: the profile stays as measured
    base = cotune.replan(job_path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16)
    assert not any("ran out of memory" in n for n in base.notes)
    records = [json.loads(line) for line in job_path.read_text().splitlines() if line.strip()]
    out = replan_request({"profile": {"records": records}, "target": TARGET, "deadline_s": 10800,
                          "prices": {"t4": 0.526}, "max_workers": 16, "progress": {"out_of_memory": True}})
    assert (out["decision"], out["best"]["local_batch"]) == ("switch", r.best.local_batch)
    code = main(["replan", str(job_path), "--target", str(TARGET), "--deadline", "3h", "--price", "t4=0.526",
                 "--max-workers", "16", "--out-of-memory", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["decision"] == "switch" and doc["best"]["local_batch"] == r.best.local_batch
    with pytest.raises(InputError, match="/progress/out_of_memory: must be true or false, got 'yes'"):
        replan_request({"profile": {"records": records}, "target": TARGET, "deadline_s": 10800,
                        "progress": {"out_of_memory": "yes"}})


def test_a_profile_with_only_the_jobs_own_curve_is_named_at_every_door(tmp_path: Path, capsys) -> None:
    # A job tracked into a fresh profile: "the profile has no eval records", of a profile holding three.
    from cotune.api import replan_request
    from cotune.cli import main
    from cotune.profile import Profile, WorkloadRecord, write_profile

    path = tmp_path / "job.jsonl"
    steps = tuple(StepRecord(gpu="t4", workers=4, hosts=1, local_batch=128, step_time_s=0.1, job="run1", timed_steps=50)
                  for _ in range(3))
    evals = tuple(EvalRecord(global_batch=512, epoch=float(k), metric=0.5 + 0.1 * k, job="run1", elapsed_s=60.0 * k)
                  for k in (1, 2, 3))
    write_profile(Profile(workload=WorkloadRecord(name="tiny", dataset_size=50_000, metric="acc"), steps=steps, evals=evals),
                  path)
    needle = "the profile's evaluations are all the running job's ('run1'): re-planning fits its accuracy model on an offline"
    with pytest.raises(cotune.InputError, match=re.escape(needle)):
        cotune.replan(path, target=0.9, deadline_s=3600)
    assert main(["replan", str(path), "--target", "0.9", "--deadline", "1h"]) == 2
    assert needle in capsys.readouterr().err
    records = [json.loads(line) for line in path.read_text().splitlines()]
    with pytest.raises(cotune.InputError) as info:  # the service answers an InputError with 422
        replan_request({"profile": {"records": records}, "target": 0.9, "deadline_s": 3600})
    assert needle in str(info.value)


def test_a_confidence_above_every_chance_of_reaching_asks_for_no_deadline(job_path: Path, cifar_models) -> None:
    # At 0.955 the job's curve reaches the target with about one chance in two, whatever the
    # deadline: "relax the deadline" (with no value, even at 100 days) was no help.
    r = _replan(job_path, cifar_models, target=0.955, deadline_s=100 * 86400, confidence=0.9)
    assert r.decision == "infeasible"
    assert "relax the deadline" not in r.reason and "no deadline is enough" in r.reason
    cap = float(re.search(r"to at most (0\.\d\d)", r.reason).group(1))
    assert 0.0 < cap < 0.9
    # The confidence it names is met.
    assert _replan(job_path, cifar_models, target=0.955, deadline_s=100 * 86400, confidence=cap).decision != "infeasible"


def test_a_job_whose_latest_evaluation_diverged_cannot_succeed_by_staying(tmp_path: Path, cifar_models) -> None:
    # A NaN evaluation added no progress and was otherwise ignored: the answer said "stay" at
    # the chance the job had before it diverged.
    path = _job_profile(tmp_path / "job.jsonl")
    before = _replan(path, cifar_models)
    assert before.decision == "stay" and before.stay.p_success > 0.3
    last = [e for e in read_profile(path).evals if e.job == "run1"][-1]
    append_records(path, [EvalRecord(global_batch=512, epoch=last.epoch + 1.0, metric=math.nan, job="run1",
                                     elapsed_s=(last.elapsed_s or 0.0) + 60.0)])
    after = _replan(path, cifar_models)
    assert after.stay.p_success == 0.0 and after.decision != "stay"
    assert any(n.startswith("the job diverged") for n in after.notes)
    # The epoch it diverged at is no progress: the options resume from its last finite one.
    assert after.epochs_done == pytest.approx(last.epoch)


def test_a_job_whose_curve_collapsed_cannot_succeed_by_staying(tmp_path: Path, cifar_models) -> None:
    # Six evaluations at top-1 0.10 after the CIFAR-10 curve's 15 epochs read as a plateau of
    # it: "stay" at P(success) 0.9967, above the healthy job's 0.9737.
    path = _job_profile(tmp_path / "job.jsonl")
    before = _replan(path, cifar_models)
    own = [e for e in read_profile(path).evals if e.job == "run1"]
    best = max(own, key=lambda e: e.metric)
    append_records(path, [EvalRecord(global_batch=512, epoch=own[-1].epoch + 1.0 + i, metric=0.10, job="run1",
                                     elapsed_s=(own[-1].elapsed_s or 0.0) + 60.0 * (i + 1)) for i in range(6)])
    after = _replan(path, cifar_models)
    assert after.stay.p_success == 0.0 and after.decision != "stay"
    assert any(n.startswith("the job collapsed") and f"at epoch {best.epoch:.4g}" in n for n in after.notes)
    # Progress counts to the best evaluation, and the collapse is not read as the job's curve.
    assert after.epochs_done == pytest.approx(best.epoch)
    assert after.progress_fraction == pytest.approx(before.progress_fraction)
    assert after.forecast.epochs_if_reached == pytest.approx(before.forecast.epochs_if_reached)



def _two_gpu_profile(dst: Path) -> Path:
    """The CIFAR-10 profile with a second GPU type, "v100", twice as fast as its t4 probes."""
    from dataclasses import replace

    shutil.copy(example_path("cifar10-resnet18"), dst)
    steps = read_profile(dst).steps
    append_records(dst, [replace(s, gpu="v100", step_time_s=s.step_time_s / 2,
                                 sync_time_s=None if s.sync_time_s is None else s.sync_time_s / 2) for s in steps])
    return dst


_AT_BATCH_ONE = {"gpu": "t4", "workers": 4, "local_batch": 1, "epochs_done": 3, "elapsed_s": 600, "out_of_memory": True}


def test_an_out_of_memory_at_a_micro_batch_of_one_moves_the_job_to_another_gpu_type(tmp_path: Path) -> None:
    # No smaller batch exists on t4: the re-plan refused ("re-plan with another gpu") where
    # its answer is that other gpu.
    path = _two_gpu_profile(tmp_path / "two.jsonl")
    r = cotune.replan(path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526, "v100": 2.0}, max_workers=16,
                      progress=_AT_BATCH_ONE)
    assert r.decision == "switch" and r.best is not None and r.best.gpu == "v100"
    assert r.stay is None
    assert any("no local batch is left to consider on t4 below it; staying is not an option; every option runs on "
               "another gpu type" in n
               for n in r.notes)


def test_a_failure_record_at_a_local_batch_of_one_moves_the_job_to_another_gpu_type(tmp_path: Path) -> None:
    path = _two_gpu_profile(tmp_path / "two.jsonl")
    append_records(path, [StepRecord(gpu="t4", workers=4, hosts=1, local_batch=1, step_time_s=0.05, job="run1",
                                     timed_steps=20),
                          EvalRecord(global_batch=4, epoch=1.0, metric=0.3, job="run1", elapsed_s=600.0),
                          _oom_record(local_batch=1)])
    r = cotune.replan(path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526, "v100": 2.0}, max_workers=16)
    assert r.decision == "switch" and r.best is not None and r.best.gpu == "v100"
    assert any("(a failure record after its steps there): no local batch is left to consider on t4" in n for n in r.notes)


def test_an_out_of_memory_at_a_micro_batch_of_one_on_the_only_gpu_type_says_to_probe_another(tmp_path: Path,
                                                                                               capsys) -> None:
    from cotune.api import RequestError, replan_request
    from cotune.cli import main
    from cotune.errors import ModelError

    path = tmp_path / "one.jsonl"
    shutil.copy(example_path("cifar10-resnet18"), path)
    told = "no local batch to consider for 't4': no local batch fits in its memory (out of memory at local batch 1)"
    with pytest.raises(ModelError, match=re.escape(told) + ".*probe another gpu type"):
        cotune.replan(path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16,
                      progress=_AT_BATCH_ONE)
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    with pytest.raises(RequestError, match="^/profile: " + re.escape(told)):
        replan_request({"profile": {"records": records}, "target": TARGET, "deadline_s": 10800,
                        "prices": {"t4": 0.526}, "max_workers": 16, "progress": _AT_BATCH_ONE})
    code = main(["replan", str(path), "--target", str(TARGET), "--deadline", "3h", "--price", "t4=0.526",
                 "--max-workers", "16", "--current", "t4:4:1", "--epochs-done", "3", "--elapsed", "10m",
                 "--out-of-memory"])
    err = capsys.readouterr().err
    assert code == 2 and told in err and "Traceback" not in err


def test_an_out_of_memory_note_names_steps_before_it_only_where_the_job_ran_there(tmp_path: Path) -> None:
    ran = _job_profile(tmp_path / "ran.jsonl")
    append_records(ran, [_oom_record()])  # after the job's steps at 128
    r = cotune.replan(ran, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16)
    assert any("at local batch 128 on t4 (a failure record after its steps there)" in n for n in r.notes)
    alone = tmp_path / "alone.jsonl"
    shutil.copy(example_path("cifar10-resnet18"), alone)
    append_records(alone, [_oom_record(local_batch=1500)])  # no step ever ran at 1500
    r = cotune.replan(alone, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526}, max_workers=16,
                      progress={"gpu": "t4", "workers": 2, "local_batch": 1500, "epochs_done": 5, "elapsed_s": 120})
    assert any("at local batch 1500 on t4 (a failure record in the profile)" in n for n in r.notes)
    assert not any("after its steps there" in n for n in r.notes)


def test_an_infeasible_answer_after_an_out_of_memory_never_names_the_failed_batch_as_nearest(tmp_path: Path) -> None:
    # The search for the nearest weighed staying (P(success) 0 but a finite time) as an option:
    # "nearest" was the 4 x 128 that had just run out of memory (or null).
    path = _job_profile(tmp_path / "oom.jsonl")
    append_records(path, [_oom_record()])
    r = cotune.replan(path, target=TARGET, deadline_s=200, prices={"t4": 0.526}, max_workers=16)
    assert r.decision == "infeasible"
    assert r.nearest is not None and r.nearest.local_batch < 128
    assert f"the nearest is {r.nearest.workers} x t4 on_demand at local batch {r.nearest.local_batch}" in r.reason


def test_an_out_of_memory_with_local_batches_asked_above_it_stays_the_requests_error(tmp_path: Path) -> None:
    # t4 still fits batches below 128: local batches asked for above it are the request's to
    # change (it was answered "no local batch fits on t4" and moved to v100).
    path = _two_gpu_profile(tmp_path / "two.jsonl")
    progress = dict(_AT_BATCH_ONE, local_batch=128)
    with pytest.raises(cotune.InputError, match=re.escape("/local_batches: no local batch to consider for 't4'")
                       + ".*of at most 127"):
        cotune.replan(path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526, "v100": 2.0}, max_workers=16,
                      local_batches=[128, 256], progress=progress)


def test_an_out_of_memory_at_batch_one_names_a_profiled_gpu_type_the_request_left_out(tmp_path: Path) -> None:
    from cotune.errors import ModelError

    path = _two_gpu_profile(tmp_path / "two.jsonl")
    with pytest.raises(ModelError, match=re.escape("probe another gpu type (cotune profile); or weigh the profiled "
                                                   "v100: add it to --gpu (gpus)")):
        cotune.replan(path, target=TARGET, deadline_s=3 * 3600, prices={"t4": 0.526, "v100": 2.0}, max_workers=16,
                      gpus=["t4"], progress=_AT_BATCH_ONE)


def test_with_the_budget_spent_the_nearest_is_never_the_configuration_that_ran_out_of_memory(tmp_path: Path) -> None:
    path = _job_profile(tmp_path / "oom.jsonl")
    append_records(path, [_oom_record()])
    progress = {"gpu": "t4", "workers": 4, "local_batch": 128, "epochs_done": 5, "elapsed_s": 600, "spent": 1.0,
                "out_of_memory": True}
    r = cotune.replan(path, target=TARGET, deadline_s=1800, prices={"t4": 0.526}, max_workers=16, budget=0.5,
                      progress=progress)
    assert r.decision == "infeasible" and r.nearest is not None and r.nearest.local_batch < 128


def test_a_loss_given_with_the_workers_left_to_the_records_names_no_made_up_count(tmp_path: Path) -> None:
    # The check of given values stood 2**31 in for the workers: "lost 3000000000 of 2147483648".
    from cotune.track import progress_from_records

    p = read_profile(_job_profile(tmp_path / "job.jsonl"))
    with pytest.raises(cotune.InputError, match=r"the job lost 3000000000 of 4 workers"):
        progress_from_records(p, workers_lost=3_000_000_000)
    assert progress_from_records(p, workers_lost=np.int64(2)).workers_now == 2
