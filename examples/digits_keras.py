"""The digits workload for TensorFlow/Keras: same data and records as digits_cnn.py.

    cotune profile --workload examples/digits_keras.py:workload --workers 1,2 \\
        --local-batch 32,128 --curves 64 --max-epochs 10 --out digits-tf.jsonl

Probes run under tf.distribute.MultiWorkerMirroredStrategy, one process per worker,
each with its own TF_CONFIG (see docs/profiler.md).
"""

from __future__ import annotations

import numpy as np

from profiler.tf import TFWorkload

HELD_OUT = 360


def _arrays(train: bool) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images.astype("float32") / 16.0)[..., None]  # (N, 8, 8, 1), channels last
    y = digits.target.astype("int64")
    order = np.random.default_rng(0).permutation(len(y))  # a fixed random split, as in digits_cnn.py
    part = order[:-HELD_OUT] if train else order[-HELD_OUT:]
    return x[part], y[part]


def make_model():
    import keras

    return keras.Sequential([
        keras.layers.Input((8, 8, 1)),
        keras.layers.Conv2D(32, 3, padding="same", activation="relu"),
        keras.layers.Conv2D(64, 3, padding="same", activation="relu"),
        keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(128, activation="relu"),
        keras.layers.Dense(10),
    ])  # fmt: skip


def make_loss():
    import keras

    # Per-example losses: the adapter averages them over the *global* batch.
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction=None)


def make_optimizer(*, lr: float):
    import keras

    return keras.optimizers.SGD(learning_rate=lr, momentum=0.9)


workload = TFWorkload(
    name="digits-keras",
    model=make_model,
    train_data=lambda: _arrays(train=True),
    eval_data=lambda: _arrays(train=False),
    loss=make_loss,
    optimizer=make_optimizer,
    metric="accuracy",
    base_lr=0.05,
    base_batch=32,
    dataset_size=1797 - HELD_OUT,
)
