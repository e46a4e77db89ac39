"""``from cotune.track.lightning import TrackerCallback`` (imports PyTorch Lightning)."""

from cotune.track._lightning import TrackerCallback

__all__ = ["TrackerCallback"]
