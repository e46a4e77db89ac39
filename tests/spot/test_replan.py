"""Re-planning: remaining work, hysteresis, the straight-line rule, the CLI."""

from __future__ import annotations

import json

import pytest

from cotune.cli import main
from cotune.errors import InputError
from cotune.spot import Progress, remaining_fraction, replan
from spot_helpers import PACKED_CLUSTER_TOML

CLUSTER = PACKED_CLUSTER_TOML.format(rate=0.1)


@pytest.fixture()
def cluster(make_cluster):
    return make_cluster(text=CLUSTER)


def _run(models, cluster, **kw):
    progress = kw.pop("progress")
    return replan(None, progress=progress, target=0.94, cluster=cluster, models=models, **kw)


def test_remaining_fraction(cifar_models):
    need = float(cifar_models.predict_epochs(__import__("numpy").array([516.0]), 0.94).epochs[0])
    assert remaining_fraction(cifar_models, global_batch=516, epochs_done=0, target=0.94) == 1.0
    assert remaining_fraction(cifar_models, global_batch=516, epochs_done=need / 4, target=0.94) == pytest.approx(0.75)
    assert remaining_fraction(cifar_models, global_batch=516, epochs_done=10 * need, target=0.94) == 0.0


def test_stays_when_the_gain_is_below_the_margin(cifar_models, cluster):
    p = Progress(epochs_done=30, elapsed_s=900, gpu="t4", market="spot", workers=4, local_batch=129)
    r = _run(cifar_models, cluster, progress=p, deadline_s=2700, confidence=0.9, margin=0.5)
    assert r.decision == "stay" and r.ahead and r.stay.workers == 4
    need = float(cifar_models.predict_epochs(__import__("numpy").array([516.0]), 0.94).epochs[0])
    assert r.progress_fraction == pytest.approx(30 / need)
    assert r.stay.epochs == pytest.approx((1 - 30 / need) * need)  # the remaining epochs, not the total


def test_switches_to_spot_when_it_becomes_cheap(cifar_models, cluster):
    p = Progress(epochs_done=20, elapsed_s=600, gpu="t4", market="on_demand", workers=4, local_batch=129)
    r = _run(cifar_models, cluster, progress=p, deadline_s=3600, prices={"t4:spot": 0.02})
    assert r.decision == "switch" and r.best.market in ("spot", "mixed")
    assert r.gain > 0.05 * r.stay.cost
    # the same question with a margin larger than the gain: no churn
    r2 = _run(cifar_models, cluster, progress=p, deadline_s=3600, prices={"t4:spot": 0.02}, margin=0.99)
    assert r2.decision == "stay"


def test_behind_schedule_on_spot_moves_off_pure_spot(cifar_models, cluster):
    p = Progress(epochs_done=30, elapsed_s=1200, gpu="t4", market="spot", workers=4, local_batch=129)
    r = _run(cifar_models, cluster, progress=p, deadline_s=1800, confidence=0.9)
    assert not r.ahead and r.decision == "switch" and r.best.market != "spot"


def test_lost_workers_shrink_the_stay_option(cifar_models, cluster):
    p = Progress(epochs_done=30, elapsed_s=900, gpu="t4", market="spot", workers=4, local_batch=129, workers_lost=2)
    r = _run(cifar_models, cluster, progress=p, deadline_s=2700)
    assert r.stay.workers == 2 and r.stay.local_batch == 129


def test_bad_progress_is_rejected():
    with pytest.raises(InputError, match="has none left"):
        Progress(epochs_done=1, elapsed_s=1, gpu="t4", market="spot", workers=2, local_batch=8, workers_lost=2)
    with pytest.raises(InputError, match="market"):
        Progress(epochs_done=1, elapsed_s=1, gpu="t4", market="cheap", workers=2, local_batch=8)


@pytest.mark.slow
def test_cli_replan(cluster, capsys):
    args = ["replan", "cifar10-resnet18", "--cluster", str(cluster), "--target", "0.94", "--deadline", "45m",
            "--elapsed", "15m", "--epochs-done", "30", "--current", "t4:spot:4:129"]
    assert main(args + ["--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["decision"] in ("stay", "switch") and out["stay"]["workers"] == 4
    assert main(args[:-2] + ["--current", "t4:spot:4"]) == 2
    assert "GPU:MARKET:WORKERS:LOCAL_BATCH" in capsys.readouterr().err
    # A job past its deadline is answered, not refused: infeasible, exit 1 (it was exit 2, "give a later deadline").
    assert main(args[:6] + ["--deadline", "10m", "--elapsed", "15m", "--epochs-done", "30", "--current", "t4:spot:4:129"]) == 1
    assert "has passed by 5m00s" in capsys.readouterr().out


_NO_CLUSTER = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "45m", "--elapsed", "15m", "--epochs-done",
               "30", "--current", "t4:on_demand:4:129"]


def test_cli_replan_without_prices_counts_worker_hours_not_dollars(capsys):
    assert main(_NO_CLUSTER) == 0
    stay = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("STAY"))
    assert "w·h" in stay and "$" not in stay
    assert main(_NO_CLUSTER + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost_unit"] == "worker_hours"
    assert main(_NO_CLUSTER + ["--price", "t4=0.5", "--json"]) == 0
    priced = json.loads(capsys.readouterr().out)
    assert priced["cost_unit"] == "USD"


def test_cli_replan_with_a_cluster_file_counts_dollars(cluster, capsys):
    assert main(["replan", "cifar10-resnet18", "--cluster", str(cluster), *_NO_CLUSTER[2:-1], "t4:spot:4:129", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["cost_unit"] == "USD"


def test_cli_replan_refuses_a_spot_price_without_a_cluster_file(capsys):
    assert main(_NO_CLUSTER + ["--price", "t4:spot=5"]) == 2
    assert "give them in a cluster file (--cluster FILE" in capsys.readouterr().err


@pytest.mark.parametrize("market", ["spot", "mixed"])
def test_cli_replan_refuses_a_job_on_spot_without_a_cluster_file(capsys, market):
    # It answered SWITCH ("change market": staying was "not in the search space"), a market
    # move that no price or revocation rate supported.
    assert main([*_NO_CLUSTER[:-1], f"t4:{market}:4:129"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--cluster: the job runs on the {market} market, but no cluster file" in err


def test_the_margin_counts_the_money_already_spent(cifar_models, cluster):
    # Cheap spot makes switching pay on the remaining work alone; a job that has already
    # spent far more than that gain is nearly done in money terms and stays.
    p = Progress(epochs_done=20, elapsed_s=600, gpu="t4", market="on_demand", workers=4, local_batch=129)
    assert _run(cifar_models, cluster, progress=p, deadline_s=3600, prices={"t4:spot": 0.02}).decision == "switch"
    rich = Progress(epochs_done=20, elapsed_s=600, gpu="t4", market="on_demand", workers=4, local_batch=129, spent=100.0)
    r = _run(cifar_models, cluster, progress=rich, deadline_s=3600, prices={"t4:spot": 0.02})
    assert r.decision == "stay" and "margin" in r.reason


def test_every_option_carries_its_chance_of_finishing_in_time(cifar_models, cluster):
    p = Progress(epochs_done=20, elapsed_s=600, gpu="t4", market="on_demand", workers=4, local_batch=129)
    r = _run(cifar_models, cluster, progress=p, deadline_s=3600)
    assert 0.0 <= r.stay.p_success <= 1.0
    tight = _run(cifar_models, cluster, progress=p, deadline_s=900)
    assert tight.stay.p_success < r.stay.p_success


def test_a_miss_is_priced_as_the_whole_job_at_the_configuration_it_started_at(cifar_models):
    # cotune.solver.miss_cost's job_cost, as `cotune replan` reads it: the cost `recommend`
    # states for the configuration the job started at (a tracked job's first step record),
    # not the remaining cost where it runs now.
    import numpy as np

    from cotune import recommend
    from cotune.profile import StepRecord
    from cotune.spot import SpotMarket
    from cotune.spot._replan import _job_cost

    # No revocations: the spot stage leaves a spot row's time as on-demand's, at its price.
    plan = SpotMarket.create({"version": 1, "gpus_per_host": 4, "checkpoint": {"write_s": 20},
                              "gpu": {"t4": {"on_demand": 16, "spot": 16, "on_demand_price_per_hour": 0.5,
                                             "spot_price_per_hour": 0.2, "revocation_rate_per_hour": 0,
                                             "replacement_delay_s": 120}}},
                             profiled_gpus=("t4",), gpus=None, max_workers=16)
    table = plan.price_table(("t4",))  # t4: on-demand, spot, mixed
    now = Progress(epochs_done=30, elapsed_s=900, gpu="t4", market="on_demand", workers=4, local_batch=129)
    common = dict(plan=plan, space_gpus=("t4",), gpus_per_host={"t4": 4}, table=table, target=0.94, progress=now,
                  startup_s=0.0, confidence=None, deadline_s=2700.0)
    started = _job_cost(cifar_models, start=StepRecord(gpu="t4", workers=2, local_batch=129, step_time_s=0.2), **common)
    running = _job_cost(cifar_models, start=None, **common)
    ask = dict(models=cifar_models, target=0.94, local_batches=(129,), prices={"t4": 0.5})
    assert started == pytest.approx(recommend("cifar10-resnet18", workers=(2,), **ask).chosen.cost)
    assert running == pytest.approx(recommend("cifar10-resnet18", workers=(4,), **ask).chosen.cost)
    on_spot = _job_cost(cifar_models, start=StepRecord(gpu="t4", workers=2, local_batch=129, step_time_s=0.2, market="spot"), **common)
    assert on_spot == pytest.approx(started * 0.2 / 0.5)


@pytest.mark.parametrize("with_cluster", [False, True])
def test_a_running_gpu_the_profile_never_probed_is_named_as_such(cifar_models, cluster, with_cluster):
    # Without a cluster file the on-demand cluster is built from the profile's gpus, and the
    # error used to be the cluster's ("not in the cluster file ... add a [gpu.v100] table").
    p = Progress(epochs_done=10, elapsed_s=100, gpu="v100", market="on_demand", workers=4, local_batch=129)
    kw = dict(cluster=cluster) if with_cluster else {}
    with pytest.raises(InputError, match="current gpu 'v100' has no timing probes in this profile: profiled gpus are t4"):
        replan(None, progress=p, target=0.94, deadline_s=1800, models=cifar_models, **kw)


@pytest.mark.parametrize(("workers", "added", "needle"), [(99_999, 0, "the job runs 99999 × 129 = 12,899,871 samples"),
                                                         (4, 100_000, "the job runs now 100004 × 129")])
def test_a_running_step_larger_than_the_training_set_is_refused(cifar_models, workers, added, needle):
    # it was answered: "the global batch changes 12899871 -> 129", a job that cannot exist
    p = Progress(epochs_done=10, elapsed_s=100, gpu="t4", market="on_demand", workers=workers, local_batch=129,
                 workers_added=added)
    with pytest.raises(InputError, match=needle + r".*more than the profile's 50,000 training samples"):
        replan(None, progress=p, target=0.94, deadline_s=1800, models=cifar_models)


def test_without_a_cluster_file_a_configuration_out_of_reach_blames_the_search_space(capsys):
    argv = [*_NO_CLUSTER[:-1], "t4:on_demand:40:129", "--max-workers", "16", "--json"]
    assert main(argv) in (0, 1)
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("is not available within the search space" in n for n in notes)
    assert not any("cluster file" in n for n in notes)
    assert any("wasting" in n and "worker-hours" in n for n in notes)


def test_replan_says_it_skipped_a_torn_last_line_as_recommend_does(tmp_path, capsys):
    from cotune.profile import load_profile, write_profile

    path = tmp_path / "killed.jsonl"
    write_profile(load_profile("cifar10-resnet18"), path)
    with open(path, "a") as fh:
        fh.write('{"record": "eval", "glob')  # a tracker killed mid-write
    assert main(["replan", str(path), *_NO_CLUSTER[2:], "--json"]) == 0
    assert any("skipped a torn last line" in n for n in json.loads(capsys.readouterr().out)["notes"])


def test_a_spent_budget_is_named_as_the_reason_not_the_target(capsys):
    # It read "the target is not reachable at any configuration ... within the budget left
    # (-4)": the money was gone, not the target out of reach.
    assert main([*_NO_CLUSTER, "--budget", "1", "--spent", "5", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "infeasible"
    assert doc["reason"].startswith("the budget is spent (5.00 w·h of 1.00 w·h)")  # worker-hours: no prices and "raise the budget (--budget / budget)" in doc["reason"]
    assert "not reachable" not in doc["reason"]


def test_a_job_far_past_the_models_epochs_is_told_why_not_the_remaining_zero_percent(capsys):
    # --epochs-done 1000 where the model expects about 75 epochs read "none finishes the
    # remaining 0% of the work within the remaining deadline": a contradiction to the reader.
    argv = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "45m", "--elapsed", "15m",
            "--epochs-done", "1000", "--current", "t4:on_demand:4:129", "--json"]
    assert main(argv) == 1
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "infeasible"
    assert doc["reason"].startswith("the job has run 1000 epochs at global batch") and "without reaching the target" in doc["reason"]
    assert "remaining 0%" not in doc["reason"] and "check --epochs-done" in doc["reason"]


_NEAR_DONE = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--elapsed", "10m",
              "--epochs-done", "90", "--current", "t4:on_demand:4:129", "--json"]


def test_without_anything_stating_a_restart_cost_a_change_costs_the_default_and_a_note_says_so(capsys):
    from cotune._request import DEFAULT_RESTART_S

    main(_NEAR_DONE)
    doc = json.loads(capsys.readouterr().out)
    assert doc["restart_s"] == DEFAULT_RESTART_S
    assert any("the default: give --restart" in n for n in doc["notes"])
    # A job 2.6 epochs (29 s) from its target was told to restart on one worker to save 19 %
    # of that when a restart was free; with a restart's cost it stays.
    assert doc["decision"] == "stay"


def test_an_explicit_zero_restart_is_kept_and_not_called_a_default(capsys):
    main([*_NEAR_DONE, "--restart", "0"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["restart_s"] == 0.0
    assert not any("the default: give --restart" in n for n in doc["notes"])
    assert doc["decision"] == "switch"


def test_a_zero_startup_is_taken_at_the_cli_as_the_python_door_takes_it(capsys):
    # --startup 0 (the default's own value) was refused: "duration must be positive".
    assert main(["recommend", "cifar10-resnet18", "--target", "0.94", "--startup", "0", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["recommendation"] is not None


def test_a_chance_just_under_a_high_confidence_is_not_printed_as_one(capsys):
    # At --confidence 0.999999 the job stayed INFEASIBLE with "P(success) 1.00" beside it.
    argv = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--elapsed", "10m",
            "--epochs-done", "10", "--current", "t4:on_demand:4:129", "--confidence", "0.999999"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "INFEASIBLE" in out and "P(success) 1.00" not in out
    stay = next(line for line in out.splitlines() if line.startswith("STAY"))
    shown = stay.split()[-1]
    assert shown.endswith("%") and float(shown.rstrip("%")) / 100 < 0.999999, shown  # percent, as recommend's table


def test_a_replan_result_reprs_as_its_decision_and_options():
    r = replan("cifar10-resnet18", target=0.94, deadline_s=2700,
               progress={"elapsed_s": 900, "epochs_done": 30, "gpu": "t4", "workers": 4, "local_batch": 129,
                         "market": "on_demand"})
    text = repr(r)
    assert len(text) < 700
    assert text.startswith(f"ReplanResult({r.decision!r}: {r.reason}; stay 4 x t4 on_demand, local batch 129")


@pytest.mark.parametrize("with_cluster", [False, True])
def test_the_best_alternative_is_never_a_restart_where_the_job_runs(cifar_models, cluster, with_cluster):
    # "BEST t4 on_demand 2 257" under "STAY t4 on_demand 2 257": restarting the job at its own
    # configuration was listed as the best alternative ("would add 13.4 % to the job's cost").
    p = Progress(epochs_done=30, elapsed_s=600, gpu="t4", market="on_demand", workers=2, local_batch=257)
    where = {"cluster": cluster} if with_cluster else {"prices": {"t4": 0.526}}
    r = replan(None, progress=p, target=0.94, models=cifar_models, deadline_s=2400, max_workers=16, **where)
    assert r.stay is not None and r.best is not None
    key = lambda c: (c.gpu, c.market, c.workers, c.hosts, c.local_batch)  # noqa: E731
    assert key(r.best) != key(r.stay)
    if r.nearest is not None and r.decision != "infeasible":
        assert key(r.nearest) != key(r.stay)


_LEVERS = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "45m", "--elapsed", "15m", "--epochs-done",
           "30", "--current", "t4:on_demand:4:129", "--price", "t4=0.526"]


def _decide(capsys, *extra):
    code = main([*_LEVERS, *extra, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert (code == 1) == (doc["decision"] == "infeasible")
    return doc


@pytest.mark.parametrize("extra", [
    ("--budget", "0.35", "--spent", "0.2"),                           # the budget binds, the deadline does not
    ("--deadline", "17m"),                                            # the deadline binds
    ("--deadline", "20m", "--max-workers", "8"),                      # the deadline, at the worker cap
    ("--deadline", "17m", "--budget", "0.4", "--spent", "0.2"),       # both: the fastest costs more than is left
    ("--deadline", "18m", "--budget", "0.9", "--spent", "0.2"),       # the deadline, for the fastest within the budget
])
def test_every_lever_an_infeasible_replan_names_makes_it_feasible(capsys, extra):
    # Every infeasible re-plan listed "relax the deadline, the budget or the confidence, or
    # allow more workers": a budget when none was given, more workers when the fastest option
    # used a fraction of them, the deadline when only the money was short. Now each lever is
    # named only where it helps, with the value it needs — and that value is enough.
    import re

    from cotune.units import parse_duration

    doc = _decide(capsys, *extra)
    assert doc["decision"] == "infeasible"
    reason, given = doc["reason"], dict(zip(extra[::2], extra[1::2]))
    deadline = re.search(r"relax the deadline \(--deadline / deadline_s\) to at least (\S+) from", reason)
    budget = re.search(r"budget \(--budget / budget\) to at least \$(\d+\.\d+)", reason)
    assert deadline or budget, reason
    assert ("--budget" in given) or not budget
    if "--max-workers" not in given:
        assert "allow more" not in reason  # replan's default cap is far above what any option uses here
    else:
        assert f"allow more than {given['--max-workers']} workers" in reason
    if deadline and budget and "and the budget" in reason:  # one lever: both together
        levers = [{"--deadline": deadline.group(1), "--budget": budget.group(1)}]
    else:
        levers = ([{"--deadline": deadline.group(1)}] if deadline else []) + ([{"--budget": budget.group(1)}] if budget else [])
    if deadline:
        assert parse_duration(deadline.group(1)) > parse_duration(given.get("--deadline", "45m"))
    for lever in levers:
        argv = dict(given, **lever)
        assert _decide(capsys, *[x for kv in argv.items() for x in kv])["decision"] != "infeasible", (lever, reason)
    assert "lower the confidence (--confidence / confidence, now 0.5)" in reason


def test_a_replan_short_of_money_only_says_the_budget_not_the_target(capsys):
    doc = _decide(capsys, "--budget", "0.35", "--spent", "0.2")
    assert doc["reason"].startswith("the budget left is too small") and "relax the deadline" not in doc["reason"]


@pytest.mark.parametrize("current, said", [
    ("t4:spot:0:129", "--current WORKERS: must be a whole number >= 1, got 0"),
    ("t4:spot:4:0", "--current LOCAL_BATCH: must be a whole number >= 1, got 0"),
    ("t4:4:129:7", "--current MARKET: must be one of 'on_demand', 'spot', 'mixed', got '4'"),
    (":4:129", "--current GPU: must be a non-empty string"),
])
def test_a_bad_part_of_current_is_named(capsys, current, said):
    # "--current: must be a whole number >= 1, got 0" left the reader to guess which of
    # the four numbers and names was meant.
    argv = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "45m", "--elapsed", "15m",
            "--epochs-done", "30", "--current", current]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"cotune: {said}") and err.count("\n") == 1


@pytest.mark.parametrize("kw", [
    dict(prices={"t4": 0.5, "v100": 1.0}, gpus=("t4",)),  # no cluster file: it read "not in the cluster file"
    dict(cluster={"version": 1, "checkpoint": {"write_s": 10},
                  "gpu": {"t4": {"on_demand": 16, "on_demand_price_per_hour": 0.5},
                          "v100": {"on_demand": 16, "on_demand_price_per_hour": 1.5}}}, gpus=("t4",)),
])
def test_a_current_gpu_that_gpu_leaves_out_is_named_as_such(kw):
    # It read "(on-demand servers at --price): gpu 'v100' is not in the cluster file" without a
    # cluster file, and "has no timing probes in this profile" for a profiled gpu.
    import json

    from _helpers import synthetic_records
    from cotune import replan
    from cotune.errors import InputError
    from cotune.profile import parse_profile

    profile = parse_profile([json.dumps(r) for r in synthetic_records(gpus=("t4", "v100"))])
    progress = {"gpu": "v100", "market": "on_demand", "workers": 2, "local_batch": 64, "epochs_done": 1, "elapsed_s": 60}
    with pytest.raises(InputError, match=r"^/progress/gpu: current gpu 'v100' is not among the gpus asked for \(t4\), so staying "
                                         r"cannot be weighed: add it to --gpu \(gpus\), or drop --gpu$"):
        replan(profile, target=0.9, deadline_s=3600, progress=progress, **kw)


def test_a_stay_shows_as_best_the_alternative_its_reason_weighed(capsys):
    # The BEST row (and "best" in --json) was the cheapest option keeping q = 0.5, at
    # P(success) 0.53, while the reason priced the best one above the entry threshold 0.55.
    argv = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "1h", "--elapsed", "10m", "--epochs-done", "10",
            "--current", "t4:4:128", "--gpu", "t4", "--local-batch", "7", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["decision"] == "stay" and "the best alternative with P(success) ≥ 0.55" in doc["reason"]
    assert doc["best"]["p_success"] >= 0.55


def test_a_job_running_mixed_ahead_of_schedule_can_stay(capsys, repo_root):
    # The spot stage offers a mixed row only where spot alone misses: ahead of schedule the
    # job's own configuration was missing, and it read "the current configuration cannot
    # continue" and paid a 170 s restart to move to spot.
    argv = ["replan", "cifar10-resnet18", "--cluster", str(repo_root / "examples" / "cluster.toml"), "--target", "0.94",
            "--deadline", "45m", "--elapsed", "15m", "--epochs-done", "30", "--current", "t4:mixed:4:129",
            "--confidence", "0.9", "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["stay"] is not None and doc["stay"]["market"] == "mixed" and doc["stay"]["p_success"] >= 0.9
    assert "cannot continue" not in doc["reason"]


def test_a_job_running_its_recommended_mixed_plan_whose_line_is_short_is_weighed_as_it_runs(cifar_models, make_cluster):
    # Two revocations an hour, 1400 s at 0.9: recommend offers 4 x t4 mixed b=129. At 300 s
    # and 27 % done (ahead of the line) the row was dropped because the straight line ended
    # before the work at the confidence: "the current configuration cannot continue", and a
    # switch that added 19.4 % to the cost.
    cluster = make_cluster(text=PACKED_CLUSTER_TOML.format(rate=2.0))
    p = Progress(epochs_done=20, elapsed_s=300, gpu="t4", market="mixed", workers=4, local_batch=129)
    r = _run(cifar_models, cluster, progress=p, deadline_s=1400, confidence=0.9)
    assert r.ahead and r.stay is not None and r.stay.market == "mixed"
    assert r.decision == "stay" and "cannot continue" not in r.reason


def test_a_running_mixed_job_with_free_checkpoints_is_weighed_as_it_runs(cifar_models, make_cluster):
    # write_s = 0 gave 100,000 segments ("checkpoint every 0.0 s"): more simulated attempts
    # than the mixed simulator runs, so the job's own row was dropped and it was told to move.
    cluster = make_cluster(text=PACKED_CLUSTER_TOML.format(rate=2.0).replace("write_s = 20", "write_s = 0"))
    p = Progress(epochs_done=20, elapsed_s=300, gpu="t4", market="mixed", workers=4, local_batch=129)
    r = _run(cifar_models, cluster, progress=p, deadline_s=1400, confidence=0.9)
    assert r.stay is not None and r.stay.market == "mixed"
    assert r.decision == "stay" and "cannot continue" not in r.reason


@pytest.mark.parametrize(("done", "elapsed_s", "deadline_s", "workers"),
                         [(20, 600, 2100, 1), (20, 300, 1500, 2), (30, 300, 1500, 8), (30, 600, 1500, 4)])
def test_staying_on_spot_never_reads_likelier_to_finish_than_on_demand(cifar_models, make_cluster, done, elapsed_s,
                                                                        deadline_s, workers):
    # Revocations only delay a job: the same configuration's remaining work on spot is done
    # by the deadline at most as often as on on-demand. A symmetric log-normal widening for
    # the revocation count read 0.079 against 0.062 in the first case.
    cluster = make_cluster(text=PACKED_CLUSTER_TOML.format(rate=0.5))
    chance = {}
    for market in ("on_demand", "spot"):
        p = Progress(epochs_done=done, elapsed_s=elapsed_s, gpu="t4", market=market, workers=workers, local_batch=129)
        chance[market] = _run(cifar_models, cluster, progress=p, deadline_s=deadline_s, confidence=0.5).stay.p_success
    assert 0.0 < chance["spot"] <= chance["on_demand"] + 1e-12, chance


def test_a_spent_budget_names_the_nearest_option_and_the_money_it_needs(capsys):
    # It answered "nearest": null and no amount: every chance is 0 once the money is gone.
    assert main([*_NO_CLUSTER, "--price", "t4=0.526", "--budget", "1", "--spent", "5", "--json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    near = doc["nearest"]
    assert doc["decision"] == "infeasible" and near is not None
    assert near["time_at_confidence_s"] <= doc["remaining_deadline_s"]
    needs = near["cost"] * near["time_at_confidence_s"] / near["time_s"]  # its cost by its time at the confidence
    assert f"which needs ${needs:.3g} more: raise the budget (--budget / budget) to at least $" in doc["reason"]


def test_raising_a_spent_budget_as_advised_at_a_confidence_is_enough(capsys):
    # The amount was the nearest option's median cost: raised to it at --confidence 0.9, the
    # re-plan was still infeasible and asked for more ($5.37, then $5.43).
    import re

    ask = ["replan", "cifar10-resnet18", "--target", "0.94", "--deadline", "2h", "--epochs-done", "10", "--elapsed", "30m",
           "--current", "t4:on_demand:4:128", "--price", "t4=0.53", "--spent", "5", "--confidence", "0.9", "--json"]
    assert main([*ask, "--budget", "5"]) == 1
    reason = json.loads(capsys.readouterr().out)["reason"]
    raised = re.search(r"to at least \$([0-9.]+)", reason).group(1)
    assert main([*ask, "--budget", raised]) == 0
    assert json.loads(capsys.readouterr().out)["decision"] != "infeasible"


def test_the_margin_help_names_the_whole_jobs_cost_the_rule_applies(capsys):
    # It read "this fraction of staying"; the rule weighs the money spent plus staying's remaining.
    from pathlib import Path

    assert main(["replan", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "fraction of the whole job's cost (--spent plus staying's remaining" in text
    row = next(line for line in (Path(__file__).parents[2] / "docs" / "request.md").read_text().splitlines()
               if line.startswith("| `margin` |"))
    assert "fraction of the whole job's cost — the money spent plus staying's remaining" in row
