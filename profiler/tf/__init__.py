"""The TensorFlow adapter: the same probes and records, with ``tf.distribute``.

A :class:`TFWorkload` mirrors :class:`profiler.Workload` for Keras models. Each probe
starts ``workers`` processes, each with its own ``TF_CONFIG`` (the cluster of all of
them and its own index), running ``MultiWorkerMirroredStrategy``: the TensorFlow
counterpart of torchrun + DDP. Records are identical to the PyTorch ones, so cotune
cannot tell which framework measured a profile.

``cotune profile --workload FILE.py:NAME`` picks this adapter when ``NAME`` is a
:class:`TFWorkload`. TensorFlow is imported only in the probe processes (and when a
workload file imports it).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, ClassVar, Literal

from profiler._launcher import LaunchOutcome, LaunchRequest, run_group
from profiler._workload import WorkloadError, check_workload_fields, load_object, scaled_lr

__all__ = ["TFWorkload", "TFConfigLauncher", "load_tf_workload", "is_tf_workload_spec", "run_tf_session"]


@dataclass(frozen=True)
class TFWorkload:
    """A Keras training job.

    * ``model() -> keras.Model`` (built or not; it is called once on a sample batch);
    * ``train_data() -> (x, y)`` NumPy arrays; ``eval_data() -> (x, y)`` for curves;
    * ``loss() -> keras loss`` returning *per-example* losses (``reduction="none"``):
      the adapter averages over the global batch (``tf.nn.compute_average_loss``);
    * ``optimizer(*, lr) -> keras optimizer``;
    * ``evaluate(model, x, y) -> float`` (default: top-1 accuracy of ``argmax``).

    Learning-rate scaling, ``dataset_size`` and ``simulate_oom_above`` mean what they
    mean in :class:`profiler.Workload`.
    """

    name: str
    model: Callable[[], Any]
    train_data: Callable[[], tuple[Any, Any]]
    loss: Callable[[], Any]
    optimizer: Callable[..., Any]
    eval_data: Callable[[], tuple[Any, Any]] | None = None
    evaluate: Callable[[Any, Any, Any], float] | None = None
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
        return int(self.dataset_size) if self.dataset_size is not None else len(self.train_data()[0])

    def lr_at(self, global_batch: int) -> float:
        return scaled_lr(self, global_batch)


def is_tf_workload_spec(spec: str) -> bool:
    """Whether ``spec`` names a :class:`TFWorkload` (False on any loading problem)."""
    try:
        return isinstance(load_object(spec), TFWorkload)
    except WorkloadError:  # the caller's own loading reports it
        return False


def load_tf_workload(spec: str) -> TFWorkload:
    """Load ``FILE.py:NAME`` naming a :class:`TFWorkload`."""
    obj = load_object(spec)  # every failure (sys.exit included) a one-line WorkloadError
    if not isinstance(obj, TFWorkload):
        raise WorkloadError(f"{spec!r} is an object of type {type(obj).__name__!r}, not a profiler.tf.TFWorkload: "
                            "build it with profiler.tf.TFWorkload(...)")
    return obj


@dataclass(frozen=True)
class TFConfigLauncher:
    """Start ``workers`` local processes, each with its ``TF_CONFIG``, via a small spawner.

    The spawner (``python -m profiler.tf._spawn``) gives every worker a free port and
    its index, waits for all, and stops the rest as soon as one fails (as torchrun
    does), so a failed rank cannot leave the others hanging in a collective. Several
    hosts: TensorFlow's own cluster managers (e.g. a Kubeflow TFJob) set ``TF_CONFIG``
    per pod; a Kubernetes launcher plugs in here.
    """

    # Its workers (profiler.tf._worker) time several local batches in one launch.
    timing_groups: ClassVar[bool] = True

    python: str = sys.executable
    grace_s: float = 5.0

    @property
    def hosts(self) -> int:
        return 1

    def launch(self, request: LaunchRequest, *, poll: Callable[[], None] | None = None) -> LaunchOutcome:
        from profiler._launcher import package_root

        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(package_root()), os.getcwd()] +
                                            [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
        env.setdefault("PYTHONUNBUFFERED", "1")
        # autograph writes every converted tf.function's source to a temporary file and
        # removes it at interpreter exit; workers leave by os._exit (profiler._entry), so
        # each probe left its files in the machine's temp dir. Their temp dir is the
        # probe's own folder instead, which the session removes after the probe.
        # (If that folder cannot be made, the probe still runs, with the inherited one.)
        scratch = Path(request.log_path).parent / "tmp"
        try:
            scratch.mkdir(parents=True, exist_ok=True)
            env["TMPDIR"] = str(scratch)
        except OSError:
            pass
        env.update(dict(request.env))
        command = [self.python, "-m", "profiler.tf._spawn", str(request.workers), request.module, *request.args]
        return run_group(command, env=env, timeout_s=request.timeout_s, log_path=request.log_path, poll=poll,
                         grace_s=self.grace_s)


def run_tf_session(workload: str, *, out: Any, launcher: Any = None, **kwargs: Any) -> Any:
    """:func:`profiler.profile` for a :class:`TFWorkload` (same arguments and summary)."""
    from profiler._session import run_session

    loaded = kwargs.pop("_workload", None) or load_tf_workload(workload)  # the CLI's, already loaded
    return run_session(workload, out=out, launcher=launcher or TFConfigLauncher(),
                       _workload=loaded, _worker_module="profiler.tf._worker", **kwargs)
