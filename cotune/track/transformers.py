"""``from cotune.track.transformers import TrackerCallback`` (imports Hugging Face Transformers)."""

from cotune.track._transformers import TrackerCallback

__all__ = ["TrackerCallback"]
