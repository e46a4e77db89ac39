"""The workload protocol: the user's training code behind a few factories.

A :class:`Workload` names the pieces a probe needs and nothing else: a model, the
training (and held-out) data, a loss, an optimizer, and how to score the model. The
profiler owns the loop (warm-up, timing, DDP, learning-rate scaling), so the user's
code stays plain PyTorch. See ``examples/`` for a workload in a dozen lines and for an
ordinary training script turned into one.

Loading: ``path/to/file.py:name`` or ``package.module:name``; ``name`` is a
:class:`Workload` or a zero-argument callable returning one. Every torchrun worker
loads the workload again in its own process, so factories must be importable (no
lambdas closed over objects built in ``__main__`` of another process).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import os
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

from cotune.errors import InputError

__all__ = ["Workload", "load_workload", "WorkloadError", "LR_SCALING_RULES", "MAX_DURATION_S", "MAX_SEED"]

LR_SCALING_RULES = ("sqrt", "linear", "none")


class WorkloadError(InputError):
    """A workload spec cannot be loaded or a workload is malformed (message has the fix).

    An :class:`~cotune.errors.InputError` (so a ``ValueError`` too): the user's to fix, exit 2.
    """


@dataclass(frozen=True)
class Workload:
    """A training job the profiler can probe.

    Required factories (each called once per worker process, with no arguments unless
    stated):

    * ``model() -> torch.nn.Module``;
    * ``train_data() -> torch.utils.data.Dataset`` yielding ``(inputs, target)``;
    * ``loss() -> callable(outputs, target) -> scalar tensor``;
    * ``optimizer(params, *, lr) -> torch.optim.Optimizer``.

    Optional:

    * ``eval_data() -> Dataset`` held-out data for learning curves (required by ``--curves``);
    * ``evaluate(model, loader) -> float`` the metric on held-out data; the default is
      top-1 accuracy of ``argmax(model(x))`` against ``y``;
    * ``step(model, batch, loss_fn) -> loss tensor`` for batches that are not
      ``(inputs, target)``: run the forward pass and return the loss (the profiler calls
      ``backward`` and the optimizer).

    ``base_lr`` is the learning rate at global batch ``base_batch``; at global batch
    ``B`` the profiler uses ``base_lr × (B / base_batch)^p`` with ``p = 0.5`` for
    ``lr_scaling="sqrt"`` (default), ``1`` for ``"linear"`` and ``0`` for ``"none"``,
    warmed up linearly over ``warmup_epochs`` (Goyal et al. 2017).

    ``dataset_size`` (training samples) saves building ``train_data()`` in the parent
    process just to count it; by default it is ``len(train_data())``.

    ``simulate_oom_above`` makes every probe with a local batch above it fail like an
    out-of-memory error: a knob for tests and demos on machines without a GPU.
    """

    name: str
    model: Callable[[], Any]
    train_data: Callable[[], Any]
    loss: Callable[[], Callable[..., Any]]
    optimizer: Callable[..., Any]
    eval_data: Callable[[], Any] | None = None
    evaluate: Callable[[Any, Any], float] | None = None
    step: Callable[[Any, Any, Callable[..., Any]], Any] | None = None
    metric: str = "accuracy"
    goal: Literal["max", "min"] = "max"
    base_lr: float = 0.1
    base_batch: int = 32
    lr_scaling: Literal["sqrt", "linear", "none"] = "sqrt"
    warmup_epochs: float = 1.0
    simulate_oom_above: int | None = None
    dataset_size: int | None = None

    def __post_init__(self) -> None:
        check_workload_fields(self)

    def count_samples(self) -> int:
        """Training samples (``dataset_size``, else the length of ``train_data()``)."""
        return int(self.dataset_size) if self.dataset_size is not None else len(self.train_data())

    def lr_at(self, global_batch: int) -> float:
        """Peak learning rate at ``global_batch`` under the workload's scaling rule."""
        return scaled_lr(self, global_batch)


def _import_file(path: Path) -> Any:
    # A stable module name per file, so repeated loads in one process reuse the module
    # (and dataclasses/pickling inside it see a registered module).
    mod_name = "cotune_workload_" + "".join(c if c.isalnum() else "_" for c in str(path.resolve()))
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise WorkloadError(f"cannot import {path}: give a Python file such as examples/digits_cnn.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    # The file's own folder is importable, as it is for `python FILE.py`: a training script
    # split into modules (`from model import Net` beside it) loads here as it runs there.
    # Appended, not prepended: a file named like an installed package (torch.py, profiler.py)
    # must not shadow it.
    folder = str(path.resolve().parent)
    if folder not in sys.path:
        sys.path.append(folder)
    try:
        spec.loader.exec_module(module)
    except (Exception, SystemExit) as exc:
        del sys.modules[mod_name]
        raise _import_failure(str(path), exc) from (None if isinstance(exc, SystemExit) else exc)
    return module


def _import_failure(what: str, exc: BaseException) -> WorkloadError:
    """The one-line error for importing ``what`` (a file or a module) that raised ``exc``:
    the same words for both forms of the spec."""
    if isinstance(exc, SystemExit):  # a script's main that runs at import
        return WorkloadError(f"importing {what} called sys.exit({exc.code!r}): the file runs its script at import; put "
                             "that code under `if __name__ == \"__main__\":` so importing only defines the workload")
    return WorkloadError(f"importing {what} failed with {type(exc).__name__}: {exc}: {_import_fix(exc)}")


def _import_module(target: str) -> Any:
    """``importlib.import_module(target)``; every failure a :class:`WorkloadError`.

    The module's own code runs here as a file's does: its exception, SyntaxError or
    sys.exit is the workload's to fix (it was an internal error, exit 4, or a silent exit).
    The working folder is importable, as it is for ``python -m profiler`` and for the workers
    (their PYTHONPATH holds it): the ``cotune`` console script's sys.path lacks it, and a
    package there (``mypkg.wlmod:workload``) was "no module named". Appended, as a FILE.py's
    folder: a folder named like an installed package must not shadow it.
    """
    try:
        cwd = os.getcwd()
    except OSError:  # the working folder was removed: nothing there to import
        cwd = None
    if cwd is not None and cwd not in sys.path and "" not in sys.path:
        sys.path.append(cwd)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError as exc:
        if exc.name and (target == exc.name or target.startswith(exc.name + ".")):  # the spec's own module is missing
            raise WorkloadError(f"cannot import module {target!r} ({exc}): check the name or give a FILE.py path") from None
        raise _import_failure(f"module {target!r}", exc) from exc
    except SystemExit as exc:
        raise _import_failure(f"module {target!r}", exc) from None
    except Exception as exc:
        raise _import_failure(f"module {target!r}", exc) from exc


def _import_fix(exc: BaseException) -> str:
    """What to change when importing the workload file fails: the file is not always at fault."""
    if isinstance(exc, MemoryError):
        # torch alone maps over a gigabyte of address space: `ulimit -v` or a small container
        # limit fails its import before the workload's own code runs.
        return ("the process ran out of memory while importing (its imports, torch included, need more): raise the "
                "memory limit (ulimit -v, the container's) and rerun")
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        return f"module {exc.name!r} is not installed in this Python ({sys.executable}): install it there and rerun"
    return "fix the workload file"


#: The longest duration any of the profiler's options takes (``--probe-timeout``,
#: ``--probe-budget``, ``--deadline``, …): a year. Beyond it the time-out alarm overflows
#: (``signal.setitimer`` refused 1e12 s), and no probe or job here is meant to run longer.
MAX_DURATION_S = 365 * 86400.0

#: Seeds run from 0 to this (2**31 - 1): the torch and TensorFlow workers derive further
#: seeds from a seed (× 100003 per epoch, NumPy's 32-bit seed), which overflow far above it.
MAX_SEED = 2**31 - 1


class WorkloadTimeout(WorkloadError):
    """The workload's own code, run in the profiler's process, took too long (:func:`bounded`)."""


class _OutOfTime(BaseException):
    """Raised in the main thread by :func:`bounded`'s alarm (a BaseException: the user's
    code catching ``Exception`` must not swallow it)."""


@contextlib.contextmanager
def bounded(seconds: float, what: str) -> Iterator[None]:
    """Run the block — the user's code in the profiler's own process: importing the workload
    file, counting its samples — for at most ``seconds``, else :class:`WorkloadError`. A
    script that trains or downloads at import, or a ``train_data()`` that hangs, held
    ``cotune profile`` for ever (the probes have their own time-out, this did not). The
    alarm is a signal: only in the main thread, and only while Python code runs (a block
    hung inside a C call ends when the call returns)."""
    if not (seconds > 0 and hasattr(signal, "SIGALRM") and threading.current_thread() is threading.main_thread()):
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, expire)
    began = time.monotonic()
    # The CLI refuses longer durations; a caller of profile() gets the cap, not an OverflowError.
    outer, outer_every = signal.setitimer(signal.ITIMER_REAL, min(seconds, MAX_DURATION_S))
    try:
        yield
    except _OutOfTime:
        raise WorkloadTimeout(f"{what} took more than {seconds:g} s (a script that trains or downloads when imported, a "
                            "train_data() that hangs): keep a script's own run behind `if __name__ == \"__main__\":`, "
                            "give the Workload dataset_size=N, or raise --probe-timeout") from None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer > 0:  # a caller's own alarm (profile() called from a program that uses one) keeps its time
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - began), 1e-3), outer_every)


def load_workload(spec: str) -> Workload:
    """Load ``file.py:name`` or ``package.module:name`` into a :class:`Workload`."""
    obj = load_object(spec)
    if not isinstance(obj, Workload):
        raise not_a_workload(spec, obj)
    return obj


def not_a_workload(spec: str, obj: Any) -> WorkloadError:
    """The error for a spec whose object is not the workload type wanted."""
    return WorkloadError(
        f"{spec!r} is an object of type {type(obj).__name__!r}, not a profiler.Workload: build it with profiler.Workload(...)"
    )


def load_object(spec: str) -> Any:
    """The object ``file.py:name`` or ``package.module:name`` names — a factory's result if it
    names a factory — whatever its type: the one loading that the PyTorch and the TensorFlow
    adapters share, so a spec is imported (and its factory called) once, and every failure,
    sys.exit included, is a :class:`WorkloadError` with one line."""
    if not isinstance(spec, str) or ":" not in spec:
        raise WorkloadError(
            f"workload spec {spec!r} needs the form FILE.py:NAME or MODULE:NAME, e.g. examples/digits_cnn.py:workload"
        )
    target, _, attr = spec.rpartition(":")
    if not target or not attr.isidentifier():
        raise WorkloadError(f"workload spec {spec!r}: after ':' give the name of a Workload object, e.g. ':workload'")
    if target.endswith(".py") or "/" in target or "\\" in target:
        path = Path(target)
        if path.exists() and not path.is_file():
            raise WorkloadError(f"workload file {target!r} is not a regular file (a directory or a device): give the "
                                "Python file that defines the workload")
        if not path.is_file():
            raise WorkloadError(f"workload file {target!r} not found: check the path (relative to {Path.cwd()})")
        module = _import_file(path)
    else:
        module = _import_module(target)
    if not hasattr(module, attr):
        raise WorkloadError(f"{target!r} has no attribute {attr!r}: define `{attr} = profiler.Workload(...)` there")
    obj = getattr(module, attr)
    if not isinstance(obj, Workload) and callable(obj):
        try:
            obj = obj()
        except SystemExit as exc:  # a script's main called as the factory
            raise WorkloadError(f"{spec!r}: the workload factory {attr}() called sys.exit({exc.code!r}): a factory only "
                                "builds and returns the workload; keep a script's own run under "
                                "`if __name__ == \"__main__\":`") from None
        except Exception as exc:  # the user's factory: one line naming it, not a traceback
            raise WorkloadError(f"{spec!r}: calling {attr}() to build the workload failed with {type(exc).__name__}: "
                                f"{exc}: a factory takes no arguments and returns a profiler.Workload") from exc
    return obj


def check_workload_fields(w: Any) -> None:
    """Validation shared by the PyTorch and TensorFlow workload types (same fields)."""
    if not isinstance(w.name, str) or not w.name.strip():
        raise WorkloadError("workload name must be a non-empty string: pass name='my-job'")
    for key in ("model", "train_data", "loss", "optimizer"):
        if not callable(getattr(w, key)):
            raise WorkloadError(f"workload {w.name!r}: {key!r} must be a callable factory, got {getattr(w, key)!r}")
    if w.goal not in ("max", "min"):
        raise WorkloadError(f"workload {w.name!r}: goal must be 'max' or 'min', got {w.goal!r}")
    if w.lr_scaling not in LR_SCALING_RULES:
        raise WorkloadError(
            f"workload {w.name!r}: lr_scaling must be one of {', '.join(LR_SCALING_RULES)}, got {w.lr_scaling!r}"
        )
    if not w.base_lr > 0 or w.base_batch < 1 or w.warmup_epochs < 0:
        raise WorkloadError(
            f"workload {w.name!r}: need base_lr > 0, base_batch >= 1 and warmup_epochs >= 0, got "
            f"{w.base_lr}, {w.base_batch}, {w.warmup_epochs}"
        )


def scaled_lr(w: Any, global_batch: int) -> float:
    """``base_lr × (global_batch / base_batch)^p`` with p = 0.5 (sqrt), 1 (linear) or 0 (none)."""
    power = {"sqrt": 0.5, "linear": 1.0, "none": 0.0}[w.lr_scaling]
    return w.base_lr * (global_batch / w.base_batch) ** power
