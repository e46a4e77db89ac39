"""Enumerate → estimate → solve: the cheapest candidate meeting target and deadline."""

from cotune.solver._choice import choice_at
from cotune.solver._decide import CHANGES, ReplanDecision, ReplanOption, changes_between, decide_replan, lr_scale
from cotune.solver._estimate import DEFAULT_CONFIDENCE, MIN_CHANCE, Estimates, estimate, success_probability
from cotune.solver._inputs import SearchSpaceTooLarge, build_space, check_candidate_limit, count_candidates, price_table
from cotune.solver._market import MarketStage, OnDemandMarket
from cotune.solver._plan import Plan, balanced_hosts, plan_for
from cotune.solver._probes import (
    DEFAULT_PROBE_SETUP_S,
    DEFAULT_PROBE_STEPS,
    MAX_MEASUREMENT_OPTIONS,
    STEP_CORRELATION_DOUBLINGS,
    NextMeasurement,
    next_measurement,
    ProbeDecision,
    ProbeGains,
    ProbeOption,
    config_doublings,
    option_gains,
    plan_next_probe,
    probed_mask,
    probed_step_floor,
    standard_options,
    step_correlation,
)
from cotune.solver._outlook import MAX_SHIFT, JobOutlook, carry_for, job_outlook, shift_carry
from cotune.solver._remaining import RemainingWork, remaining_work
from cotune.solver._result import RESULT_SCHEMA_VERSION, Choice, Recommendation
from cotune.solver._solve import Feasibility, best_index, feasibility, pareto_indices, prefer_safer, ranked, with_success
from cotune.solver._space import MARKETS, Candidates, SearchSpace, enumerate_candidates, geometric_batches

__all__ = [
    "CHANGES",
    "STEP_CORRELATION_DOUBLINGS",
    "DEFAULT_PROBE_SETUP_S",
    "DEFAULT_PROBE_STEPS",
    "MAX_MEASUREMENT_OPTIONS",
    "NextMeasurement",
    "next_measurement",
    "config_doublings",
    "step_correlation",
    "MARKETS",
    "ReplanDecision",
    "ReplanOption",
    "JobOutlook",
    "MAX_SHIFT",
    "RemainingWork",
    "job_outlook",
    "shift_carry",
    "carry_for",
    "remaining_work",
    "changes_between",
    "decide_replan",
    "lr_scale",
    "RESULT_SCHEMA_VERSION",
    "Candidates",
    "DEFAULT_CONFIDENCE",
    "MIN_CHANCE",
    "Choice",
    "Estimates",
    "Feasibility",
    "MarketStage",
    "OnDemandMarket",
    "Plan",
    "ProbeDecision",
    "ProbeGains",
    "ProbeOption",
    "Recommendation",
    "SearchSpace",
    "SearchSpaceTooLarge",
    "balanced_hosts",
    "best_index",
    "build_space",
    "check_candidate_limit",
    "choice_at",
    "count_candidates",
    "enumerate_candidates",
    "estimate",
    "feasibility",
    "geometric_batches",
    "option_gains",
    "pareto_indices",
    "plan_for",
    "plan_next_probe",
    "probed_mask",
    "probed_step_floor",
    "prefer_safer",
    "price_table",
    "ranked",
    "standard_options",
    "success_probability",
    "with_success",
]
