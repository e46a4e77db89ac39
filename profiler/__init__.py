"""cotune's probe side: run a workload's timing probes and learning curves, write a profile.

This package runs on the training machines; it is the only part of cotune that
imports torch (and, for :mod:`profiler.tf`, TensorFlow), and it imports them lazily
inside the probe processes, so ``import profiler`` stays light.

Python use::

    import profiler
    summary = profiler.profile(
        "examples/digits_cnn.py:workload", out="digits.jsonl",
        workers=[1, 2], local_batches=[16, 32, 64, 128], curves=[32, 128, 512], max_epochs=20,
    )
    print(summary.describe())

The command line is ``cotune profile`` (see :mod:`profiler.cli`), also
``python -m profiler``.
"""

from profiler._launcher import LaunchOutcome, LaunchRequest, Launcher, TorchrunLauncher
from profiler._session import CurveSettings, ProbeSettings, SessionSummary
from profiler._session import run_session as profile
from profiler._state import CurveDoneRecord, ProbeCostRecord
from profiler._workload import Workload, WorkloadError, load_workload

__all__ = [
    "profile",
    "Workload",
    "WorkloadError",
    "load_workload",
    "ProbeSettings",
    "CurveSettings",
    "SessionSummary",
    "Launcher",
    "LaunchRequest",
    "LaunchOutcome",
    "TorchrunLauncher",
    "ProbeCostRecord",
    "CurveDoneRecord",
]
