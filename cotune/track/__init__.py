"""Track a running job: its own step times and learning curve, appended to its profile.

``Tracker`` is plain Python (no torch); the optional adapters live in
``cotune.track.lightning``, ``cotune.track.keras`` and ``cotune.track.transformers`` (the
Hugging Face Trainer) and import their framework only when imported themselves.
"""

from cotune.track._progress import JobProgress, job_progress, offline_profile, planning_profile, progress_from_records
from cotune.track._tracker import TrackedConfig, Tracker, window_summary

__all__ = [
    "JobProgress",
    "TrackedConfig",
    "Tracker",
    "job_progress",
    "offline_profile",
    "planning_profile",
    "progress_from_records",
    "window_summary",
]
