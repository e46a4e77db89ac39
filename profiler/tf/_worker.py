"""One TensorFlow worker of a probe: ``python -m profiler.tf._worker TASK.json``.

Runs under ``MultiWorkerMirroredStrategy`` with the ``TF_CONFIG`` the spawner set, and
writes ``rank<N>.json`` like the PyTorch worker. Timing results are raw per-step times
of this rank (``raw_times``, ``raw_nosync``); the parent takes the per-step maximum
over ranks. Synchronisation time is ``median(full step) − median(local step)``, where
the local step runs forward and backward without the gradient all-reduce and the
update (Keras always all-reduces inside ``apply_gradients``, so there is no
``no_sync``); it therefore also contains the optimizer update, a small upper bias.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

from cotune.errors import is_out_of_memory
from profiler._entry import scratch_write, worker_main, write_batch_result
from profiler._protocol import (CurveResult, CurveTask, EpochLine, Task, TimingResult, TimingTask, append_epoch,
                                diverged_metric)
from profiler._stats import median_rel_halfwidth


class _TF:
    def __init__(self) -> None:
        import tensorflow as tf

        threads = int(os.environ.get("COTUNE_CPU_THREADS", "1"))
        if threads:  # same meaning as for torch workers: threads per worker on CPU
            tf.config.threading.set_intra_op_parallelism_threads(threads)
            tf.config.threading.set_inter_op_parallelism_threads(threads)
        # The strategy must exist before any other TensorFlow op runs in this process.
        self.strategy = tf.distribute.MultiWorkerMirroredStrategy()
        self.tf = tf
        self.world = self.strategy.num_replicas_in_sync
        self.rank = int(json.loads(os.environ.get("TF_CONFIG", "{}")).get("task", {}).get("index", 0))

    def agree(self, flag: bool) -> bool:
        """Rank 0's flag on every rank (a SUM all-reduce to which only rank 0 contributes)."""
        tf = self.tf
        value = tf.constant(1 if (flag and self.rank == 0) else 0, dtype=tf.int32)
        per = self.strategy.run(lambda v: tf.identity(v), args=(value,))
        return bool(self.strategy.reduce(tf.distribute.ReduceOp.SUM, per, axis=None).numpy())


def _setup(task: Task, env: _TF, *, training_data: tuple[Any, Any], shuffle_seed: int, repeat: bool,
           local_batch: int | None = None, model: Any = None) -> tuple[Any, Any, Any, Any, Any]:
    """The workload, model, a fresh optimizer, the loss and the distributed dataset at
    ``local_batch`` (default: the task's); ``model`` reuses one already built (a timing
    task with several batches builds it once)."""
    import numpy as np

    from profiler.tf import load_tf_workload

    tf = env.tf
    workload = load_tf_workload(task.workload)
    local_batch = task.local_batch if local_batch is None else local_batch
    global_batch = local_batch * env.world
    x, y = training_data

    def dataset_fn(ctx: Any) -> Any:
        ds = tf.data.Dataset.from_tensor_slices((x, y))
        ds = ds.shard(ctx.num_input_pipelines, ctx.input_pipeline_id) if not repeat else ds
        ds = ds.shuffle(min(len(x), 10_000), seed=shuffle_seed + (ctx.input_pipeline_id if repeat else 0),
                        reshuffle_each_iteration=True)
        if repeat:
            ds = ds.repeat()
        return ds.batch(local_batch, drop_remainder=True).prefetch(2)

    dist = env.strategy.distribute_datasets_from_function(dataset_fn)
    with env.strategy.scope():
        if model is None:
            tf.keras.utils.set_random_seed(task.seed)
            model = workload.model()
            model(np.asarray(x[:1]))  # build the variables inside the strategy scope
        optimizer = workload.optimizer(lr=workload.lr_at(global_batch))
        optimizer.build(model.trainable_variables)
    loss_obj = workload.loss()
    return workload, model, optimizer, loss_obj, dist


def _steps(env: _TF, model: Any, optimizer: Any, loss_obj: Any, global_batch: int) -> tuple[Any, Any]:
    tf = env.tf
    strategy = env.strategy

    def grads_of(inputs: Any) -> tuple[Any, Any]:
        xb, yb = inputs
        with tf.GradientTape() as tape:
            loss = tf.nn.compute_average_loss(loss_obj(yb, model(xb, training=True)), global_batch_size=global_batch)
        return loss, tape.gradient(loss, model.trainable_variables)

    @tf.function
    def full_step(iterator: Any) -> Any:
        def fn(inputs: Any) -> Any:
            loss, grads = grads_of(inputs)
            optimizer.apply_gradients(zip(grads, model.trainable_variables))  # all-reduces
            return loss

        return strategy.experimental_local_results(strategy.run(fn, args=(next(iterator),)))[0]

    @tf.function
    def local_step(iterator: Any) -> Any:
        def fn(inputs: Any) -> Any:
            loss, grads = grads_of(inputs)
            # Depend on every gradient so none is pruned from the graph.
            return loss + 0.0 * tf.add_n([tf.reduce_sum(g) for g in grads if g is not None])

        return strategy.experimental_local_results(strategy.run(fn, args=(next(iterator),)))[0]

    return full_step, local_step


def _peak_memory_bytes() -> float:
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024.0


def run_timing(task: TimingTask, env: _TF) -> TimingResult:
    """Time every local batch of ``task`` in this one launch (the model is built once;
    each batch gets its own dataset, optimizer and traced steps); the last result is
    returned, and with several batches each one's is written as soon as it is measured."""
    from profiler.tf import load_tf_workload

    data = load_tf_workload(task.workload).train_data()
    batches = task.local_batches
    model = None
    result: TimingResult | None = None
    for index, local_batch in enumerate(batches):
        result, model = _time_batch(task, env, data, local_batch=local_batch, model=model)
        if len(batches) > 1:
            write_batch_result(task.result_dir, index, result)
    assert result is not None
    return result


def _time_batch(task: TimingTask, env: _TF, data: tuple[Any, Any], *, local_batch: int,
                model: Any) -> tuple[TimingResult, Any]:
    workload, model, optimizer, loss_obj, dist = _setup(task, env, training_data=data, shuffle_seed=task.seed * 7919,
                                                        repeat=True, local_batch=local_batch, model=model)
    if workload.simulate_oom_above is not None and local_batch > workload.simulate_oom_above:
        raise MemoryError(f"simulated out of memory: local batch {local_batch} > "
                          f"simulate_oom_above={workload.simulate_oom_above}")
    full_step, local_step = _steps(env, model, optimizer, loss_obj, local_batch * env.world)
    it = iter(dist)

    def timed(step: Any) -> float:
        start = time.perf_counter()
        step(it).numpy()  # .numpy() waits for the step to finish
        return time.perf_counter() - start

    for _ in range(task.warmup_steps):
        timed(full_step)
    times: list[float] = []
    began = time.perf_counter()
    min_steps, chunk, max_steps = task.min_timed_steps, task.chunk_steps, task.max_timed_steps
    while True:
        # Never past max_steps (a whole chunk more overshot it), as the torch worker; every
        # rank takes the same count, so the collectives stay in step.
        for _ in range(min(chunk, max_steps - len(times)) if times else min(min_steps, max_steps)):
            times.append(timed(full_step))
        done = (len(times) >= max_steps or time.perf_counter() - began >= task.max_timed_s
                or median_rel_halfwidth(times) <= task.rel_precision)
        if env.agree(done):
            break
    nosync: list[float] = []
    if task.measure_sync:
        timed(local_step)  # traces the function: not timed
        nosync = [timed(local_step) for _ in range(max(min_steps, len(times) // 2))]
    result = TimingResult(rank=env.rank, raw_times=tuple(times), raw_nosync=tuple(nosync),
                          peak_memory_bytes=_peak_memory_bytes())
    return result, model


def run_curve(task: CurveTask, env: _TF) -> CurveResult:
    import numpy as np

    from profiler.tf import load_tf_workload

    loaded = load_tf_workload(task.workload)
    if loaded.eval_data is None:
        raise RuntimeError(f"workload {loaded.name!r} has no eval_data: learning curves need held-out data")
    data = loaded.train_data()
    seed = task.seed
    workload, model, optimizer, loss_obj, dist = _setup(task, env, training_data=data, shuffle_seed=seed, repeat=False)
    local_batch = task.local_batch
    global_batch = local_batch * env.world
    if workload.simulate_oom_above is not None and local_batch > workload.simulate_oom_above:
        raise MemoryError(f"simulated out of memory: local batch {local_batch} > "
                          f"simulate_oom_above={workload.simulate_oom_above}")
    n = len(data[0])
    steps_per_epoch = (n // env.world) // local_batch
    if steps_per_epoch == 0:
        raise RuntimeError(f"global batch {global_batch} exceeds the {n} training samples: choose a smaller batch")
    full_step, _ = _steps(env, model, optimizer, loss_obj, global_batch)
    x_eval, y_eval = workload.eval_data() if env.rank == 0 else (None, None)
    peak_lr = workload.lr_at(global_batch)
    warmup = max(1, round(workload.warmup_epochs * steps_per_epoch))
    target = task.target
    progress = Path(task.progress_path)
    reason, epoch_index = "max_epochs", 0
    for epoch_index in range(1, task.max_epochs + 1):
        it = iter(dist)
        for i in range(steps_per_epoch):
            step = (epoch_index - 1) * steps_per_epoch + i
            optimizer.learning_rate.assign(peak_lr * min(1.0, (step + 1) / warmup))
            full_step(it)
        stop = False
        if env.rank == 0:
            if workload.evaluate is not None:
                metric = float(workload.evaluate(model, x_eval, y_eval))
            else:
                logits = model.predict(x_eval, batch_size=512, verbose=0)
                metric = float(np.mean(np.argmax(logits, axis=1) == np.asarray(y_eval)))
            with scratch_write(progress, "the progress line"):
                append_epoch(progress, EpochLine(epoch_index=epoch_index,
                                                 epoch=epoch_index * steps_per_epoch * global_batch / n, metric=metric))
            if diverged_metric(metric):  # NaN, ±inf, or past what a profile holds (recorded as ±inf)
                reason, stop = "diverged", True
            elif target is not None and (metric >= target if workload.goal == "max" else metric <= target):
                reason, stop = "target", True
        if env.agree(stop):
            break
    return CurveResult(rank=env.rank, reason=reason, epochs=epoch_index, steps_per_epoch=steps_per_epoch)


class TFBackend:
    """The TensorFlow side of :func:`profiler._entry.worker_main`."""

    def setup(self, task: Task) -> _TF:
        return _TF()

    def run(self, task: Task, env: _TF) -> TimingResult | CurveResult:
        return run_timing(task, env) if isinstance(task, TimingTask) else run_curve(task, env)

    def is_oom(self, exc: BaseException) -> bool:
        return is_out_of_memory(exc)

    def finish(self, env: _TF) -> None:
        return None  # the spawner waits for every worker; no barrier needed


def main(argv: list[str] | None = None) -> int:
    return worker_main(sys.argv[1:] if argv is None else argv, backend=TFBackend(), prog="profiler.tf._worker")


if __name__ == "__main__":
    sys.exit(main())
