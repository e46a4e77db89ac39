"""Monotone models of a training job: step (hence epoch) time and accuracy."""

from cotune.models._accuracy import AccuracyModel, EpochsPrediction
from cotune.models._backbone import (
    SYNC_CONSTANT_RANGE,
    SYNC_CONSTANT_RATIO,
    SYNC_GROWTH_RANGE,
    SYNC_GROWTH_RATIO,
    BackboneParams,
    fit_backbone,
    predict_log_step,
    growth_identified,
)
from cotune.models._fitted import MAX_GPU_TYPES, CleanArrays, FittedModels, clean_arrays, curve_columns, fit_models
from cotune.models._isotonic import isotonic_grid, pava
from cotune.models._step_time import FEW_PROBE_KAPPA, ONE_BATCH_SHARE_RANGE, StepTimeModel, StepTimePrediction, z_for

__all__ = [
    "SYNC_GROWTH_RATIO",
    "SYNC_GROWTH_RANGE",
    "SYNC_CONSTANT_RATIO",
    "SYNC_CONSTANT_RANGE",
    "AccuracyModel",
    "BackboneParams",
    "EpochsPrediction",
    "FittedModels",
    "StepTimeModel",
    "FEW_PROBE_KAPPA",
    "ONE_BATCH_SHARE_RANGE",
    "StepTimePrediction",
    "CleanArrays",
    "clean_arrays",
    "curve_columns",
    "fit_backbone",
    "fit_models",
    "MAX_GPU_TYPES",
    "isotonic_grid",
    "pava",
    "predict_log_step",
    "growth_identified",
    "z_for",
]
