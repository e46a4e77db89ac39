"""Track a running job: its own step times and learning curve, appended to its profile.

``Tracker`` is plain Python (no torch); the optional adapters live in
``cotune.track.lightning`` and ``cotune.track.keras`` and import their framework only
when imported themselves.
"""

from cotune.track._tracker import TrackedConfig, Tracker, window_summary

__all__ = ["Tracker", "TrackedConfig", "window_summary"]
