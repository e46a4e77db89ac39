"""The re-planning decision: hysteresis, deadline and budget, the nearest when unreachable."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from cotune.errors import InputError
from cotune.solver import (
    MAX_BACKOFF_MARGIN, ReplanOption, backoff_margin, changes_between, count_returns, decide_replan, entry_threshold, lr_scale,
)

STAY = ReplanOption(gpu="t4", market="on_demand", workers=4, local_batch=64, time_s=1000.0, cost=10.0)


def _alt(**kw) -> ReplanOption:
    base = dict(gpu="t4", market="on_demand", workers=8, local_batch=64, time_s=600.0, cost=9.0)
    return ReplanOption(**(base | kw))


def test_stays_when_the_gain_is_within_the_margin() -> None:
    d = decide_replan(stay=STAY, alternatives=[_alt(cost=9.7)], remaining_s=2000, margin=0.05)
    assert d.decision == "stay" and d.chosen is STAY and d.gain == pytest.approx(0.3)
    assert "3.0%" in d.reason


def test_switches_when_the_gain_beats_the_margin_and_says_what_changes() -> None:
    d = decide_replan(stay=STAY, alternatives=[_alt(cost=9.7), _alt(cost=8.0, local_batch=32)], remaining_s=2000)
    assert d.decision == "switch" and d.chosen.cost == 8.0
    assert d.changes == ("add_workers",)  # 8 x 32 = 4 x 64: same global batch


def test_a_current_configuration_that_misses_the_deadline_is_left_even_for_a_dearer_one() -> None:
    d = decide_replan(stay=STAY, alternatives=[_alt(cost=14.0, time_s=700.0)], remaining_s=800)
    assert d.decision == "switch" and not d.stay_feasible and d.gain == pytest.approx(-4.0)


def test_the_budget_left_rules_options_out() -> None:
    d = decide_replan(stay=STAY, alternatives=[_alt(cost=12.0, time_s=500.0)], remaining_s=800, budget_left=11.0)
    assert d.decision == "infeasible" and "budget left" in d.reason


def test_unreachable_names_the_option_that_misses_by_the_least() -> None:
    far, near = _alt(time_s=5000.0), _alt(time_s=960.0, workers=16)
    d = decide_replan(stay=STAY, alternatives=[far, near], remaining_s=800)
    assert d.decision == "infeasible" and d.chosen is None and d.nearest is near
    assert "misses by 20%" in d.reason


def test_confidence_compares_the_time_at_confidence() -> None:
    risky = ReplanOption(gpu="t4", market="spot", workers=4, local_batch=64, time_s=700, time_at_confidence_s=1100, cost=5)
    d = decide_replan(stay=STAY, alternatives=[risky], remaining_s=1050, use_confidence=True)
    assert d.decision == "stay"
    assert decide_replan(stay=STAY, alternatives=[risky], remaining_s=1050).chosen is risky


def test_changes_name_workers_batch_gpu_and_market() -> None:
    new = ReplanOption(gpu="v100", market="spot", workers=2, local_batch=256, time_s=1, cost=1)
    assert changes_between(STAY, new) == ("remove_workers", "change_batch", "change_gpu", "change_market")


def test_lr_rules() -> None:
    assert lr_scale(old_global_batch=256, new_global_batch=1024, rule="linear") == 4.0
    assert lr_scale(old_global_batch=256, new_global_batch=1024) == 2.0
    with pytest.raises(InputError, match="learning-rate rule"):
        lr_scale(old_global_batch=1, new_global_batch=2, rule="cubic")  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs, match", [({"margin": 1.5}, "margin"), ({"remaining_s": 0}, "remaining deadline"),
                                           ({"objective": "speed"}, "objective")])
def test_bad_arguments_are_one_input_error(kwargs: dict, match: str) -> None:
    args = {"stay": STAY, "alternatives": [], "remaining_s": 100.0} | kwargs
    with pytest.raises(InputError, match=match):
        decide_replan(**args)


costs = st.floats(min_value=0.1, max_value=100.0)


@given(stay_cost=costs, alt_costs=st.lists(costs, min_size=1, max_size=6), margin=st.floats(min_value=0.0, max_value=0.5))
def test_a_feasible_stay_is_left_only_for_a_gain_above_the_margin(stay_cost, alt_costs, margin) -> None:
    stay = ReplanOption(gpu="t4", market="on_demand", workers=4, local_batch=64, time_s=10.0, cost=stay_cost)
    alts = [_alt(cost=c, time_s=10.0) for c in alt_costs]
    d = decide_replan(stay=stay, alternatives=alts, remaining_s=100.0, margin=margin)
    if d.decision == "switch":
        assert stay_cost - d.chosen.cost > margin * stay_cost and d.chosen.cost == min(alt_costs)
    else:
        assert d.decision == "stay" and stay_cost - min(alt_costs) <= margin * stay_cost


# -- the probability form (confidence=) ------------------------------------------------------
def _p(p: float, **kw) -> ReplanOption:
    base = dict(gpu="t4", market="on_demand", workers=4, local_batch=64, time_s=1000.0, cost=10.0, p_success=p)
    return ReplanOption(**(base | kw))


def test_by_success_stays_while_the_job_keeps_the_confidence():
    d = decide_replan(stay=_p(0.9), alternatives=[_p(0.95, cost=9.8, workers=8)], remaining_s=2000, confidence=0.5)
    assert d.decision == "stay"


def test_by_success_a_stay_against_a_dearer_alternative_says_how_much_it_would_add():
    d = decide_replan(stay=_p(0.9), alternatives=[_p(0.95, cost=12.0, workers=8)], remaining_s=2000, confidence=0.5)
    assert d.decision == "stay" and d.gain == pytest.approx(-2.0)
    assert "would add 20.0% to the job's cost" in d.reason


def test_by_success_a_switch_to_a_dearer_but_surer_option_states_the_risk_it_counts():
    # On plan and above q, yet a dearer option with a better chance wins on expected cost: the
    # reason read "saves 7.5% of the job's cost" beside a dearer option and a negative gain.
    stay, surer = _p(0.75, cost=0.9), _p(0.99, cost=1.9, workers=13)
    d = decide_replan(stay=stay, alternatives=[surer], remaining_s=2000, confidence=0.5, miss_cost=6.0)
    assert d.decision == "switch" and d.chosen is surer
    assert "(expected cost, a miss counted as 6 wasted: staying 0.9 at P(success) 0.75, switching 1.9 at P(success) 0.99)" \
        in d.reason, d.reason


def test_by_success_switches_when_the_job_falls_below_the_confidence():
    alt = _p(0.8, cost=14.0, workers=8)
    d = decide_replan(stay=_p(0.3), alternatives=[alt], remaining_s=2000, confidence=0.5)
    assert d.decision == "switch" and d.chosen is alt


def test_by_success_does_not_trade_a_sure_finish_for_a_cheaper_gamble():
    gamble = _p(0.55, cost=8.0, local_batch=128)
    sure = _p(0.99)
    assert decide_replan(stay=sure, alternatives=[gamble], remaining_s=2000, confidence=0.5).decision == "switch"
    d = decide_replan(stay=sure, alternatives=[gamble], remaining_s=2000, confidence=0.5, miss_cost=20.0)
    assert d.decision == "stay"


def test_by_success_margin_counts_the_money_already_spent():
    cheaper = _p(0.9, cost=9.0, workers=8)
    assert decide_replan(stay=_p(0.9), alternatives=[cheaper], remaining_s=2000, confidence=0.5).decision == "switch"
    d = decide_replan(stay=_p(0.9), alternatives=[cheaper], remaining_s=2000, confidence=0.5, spent=100.0)
    assert d.decision == "stay"


def test_by_success_moves_to_the_best_chance_only_when_it_is_clearly_better():
    better = _p(0.4, workers=8)
    d = decide_replan(stay=_p(0.2), alternatives=[better], remaining_s=2000, confidence=0.5)
    assert d.decision == "infeasible" and d.nearest is better
    stay = _p(0.38)
    d = decide_replan(stay=stay, alternatives=[better], remaining_s=2000, confidence=0.5, p_margin=0.05)
    assert d.nearest is stay


def test_by_success_a_cheaper_option_must_clear_the_entry_threshold_to_replace_a_feasible_one():
    # Kept at q = 0.5, entered only at q + p_margin: a chance just above q is not worth a restart.
    marginal = _p(0.52, cost=5.0, workers=8)
    d = decide_replan(stay=_p(0.8), alternatives=[marginal], remaining_s=2000, confidence=0.5, p_margin=0.05)
    assert d.decision == "stay"
    firm = _p(0.6, cost=5.0, workers=8)
    d = decide_replan(stay=_p(0.8), alternatives=[marginal, firm], remaining_s=2000, confidence=0.5, p_margin=0.05)
    assert d.decision == "switch" and d.chosen is firm


def test_by_success_leaving_a_failing_job_prefers_an_option_above_the_entry_threshold():
    marginal = _p(0.52, cost=5.0, workers=8)
    firm = _p(0.7, cost=6.0, workers=16)
    d = decide_replan(stay=_p(0.4), alternatives=[marginal, firm], remaining_s=2000, confidence=0.5, p_margin=0.05)
    assert d.decision == "switch" and d.chosen is firm
    # With nothing above it, the cheapest that holds q still beats staying below q.
    d = decide_replan(stay=_p(0.4), alternatives=[marginal], remaining_s=2000, confidence=0.5, p_margin=0.05)
    assert d.decision == "switch" and d.chosen is marginal


def test_by_success_a_job_just_below_the_confidence_stays_rather_than_restart_for_a_chance_just_above():
    stay = _p(0.498)
    just_above = _p(0.513, cost=9.0, workers=8)
    d = decide_replan(stay=stay, alternatives=[just_above], remaining_s=2000, confidence=0.5, p_margin=0.05)
    assert d.decision == "stay" and d.chosen is stay and not d.stay_feasible
    assert "0.498" in d.reason and "0.513" in d.reason and "margin" in d.reason
    # The same option, clearly better than the failing job, is worth the restart.
    d = decide_replan(stay=_p(0.44), alternatives=[just_above], remaining_s=2000, confidence=0.5, p_margin=0.05)
    assert d.decision == "switch" and d.chosen is just_above
    # A job that no longer fits the budget left is not kept for the margin's sake.
    d = decide_replan(stay=_p(0.498, cost=30.0), alternatives=[just_above], remaining_s=2000, confidence=0.5,
                      p_margin=0.05, budget_left=20.0)
    assert d.decision == "switch" and d.chosen is just_above


@given(
    # Chances as offsets from q: the band just around it, where the rule matters, is drawn often.
    stay_off=st.floats(-0.3, 0.09),
    alts=st.lists(st.tuples(st.floats(-0.3, 0.09), st.floats(0.1, 50.0)), min_size=1, max_size=6),
    q=st.sampled_from([0.5, 0.8, 0.9]),
    m=st.sampled_from([0.0, 0.05, 0.1]),
)
def test_by_success_a_switch_from_below_the_confidence_is_firm_or_clearly_better(stay_off, alts, q, m):
    p_stay = q + stay_off
    options = [_p(q + off, cost=c, workers=8 + k) for k, (off, c) in enumerate(alts)]
    d = decide_replan(stay=_p(p_stay), alternatives=options, remaining_s=2000, confidence=q, p_margin=m)
    if d.decision == "switch" and p_stay < q:
        assert d.chosen.p_success >= entry_threshold(q, m) or d.chosen.p_success > p_stay + m
    if d.decision == "infeasible" and d.nearest is not None and d.nearest.p_success != p_stay:
        assert d.nearest.p_success > p_stay + m


@given(q=st.floats(0.01, 0.99), m=st.floats(0.0, 0.99))
def test_entry_threshold_lies_between_the_confidence_and_one(q: float, m: float) -> None:
    t = entry_threshold(q, m)
    assert q <= t < 1.0 and (t == pytest.approx(q + m) or t == pytest.approx((1 + q) / 2))


@given(
    p_stay=st.floats(0.0, 1.0),
    alts=st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.1, 50.0)), min_size=1, max_size=6),
    q=st.sampled_from([0.5, 0.8, 0.9]),
)
def test_by_success_never_switches_onto_a_chance_below_the_entry_threshold_while_one_above_exists(p_stay, alts, q):
    options = [_p(p, cost=c, workers=8 + k) for k, (p, c) in enumerate(alts)]
    d = decide_replan(stay=_p(p_stay), alternatives=options, remaining_s=2000, confidence=q, p_margin=0.05)
    enter = entry_threshold(q, 0.05)
    if d.decision == "switch":
        assert d.chosen.p_success >= q
        if d.stay_feasible or any(o.p_success >= enter for o in options):
            assert d.chosen.p_success >= enter


@pytest.mark.parametrize("q, m", [(0.0, 0.05), (1.0, 0.05), (0.5, -0.1), (0.5, 1.0), (float("nan"), 0.05)])
def test_entry_threshold_rejects_values_outside_its_ranges(q: float, m: float) -> None:
    with pytest.raises(InputError):
        entry_threshold(q, m)


def test_by_success_needs_a_probability_on_every_option():
    with pytest.raises(InputError, match="p_success"):
        decide_replan(stay=STAY, alternatives=[], remaining_s=2000, confidence=0.5)


def test_miss_cost_is_the_money_spent_plus_the_whole_job_redone():
    from cotune.solver import miss_cost

    assert miss_cost(spent=3.0, job_cost=10.0) == 13.0
    assert miss_cost(spent=3.0, job_cost=math.inf) == 3.0  # no prediction there: nothing redone is counted


@pytest.mark.parametrize("kwargs, match", [
    (dict(spent=-1.0, job_cost=1.0), "spent must be finite and >= 0"),
    (dict(spent=math.nan, job_cost=1.0), "spent must be finite and >= 0"),
    (dict(spent=1.0, job_cost=math.nan), "job_cost must be >= 0"),
    (dict(spent=1.0, job_cost=-2.0), "job_cost must be >= 0"),
])
def test_miss_cost_rejects_what_is_not_money(kwargs, match):
    from cotune.solver import miss_cost

    with pytest.raises(InputError, match=match):
        miss_cost(**kwargs)


def test_by_success_a_negligible_difference_is_said_as_such_not_as_minus_zero():
    # A job that has spent far more than is left: the alternative's difference rounds to 0 % of the whole.
    d = decide_replan(stay=_p(0.9), alternatives=[_p(0.9, cost=10.0 + 1e-9, workers=8)], remaining_s=2000,
                      confidence=0.5, spent=1e14)
    assert d.decision == "stay" and "less than 0.1%" in d.reason and "-0.0%" not in d.reason


# -- back-off after returns --------------------------------------------------------------------
def test_count_returns_counts_moves_back_to_a_configuration_left() -> None:
    assert count_returns([]) == 0
    assert count_returns(["a", "a", "b", "b", "c"]) == 0  # repeats of the running one are no move
    assert count_returns(["a", "b", "a"]) == 1
    assert count_returns(["a", "b", "a", "b", "c", "a"]) == 3


def test_count_returns_skips_a_return_to_a_configuration_left_by_force() -> None:
    # 8 workers, 2 revoked -> 6, replaced -> 8: recovery, not a reversal
    assert count_returns([8, 6, 8], forced=[False, True, False]) == 0
    # ... then the planner moves back to 6 (left by choice) and to 8 again (now left by choice): both count
    assert count_returns([8, 6, 8, 6, 8], forced=[False, True, False, False, False]) == 2
    # a forced move is a property of the departure: 6 was left by choice, so returning to it counts
    assert count_returns([8, 6, 8, 6], forced=[False, True, False, False]) == 1
    assert count_returns([8, 6, 8], forced=[False, False, False]) == count_returns([8, 6, 8]) == 1


def test_count_returns_needs_one_forced_flag_per_configuration() -> None:
    with pytest.raises(InputError, match="one flag per configuration"):
        count_returns([8, 6, 8], forced=[True])


def test_backoff_margin_doubles_with_each_return_up_to_its_cap() -> None:
    assert [backoff_margin(0.05, returns=r) for r in range(5)] == pytest.approx([0.05, 0.1, 0.2, 0.4, MAX_BACKOFF_MARGIN])
    assert backoff_margin(0.05, returns=10**6) == MAX_BACKOFF_MARGIN  # no overflow
    assert backoff_margin(0.7, returns=3) == 0.7  # a margin set above the cap is never lowered
    assert backoff_margin(0.0, returns=3) == 0.0


@pytest.mark.parametrize(("margin", "returns", "match"), [(1.0, 0, "margin must be"), (0.05, -1, "returns must be"),
                                                          (0.05, 1.5, "returns must be"), (0.05, True, "returns must be")])
def test_backoff_margin_rejects_what_is_not_a_margin_or_a_count(margin, returns, match) -> None:
    with pytest.raises(InputError, match=match):
        backoff_margin(margin, returns=returns)


def test_by_success_a_job_that_moved_back_needs_a_larger_saving_to_move_again() -> None:
    cheaper = _p(0.9, cost=9.2, workers=8)  # saves 8 % of the job
    ask = dict(stay=_p(0.9), alternatives=[cheaper], remaining_s=2000, confidence=0.5)
    assert decide_replan(**ask, margin=backoff_margin(0.05, returns=0)).decision == "switch"
    d = decide_replan(**ask, margin=backoff_margin(0.05, returns=1))
    assert d.decision == "stay" and "10% margin" in d.reason


def test_with_the_budget_spent_the_nearest_is_the_cheapest_option_that_meets_the_deadline() -> None:
    # Every option's cost over a spent budget was infinite, so none came out nearest.
    cheap_late = _alt(cost=3.0, time_s=5000.0)
    d = decide_replan(stay=STAY, alternatives=[_alt(cost=12.0, time_s=500.0), _alt(cost=9.0, time_s=600.0, workers=6),
                                               cheap_late], remaining_s=800, budget_left=-4.0)
    assert d.decision == "infeasible" and d.nearest is not None
    assert (d.nearest.workers, d.nearest.cost) == (6, 9.0) and "needs 9 more" in d.reason
