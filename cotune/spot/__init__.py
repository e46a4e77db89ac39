"""Transient (spot) servers: revocation-aware time and cost, checkpointing, deadline
confidence, mixed spot/on-demand plans and re-planning.

* :func:`load_cluster` — the cluster file (TOML or YAML): GPU types, availability and
  price per market, revocation rate, replacement delay, checkpoint cost.
* :func:`revocation_estimate`, :func:`time_at_confidence_s` — expected time under
  revocations with the Young/Daly checkpoint interval, and the time that holds with
  probability ``q`` (:func:`revocation_time_cdf`: the law of the time, a mixture over
  the number of revocations).
* :func:`simulate` — a seeded Monte-Carlo simulator of the same process (and of the
  mixed policy), the ground truth the analytic model is tested against.
* :class:`SpotMarket` — the market stage behind ``recommend(..., cluster=...)``.
* :func:`replan` — the best configuration for the remaining work, with hysteresis.

Formulas and the file format: ``docs/spot.md``.
"""

from cotune.spot._cluster import CLUSTER_FILE_VERSION, Checkpoint, Cluster, GpuOffer, load_cluster, parse_cluster
from cotune.spot._market import MAX_MIXED_ATTEMPTS, PLAN_MARKETS, SpotDetails, SpotMarket, take_estimates
from cotune.spot._replan import Progress, ReplanResult, remaining_fraction, replan
from cotune.spot._revocation import (
    RevocationEstimate,
    expected_segment_time_s,
    expected_time_for_segments,
    job_rate_per_s,
    revocation_delay_nodes_s,
    revocation_estimate,
    revocation_quantile,
    revocation_time_cdf,
    time_at_confidence_s,
    young_daly_interval_s,
)
from cotune.spot._simulate import SimulationResult, simulate

__all__ = [
    "CLUSTER_FILE_VERSION",
    "MAX_MIXED_ATTEMPTS",
    "PLAN_MARKETS",
    "Checkpoint",
    "Cluster",
    "GpuOffer",
    "Progress",
    "ReplanResult",
    "RevocationEstimate",
    "SimulationResult",
    "SpotDetails",
    "SpotMarket",
    "expected_segment_time_s",
    "expected_time_for_segments",
    "job_rate_per_s",
    "load_cluster",
    "parse_cluster",
    "remaining_fraction",
    "replan",
    "revocation_delay_nodes_s",
    "revocation_estimate",
    "revocation_quantile",
    "revocation_time_cdf",
    "simulate",
    "take_estimates",
    "time_at_confidence_s",
    "young_daly_interval_s",
]
