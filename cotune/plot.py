"""Pictures of a recommendation and of a fit (matplotlib, Agg; ``pip install 'cotune[plot]'``).

Both functions build a :class:`matplotlib.figure.Figure` with the Agg canvas directly,
without pyplot, so they neither change the caller's backend nor keep figures alive
in pyplot's registry. They return the figure and write it when given a path: PNG, SVG or PDF by the path's
suffix (:data:`PLOT_FORMATS`; PNG without one).
"""

from __future__ import annotations

import contextlib
import errno
import io
import math
import os
import stat
import uuid
from typing import TYPE_CHECKING, Any

import numpy as np

from cotune._lazy import annotation_module
from cotune.errors import InputError, StorageError

if TYPE_CHECKING:  # pragma: no cover
    import matplotlib.figure

    import cotune.models._validate
    import cotune.solver
else:
    # Annotations only, imported when a tool evaluates them: matplotlib is imported when a
    # picture is drawn, and cotune.solver imports this module (Recommendation.plot).
    cotune = annotation_module("cotune")
    matplotlib = annotation_module("matplotlib")

__all__ = ["plot_recommendation", "plot_fit", "plot_format"]

#: The picture formats a path may ask for, by its suffix. Each is one matplotlib writes
#: with the Agg canvas and no extra package; a path without a suffix gets a PNG.
PLOT_FORMATS: tuple[str, ...] = ("png", "svg", "pdf")


def plot_format(path: str | os.PathLike[str]) -> str:
    """The format a plot path asks for (``png`` without a suffix); a one-line error otherwise.

    Checked before any work, so ``--plot frontier.jpg`` fails at once and not after the fit.
    Directories are refused here too: matplotlib would otherwise write ``dir.png`` beside them.
    """
    text = os.fspath(path)
    if not text or os.path.isdir(text):
        raise InputError(f"--plot needs a file name, got {text!r}; give a path such as frontier.png")
    suffix = os.path.splitext(text)[1].lower().lstrip(".")
    if not suffix:
        return "png"
    if suffix not in PLOT_FORMATS:
        raise InputError(f"cannot draw a .{suffix} picture ({text}): cotune writes "
                         + ", ".join(f".{f}" for f in PLOT_FORMATS) + "; change the suffix")
    return suffix


def _figure(width: float, height: float) -> "matplotlib.figure.Figure":
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError("plots need matplotlib: pip install 'cotune[plot]'") from None
    fig = Figure(figsize=(width, height), dpi=110, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


# Write errors of the machine, not of the path the user chose: exit 3 as for every file cotune
# writes (cotune.errors.StorageError), not "choose a writable path" and exit 2.
_STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EIO, errno.EFBIG})


def _save(fig: "matplotlib.figure.Figure", path: str | os.PathLike[str] | None) -> None:
    """Write ``fig`` to ``path`` whole or not at all: into a temporary file beside it, then
    renamed over it, so a full disk or a kill mid-write leaves an earlier picture there intact
    rather than a truncated one. A symbolic link is followed: the picture replaces the file it
    points to, beside which the temporary file goes, and the link stays. A path that exists and
    is no regular file (``/dev/stdout``, a pipe) is written directly: renaming over it would
    replace the device with a file."""
    if path is None:
        return
    fmt = plot_format(path)
    text = os.fspath(path)
    tmp: str | None = None
    try:
        try:
            mode = os.stat(text).st_mode  # of what a link points to
        except FileNotFoundError:
            mode = None
        if mode is not None and not stat.S_ISREG(mode):
            buf = io.BytesIO()  # a pipe cannot seek, which a PNG writer does
            fig.savefig(buf, format=fmt)
            with os.fdopen(_open_unseekable(text, mode=mode), "wb") as fh:
                fh.write(buf.getvalue())
            return
        # /proc/self/fd/N links are handled above: realpath would give "pipe:[…]", no path.
        target = os.path.realpath(text)
        tmp = os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.{uuid.uuid4().hex[:12]}.tmp")
        # 0o666 less the umask, as open() would make the picture (mkstemp's 0o600 would hide it
        # from a web server that serves it); a picture replaced keeps its own mode.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "wb") as fh:
            if mode is not None and hasattr(os, "fchmod"):  # not on Windows before Python 3.13
                os.fchmod(fh.fileno(), mode & 0o7777)
            fig.savefig(fh, format=fmt)
        os.replace(tmp, target)
        tmp = None
    except OSError as exc:
        if exc.errno in _STORAGE_ERRNOS:
            raise StorageError.from_os_error(exc, path=text, doing="write the plot") from None
        raise InputError(f"cannot write the plot to {text}: {exc.strerror or exc}; choose a writable path") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def _open_unseekable(path: str, *, mode: int) -> int:
    """A descriptor for writing the device or pipe at ``path``, in blocking mode.

    Opened non-blocking first: a blocking open of a named pipe waits for a reader, forever
    if none comes, where no reader is an error to say at once."""
    nonblock = getattr(os, "O_NONBLOCK", 0)  # not on Windows, which has no named pipes in the filesystem
    try:
        fd = os.open(path, os.O_WRONLY | nonblock)
    except OSError as exc:
        if exc.errno == errno.ENXIO and stat.S_ISFIFO(mode):
            raise InputError(f"cannot write the plot to {path}: no reader on the pipe: start the program that reads "
                             "it first, or choose a file") from None
        raise
    if nonblock:
        import fcntl

        try:
            # Writes block again: a reader slower than the picture's bytes is no error (EAGAIN).
            fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~nonblock)
        except OSError:
            os.close(fd)
            raise
    return fd


def _interval(values: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Error-bar half-lengths; an unbounded side is drawn to the value (no bar)."""
    lo = np.where(np.isfinite(lower), values - lower, 0.0)
    hi = np.where(np.isfinite(upper), upper - values, 0.0)
    return np.vstack([np.clip(lo, 0, None), np.clip(hi, 0, None)])


def plot_recommendation(rec: "cotune.solver.Recommendation", *, path: str | os.PathLike[str] | None = None,
                        ax: Any = None) -> "matplotlib.figure.Figure":
    """The cost–time picture of one recommendation.

    Every candidate that reaches the target (feasible ones dark, the rest light), the
    frontier, the chosen candidate and the two one-knob baselines with their time and
    cost intervals, and the deadline.
    """
    frame = rec.candidates_frame()
    fig = ax.figure if ax is not None else _figure(8.0, 5.2)
    ax = ax if ax is not None else fig.add_subplot()
    hours = 3600.0
    reach = frame[frame["reaches_target"] & np.isfinite(frame["time_s"]) & np.isfinite(frame["cost"])]
    feasible = reach[reach["feasible"]]
    other = reach[~reach["feasible"]]
    unit = "USD" if rec.priced else "worker-hours"
    if len(other):
        ax.scatter(other["time_s"] / hours, other["cost"], s=10, color="#c7c7c7", label=f"reaches target, infeasible ({len(other)})")
    if len(feasible):
        ax.scatter(feasible["time_s"] / hours, feasible["cost"], s=12, color="#6b8fb3", label=f"feasible ({len(feasible)})")
    if rec.pareto:
        t = np.array([c.time_s for c in rec.pareto]) / hours
        c = np.array([c.cost for c in rec.pareto])
        order = np.argsort(t)
        ax.plot(t[order], c[order], color="#1f4e79", lw=1.2, label="frontier (deadline and budget ignored)")

    def marked(choice, label: str, marker: str, color: str, size: float) -> None:
        t = np.array([choice.time_s]) / hours
        c = np.array([choice.cost])
        xerr = _interval(t, np.array([choice.time_interval_s[0]]) / hours, np.array([choice.time_interval_s[1]]) / hours)
        yerr = _interval(c, np.array([choice.cost_interval[0]]), np.array([choice.cost_interval[1]]))
        ax.errorbar(t, c, xerr=xerr, yerr=yerr, fmt=marker, ms=size, color=color, ecolor=color, elinewidth=1, capsize=3,
                    zorder=5, label=f"{label}: {choice.workers} × {choice.gpu}, local batch {choice.local_batch}")

    names = {"resource_only": "resource-only baseline", "batch_only": "batch-only baseline"}
    for (name, base), (marker, color) in zip(rec.baselines.items(), (("s", "#d9822b"), ("D", "#7a5195"))):
        if base is not None and math.isfinite(base.time_s) and math.isfinite(base.cost):
            marked(base, names.get(name, name.replace("_", "-")), marker, color, 7)
    if rec.chosen is not None:
        marked(rec.chosen, "chosen", "*", "#c0392b", 15)
    if rec.deadline_s is not None:
        ax.axvline(rec.deadline_s / hours, color="#555555", ls="--", lw=1, label=f"deadline {rec.deadline_s / hours:.3g} h")
    # Wide ranges (thousands of workers, any host count) on log axes, or the frontier is a flat line.
    if len(reach) and (reach["time_s"].max() / max(reach["time_s"].min(), 1e-9)) > 20:
        ax.set_xscale("log")
    if len(reach) and (reach["cost"].max() / max(reach["cost"].min(), 1e-12)) > 20:
        ax.set_yscale("log")
    ax.set_xlabel("predicted training time (hours)")
    ax.set_ylabel(f"predicted cost ({unit})")
    interval = f"bars: {rec.interval:.0%} intervals"
    ax.set_title(f"{rec.workload}: {rec.metric_name} {'≥' if rec.goal == 'max' else '≤'} {rec.target:g} — {interval}", fontsize=10)
    ax.grid(True, alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="best")
    else:  # nothing to draw: say so on the picture (an empty legend is a matplotlib warning)
        ax.text(0.5, 0.5, f"no candidate reaches {rec.metric_name} {rec.target:g}", transform=ax.transAxes,
                ha="center", va="center", color="#555555")
    _save(fig, path)
    return fig


def plot_fit(report: "cotune.models._validate.FitReport", *,
             path: str | os.PathLike[str] | None = None) -> "matplotlib.figure.Figure":
    """Held-out predictions against measurements: step time (every probe, K-fold =
    interpolated, fitted-on-fewer-workers = extrapolated) and epochs to the reference
    target (left-one-batch-out; the end batches are extrapolated)."""
    held = report.held_out_frame()
    acc = report.accuracy_frame()
    fig = _figure(11.0, 4.8)
    left, right = fig.subplots(1, 2)
    styles = {"interpolated": ("o", "#1f77b4"), "extrapolated": ("^", "#d62728")}
    for kind, (marker, color) in styles.items():
        part = held[held["kind"] == kind]
        if len(part):
            left.scatter(part["measured_s"], part["predicted_s"], s=12, marker=marker, color=color, alpha=0.6,
                         label=f"{kind} ({len(part)})")
    if len(held):
        lo = float(min(held["measured_s"].min(), held["predicted_s"].min()))
        hi = float(max(held["measured_s"].max(), held["predicted_s"].max()))
        left.plot([lo, hi], [lo, hi], color="#444444", lw=1, label="predicted = measured")
        left.set_xscale("log")
        left.set_yscale("log")
    if not report.time:  # a profile imported from a log without step times: the accuracy panel alone
        left.text(0.5, 0.5, "no step records: time the steps with 'cotune profile'", ha="center", va="center",
                  wrap=True, fontsize=9)
        left.set_axis_off()
    else:
        gpus = ", ".join(t.gpu for t in report.time)
        left.set_title(f"step time, held-out probes ({gpus})", fontsize=10)
        left.set_xlabel("measured step time (s)")
        left.set_ylabel("predicted step time (s)")
        left.grid(True, which="both", alpha=0.3)
        left.legend(fontsize=8)

    if report.accuracy is None:
        right.text(0.5, 0.5, report.accuracy_error or "no accuracy model", ha="center", va="center", wrap=True, fontsize=9)
        right.set_axis_off()
    else:
        right.plot(acc["global_batch"], acc["measured_epochs"], "k.-", label="measured")
        for kind, (marker, color) in styles.items():
            part = acc[(acc["kind"] == kind) & acc["predicted_epochs"].notna()]
            if len(part):
                right.scatter(part["global_batch"], part["predicted_epochs"].astype(float), marker=marker, color=color, s=40,
                              zorder=3, label=f"predicted, {kind}")
        band = acc[acc["lower"].notna()]
        if len(band):  # each held-out batch's interval: does it hold the measured point?
            a = report.accuracy
            right.vlines(band["global_batch"], band["lower"].astype(float), band["upper"].astype(float), color="#7f7f7f",
                         lw=3, alpha=0.45, zorder=2,
                         label=f"{a.interval:.0%} interval, held {a.interval_covered} of {a.interval_count}")
        right.set_xscale("log", base=2)
        right.set_title(f"epochs to {report.accuracy.reference_target:.4g}, batch left out", fontsize=10)
        right.set_xlabel("global batch")
        right.set_ylabel("epochs to target")
        right.grid(True, alpha=0.3)
        right.legend(fontsize=8)
    fig.suptitle(f"{report.workload}: predicted vs measured", fontsize=11)
    _save(fig, path)
    return fig
