"""One estimated candidate as a frozen :class:`Choice` (what results report)."""

from __future__ import annotations

import math

from cotune.solver._estimate import Estimates
from cotune.solver._result import Choice

__all__ = ["choice_at"]


def choice_at(est: Estimates, i: int, target: float) -> Choice:
    """The estimated candidate ``i`` as a frozen :class:`Choice`."""
    c = est.candidates
    epochs = float(est.epochs[i])
    # Training stops at the first epoch the fitted metric reaches the target, so the
    # predicted final metric is the target itself (the surface between measured batches is
    # not re-read here: linear-in-log-batch metric and log-log epochs differ slightly).
    metric = float(target) if math.isfinite(epochs) else math.nan
    extrap = tuple(
        name for name, flag in (("time", est.time_extrapolated[i]), ("epochs", est.epochs_extrapolated[i])) if flag
    )
    return Choice(
        gpu=c.gpus[int(c.gpu[i])],
        market=c.markets[int(c.market[i])],
        workers=int(c.workers[i]),
        hosts=int(c.hosts[i]),
        local_batch=int(c.local_batch[i]),
        step_time_s=float(est.step_time_s[i]),
        epoch_time_s=float(est.epoch_time_s[i]),
        epochs=epochs,
        epochs_interval=(float(est.epochs_lower[i]), float(est.epochs_upper[i])),
        time_s=float(est.time_s[i]),
        time_interval_s=(float(est.time_lower_s[i]), float(est.time_upper_s[i])),
        time_at_confidence_s=float(est.time_at_confidence_s[i]),
        cost=float(est.cost[i]),
        cost_interval=(float(est.cost_lower[i]), float(est.cost_upper[i])),
        price_per_hour=float(est.price_per_hour[i]),
        metric=metric,
        extrapolated=extrap,
        p_reach=float(est.p_reach[i]),
        p_success=None if est.p_success is None else float(est.p_success[i]),
    )
