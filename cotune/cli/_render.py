"""Human renderings of results (pure: data in, text out)."""

from __future__ import annotations

import math

from cotune.cli._output import fmt_num, one_line, table
from cotune.solver import Choice, Recommendation
from cotune.solver._estimate import DEFAULT_CONFIDENCE
from cotune.units import count_of, format_chance, format_duration, format_money

__all__ = ["render_recommendation", "render_fit_report"]


def _accumulation(c: Choice) -> str:
    """`` = 64 × 4 accumulation steps`` after a local batch its probes measured only with
    gradient accumulation (nothing otherwise): launched whole, it runs out of memory."""
    k = c.accum_steps
    return "" if k <= 1 else f" = {c.local_batch // k} × {k} accumulation steps"


def _span(lo: float, hi: float) -> str:
    return f"[{format_duration(lo)}–{format_duration(hi)}]"


def probability_percent(q: float) -> str:
    """``q`` (in (0, 1)) as a percentage with the fewest decimals that state it (``90%``,
    ``99.99%``), never rounded to 0 % or 100 %: ``TIME@100.0%`` for 0.9999 and "intervals 0%"
    for 0.001 named a quantile that does not exist."""
    x = float(q) * 100.0
    for decimals in range(0, 10):
        text = f"{x:.{decimals}f}"
        shown = float(text)
        if abs(shown - x) <= 1e-9 * max(1.0, x) and (0.0 < shown < 100.0 or not 0.0 < x < 100.0):
            return f"{text}%"
        if decimals >= 2 and 0.0 < shown < 100.0 and abs(shown - x) < 0.005:
            return f"{text}%"  # an inexact q (2/3): a few decimals say it well enough
    return f"{x:g}%"


def time_at_label(q: float) -> str:
    """The column of the time a plan is promised by at confidence ``q`` (its ``q``-quantile)."""
    return f"TIME@{probability_percent(q)}"


def _time_q(rec: Recommendation) -> float | None:
    """The confidence the time column and "(done by …)" state: the one asked for, or ½ (the
    median time to success) where --objective time ranks by it without one — else the table
    looked unsorted and the savings disagreed with the times shown."""
    return rec.confidence or (DEFAULT_CONFIDENCE if rec.objective == "time" else None)


def _row(mark: str, c: Choice, priced: bool, against: float | None = None, *, time_q: float | None = None) -> list[str]:
    # With a confidence, the time promised at it beside the median: what the deadline is
    # held against, and what --objective time minimises. Never reached in time: "—", as EPOCHS.
    shown = format_duration(c.time_at_confidence_s) if math.isfinite(c.time_at_confidence_s) else "—"
    at_q = [shown] if time_q else []
    return [
        mark,
        c.gpu,
        c.market,
        str(c.workers),
        str(c.hosts),
        str(c.local_batch),
        str(c.global_batch),
        f"{c.epochs:.1f}" if math.isfinite(c.epochs) else "—",
        format_duration(c.time_s),
        *at_q,
        _span(*c.time_interval_s),
        format_money(c.cost, priced=priced),
        table_chance(c.p_success, against),
        ",".join(c.extrapolated) or "",
    ]


def table_chance(p: float | None, against: float | None = None) -> str:
    # Whole percentages, never 100 % or 0 % (the model is not certain of either); more digits
    # where whole ones would read as meeting a confidence it misses (99.85 % against 0.999).
    return format_chance(p, against=against, digits=0, percent=True)


_HEAD = [
    "", "GPU", "MARKET", "WORKERS", "HOSTS", "LOCAL_B", "GLOBAL_B", "EPOCHS", "TIME", "INTERVAL", "COST", "P(SUCCESS)",
    "EXTRAPOLATED",
]
_RIGHT = [False, False, False, True, True, True, True, True, True, False, True, True, False]


def _columns(confidence: float | None) -> tuple[list[str], list[bool]]:
    """The candidate table's header and alignment (with a confidence: its time column too)."""
    if not confidence:
        return _HEAD, _RIGHT
    at = _HEAD.index("TIME") + 1
    return _HEAD[:at] + [time_at_label(confidence)] + _HEAD[at:], _RIGHT[:at] + [True] + _RIGHT[at:]


def render_recommendation(rec: Recommendation) -> str:
    goal = "≥" if rec.goal == "max" else "≤"
    limits = []
    if rec.deadline_s is not None:
        conf = f" (with probability {rec.confidence:g})" if rec.confidence else ""
        limits.append(f"by {format_duration(rec.deadline_s)}{conf}")
    elif rec.confidence:  # no deadline: the confidence is that the target is reached at all
        limits.append(f"(with probability {rec.confidence:g})")
    if rec.budget is not None:
        limits.append(f"within {format_money(rec.budget, priced=rec.priced)}")
    # The unit belongs to the cost objective; time is in seconds and needs no "(USD)".
    unit = (" (USD)" if rec.priced else " (worker-hours)") if rec.objective == "cost" else ""
    out = [
        f"cotune · {one_line(rec.workload)} · {one_line(rec.metric_name)} {goal} {rec.target:g} {' '.join(limits)}".rstrip(),
        f"objective: {rec.objective}{unit} · {rec.n_candidates:,} candidates, {rec.n_feasible:,} feasible · "
        f"intervals {probability_percent(rec.interval)} · solved in {rec.solve_time_s * 1000:.0f} ms",
        "",
    ]
    if rec.chosen is not None:
        time_q = _time_q(rec)
        rows = [_row("CHOSEN", rec.chosen, rec.priced, rec.confidence, time_q=time_q)] + [
            _row("", c, rec.priced, rec.confidence, time_q=time_q) for c in rec.runner_ups]
        head, right = _columns(time_q)
        out.append(table(head, rows, right=right))
        c = rec.chosen
        by_q = (f" (done by {format_duration(c.time_at_confidence_s)} with probability {time_q:g})"
                if time_q and math.isfinite(c.time_at_confidence_s) else "")
        out += [
            "",
            f"Run {c.workers} × {c.gpu} ({c.market}) on {c.hosts} host{'s' if c.hosts > 1 else ''}, local batch {c.local_batch}"
            f"{_accumulation(c)} (global {c.global_batch}): {c.epochs:.1f} epochs, {format_duration(c.time_s)}{by_q}, "
            f"{format_money(c.cost, priced=rec.priced)}; predicted {one_line(rec.metric_name)} {fmt_num(c.metric)}.",
            f"Chance of reaching the target{' by the deadline' if rec.deadline_s is not None else ''}"
            f"{' within the budget' if rec.budget is not None else ''}: "
            f"{table_chance(c.p_success, rec.confidence)} (target reached at all: {table_chance(c.p_reach)}).",
        ]
        savings = rec.savings()
        lines = []
        for name, label in (("resource_only", "resource-only"), ("batch_only", "batch-only")):
            base = rec.baselines.get(name)
            s = rec.baseline_settings.get(name, {})
            fixed = f"local batch {s.get('local_batch')}" if name == "resource_only" else f"{s.get('workers')} × {s.get('gpu')}"
            fixed += " fixed"
            if s.get("requested_local_batch") is not None:
                fixed += f": the nearest in the space to the {s['requested_local_batch']} asked"
            if base is None:
                lines.append(f"  {label:<14} ({fixed}): " + (s.get("outside_space") or "no feasible configuration"))
                continue
            saving = savings.get(name)
            what = "cost" if rec.objective == "cost" else "time"
            # A near-tie chosen for less extrapolation may cost a little more than a baseline's
            # pick; float noise on an exact tie printed "saves -0.0%".
            gain = ("" if saving is None else f" → the same {what}" if abs(saving) < 0.0005 else
                    f" → co-tuning saves {saving:.1%}" if saving > 0 else
                    f" → co-tuning's choice takes {-saving:.1%} more {what} (see the notes)")
            # for speed at a confidence, the time the saving is measured on: the one promised at it
            at_q = (f" (done by {format_duration(base.time_at_confidence_s)} with probability {time_q:g})"
                    if time_q and rec.objective == "time" else "")
            lines.append(
                f"  {label:<14} ({fixed}): {base.workers} × {base.gpu}, local batch {base.local_batch}{_accumulation(base)}, "
                f"{format_duration(base.time_s)}{at_q}, {format_money(base.cost, priced=rec.priced)}{gain}"
            )
        out += ["", "Against tuning one knob at a time (the paper's baselines):"] + lines
    else:
        out.append("NO FEASIBLE CONFIGURATION.")
        if rec.nearest:
            time_q = _time_q(rec)
            head, right = _columns(time_q)
            out += ["", "Nearest candidates:",
                    table(head, [_row("", c, rec.priced, rec.confidence, time_q=time_q) for c in rec.nearest], right=right)]
        out += ["", "To find one:"] + [f"  - {r}" for r in rec.relax]
    if rec.pareto:
        out += ["", "Cost–time frontier (target reached; ignoring deadline and budget):"]
        rows = [
            [
                "*" if rec.chosen is not None and (c.gpu, c.workers, c.hosts, c.local_batch, c.market)
                == (rec.chosen.gpu, rec.chosen.workers, rec.chosen.hosts, rec.chosen.local_batch, rec.chosen.market) else "",
                c.gpu,
                c.market,
                str(c.workers),
                str(c.local_batch),
                format_duration(c.time_s),
                format_money(c.cost, priced=rec.priced),
            ]
            for c in rec.pareto
        ]
        out.append(
            table(["", "GPU", "MARKET", "WORKERS", "LOCAL_B", "TIME", "COST"], rows, right=[False, False, False, True, True, True, True])
        )
    if rec.next_measurement is not None:
        m = rec.next_measurement
        out += ["", f"Next measurement: {m.reason}."]
    if rec.notes:
        out += ["", "Notes:"] + [f"  - {one_line(n)}" for n in rec.notes]
    return "\n".join(out)


def _pct(x: float, digits: int) -> str:
    return "—" if not math.isfinite(x) else f"{x:.{digits}%}"


def _probed_span(lo_hi) -> str:
    """A probed range, ``"1–16"``, or the one value probed (``"1"``, not ``"1–1"``)."""
    lo, hi = lo_hi
    return f"{lo}" if lo == hi else f"{lo}–{hi}"


#: Outlier batches listed by name in `cotune fit`'s terminal report (the rest are counted).
_MAX_LISTED = 12


def render_fit_report(report) -> str:  # FitReport; untyped to keep the import lazy
    out = [f"cotune fit · {one_line(report.workload)}", ""]
    rows = []
    for t in report.time:
        rows.append(
            [
                t.gpu,
                str(t.n_records),
                _probed_span(t.workers_range),
                _probed_span(t.hosts_range),
                _probed_span(t.local_batch_range),
                _pct(t.cv_mape, 1),
                _pct(t.interval_coverage, 0),
                "—" if t.extrapolation_mape is None else f"{t.extrapolation_mape:.1%} (fit ≤{t.extrapolation_split}, test >{t.extrapolation_split})",
            ]
        )
    if not report.time:
        # A profile imported from a log without step times: the accuracy model alone.
        out.append("Step-time model: not fitted, the profile has no step records: time the steps with 'cotune profile' "
                   "(its timing probes) before 'cotune recommend'")
    else:
        out.append("Step-time model (5-fold cross-validation over configurations; interpolated inside the probed ranges):")
        out.append(
            table(
                ["GPU", "PROBES", "WORKERS", "HOSTS", "LOCAL_B", "CV MAPE", "90% COVER", "EXTRAPOLATION MAPE"],
                rows,
                right=[False, True, True, True, True, True, True, False],
            )
        )
    for t in report.time:
        if t.level_effects and t.level_effects_cv is not None:
            off, on = t.level_effects_cv
            out.append(f"{t.gpu}: the probes depart from the monotone law at some batches or placements; their level effects are "
                       f"kept (cross-validated mean |log error| {off:.3f} without, {on:.3f} with; docs/models.md § 1)")
            if t.level_effects_largest:
                from cotune.models._effects import describe_level_effect

                out.append("  largest (measured against the law): " + ", ".join(describe_level_effect(e) for e in t.level_effects_largest))
        if not t.sync_growth_measured:
            from cotune.models._backbone import GROWTH_PROBES, SYNC_GROWTH_RANGE, SYNC_GROWTH_RATIO

            lo, hi = SYNC_GROWTH_RANGE
            out.append(f"{t.gpu}: how synchronisation grows with workers is not measured (it takes {GROWTH_PROBES}, "
                       f"on one host or both across hosts): it is the prior, {SYNC_GROWTH_RATIO:g} x the two-worker sync cost "
                       f"per doubling, and intervals past {count_of(t.workers_range[1], 'worker')} carry its spread over public clusters "
                       f"({lo:g}-{hi:g}); probe another worker count to measure it")
    for gpu, batch in report.out_of_memory:
        out.append(f"{gpu}: local batch {batch} ran out of memory (a failure record): recommend and replan search local "
                   f"batches below it; a step measured at {batch} or above after it lifts the limit")
    out.append("")
    if report.notes:
        out += ["Left out of the fit:"] + [f"  - {one_line(n)}" for n in report.notes] + [""]
    a = report.accuracy
    if a is None:
        out.append(f"Accuracy model: not fitted — {report.accuracy_error}")
        return "\n".join(out)
    out.append(
        f"Accuracy model: {a.n_eval} eval record{'' if a.n_eval == 1 else 's'}, {a.n_runs} run{'' if a.n_runs == 1 else 's'} "
        f"({a.n_diverged} with a diverged evaluation), "
        f"epochs {a.epochs_range[0]:.3g}–{a.epochs_range[1]:.3g}, residual σ {a.residual_sigma:.3g}"
    )
    from cotune.models._validate import MAX_HELD_OUT_BATCHES

    if len(a.batches) == 1:
        # One curve (a run's imported log): no other batch to predict it from.
        out.append(f"One measured global batch ({a.batches[0]}): nothing to hold out. Other batches are the critical-batch "
                   "law's extrapolation, its B_noise from the gradient-noise records the run logged before each target (else "
                   "epochs are taken to grow in proportion to the batch, the cautious end); a second batch's curve "
                   "(cotune profile --curves, or another run's log with cotune import --append) is what measures it")

    spread = (f"; {MAX_HELD_OUT_BATCHES} of the {len(a.batches)} batches held out, evenly spread"
              if len(a.batches) > MAX_HELD_OUT_BATCHES else "")
    out.append(f"Leave-one-batch-out epochs to the reference target {a.reference_target:.4g} (each held-out batch "
               f"predicted from the others; the error: interpolated batches only{spread}):")
    # With more batches than are held out, the terminal shows the held-out ones only (a
    # pooled profile of thousands of batches printed a row of dashes for each); --json has all.
    lows = a.loo_lower or (None,) * len(a.batches)
    highs = a.loo_upper or (None,) * len(a.batches)
    shown = [(b, m, p, lo, hi) for b, m, p, lo, hi in zip(a.batches, a.measured_epochs, a.loo_epochs, lows, highs)
             if p is not None or lo is not None or len(a.batches) <= MAX_HELD_OUT_BATCHES]
    level = f"{a.interval:.0%} INTERVAL"
    rows = [
        [str(b), f"{m:.1f}" if math.isfinite(m) else "—", "—" if p is None else f"{p:.1f}",
         "—" if p is None or not math.isfinite(m) else f"{abs(p / m - 1):.1%}",
         "—" if lo is None else f"[{lo:.1f}–{hi:.1f}]",
         "—" if lo is None else ("yes" if lo <= m <= hi else "no")]
        for b, m, p, lo, hi in shown
    ]
    out.append(table(["GLOBAL_B", "MEASURED", "PREDICTED", "ERROR", level, "HELD"], rows,
                     right=[True, True, True, True, True, False]))
    if len(shown) < len(a.batches):
        out.append(f"({len(a.batches) - len(shown)} batches without a held-out prediction are not shown; --json lists every batch)")
    if a.interval_count:
        out.append(f"the {a.interval:.0%} interval held the measured epochs at {a.interval_covered} of {a.interval_count} "
                   "held-out batches (the end batches' intervals are extrapolations)")
    if a.loo_mape is not None:
        out.append(f"mean error {a.loo_mape:.1%}")
    if a.kappa_inside is not None:
        out.append(
            f"epochs spread per doubling of global batch from a measured one: {a.kappa_inside:.3f} (between), "
            f"{a.kappa_beyond:.3f} (beyond, before its factor by how far along the curve the target lies) in log-epochs"
        )
    if a.outlier_batches:
        listed = ", ".join(str(b) for b in a.outlier_batches[:_MAX_LISTED])
        more = len(a.outlier_batches) - _MAX_LISTED
        out.append(
            f"set aside as outliers (off the robust critical-batch law; they answer only for themselves): {listed}"
            + (f" and {more} more (--json lists them)" if more > 0 else "")
        )
    if a.failed_batches:
        out.append(
            "failed (their curves end more than half a curve's rise below the other batches': a diverged, stuck or "
            "off-recipe run; they answer only for themselves, and the reference target and the plateau drift between "
            "batches leave them out — rerun them to use them): " + ", ".join(str(b) for b in a.failed_batches)
        )
    if a.plateau_off_batches:
        out.append(
            "plateau off both neighbours' (a lone dip or spike, left out of how fast the plateau drifts between batches; "
            "they answer for themselves): " + ", ".join(str(b) for b in a.plateau_off_batches)
        )
    out += ["", "Outside the probed ranges predictions come from the parametric backbone (time) and the",
            "critical-batch law (epochs); recommendations flag them as extrapolated."]
    return "\n".join(out)
