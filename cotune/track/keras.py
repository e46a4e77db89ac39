"""``from cotune.track.keras import TrackerCallback`` (imports Keras)."""

from cotune.track._keras import TrackerCallback

__all__ = ["TrackerCallback"]
