"""Pure functions: statistics, the noise-scale estimator, GPU names, the torchrun command."""

from __future__ import annotations

import math
import random
from pathlib import Path

import pytest

from profiler import LaunchRequest, TorchrunLauncher
from profiler._gpu import short_gpu_name
from profiler._noise import NoiseAccumulator, noise_terms
from profiler._stats import median_rel_halfwidth, summarize


def test_summary_median_and_iqr():
    s = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert s.median_s == 3.0 and s.spread_s == 2.0 and s.n == 5
    with pytest.raises(ValueError):
        summarize([])


def test_median_precision_shrinks_with_more_steps():
    rng = random.Random(0)
    few = [1 + rng.gauss(0, 0.1) for _ in range(10)]
    many = [1 + rng.gauss(0, 0.1) for _ in range(400)]
    assert median_rel_halfwidth(many) < median_rel_halfwidth(few)
    assert median_rel_halfwidth([1.0, 1.0]) == math.inf


def test_noise_terms_recover_known_gradient_statistics():
    # Exact expectations: E|G_b|² = |G|² + tr(Σ)/b. With |G|² = 4 and tr(Σ) = 256 the
    # noise scale is 64 samples.
    g2, trace = 4.0, 256.0
    small, big = g2 + trace / 8, g2 + trace / 64
    est_g2, est_trace = noise_terms(small_sq=small, b_small=8, big_sq=big, b_big=64)
    assert est_g2 == pytest.approx(g2) and est_trace == pytest.approx(trace)


def test_noise_accumulator_on_sampled_gradients():
    import numpy as np

    rng = np.random.default_rng(0)
    dim, mean = 50, np.full(50, 0.2)  # |G|² = 2; per-sample covariance I: tr(Σ) = 50; B_noise = 25
    acc = NoiseAccumulator()
    for _ in range(400):
        samples = mean + rng.standard_normal((64, dim))
        small, big = samples[:16].mean(0), samples.mean(0)
        acc.add(small_sq=float(small @ small), b_small=16, big_sq=float(big @ big), b_big=64)
    assert acc.b_noise() == pytest.approx(25.0, rel=0.25)
    acc.reset()
    assert acc.b_noise() is None


@pytest.mark.parametrize(
    ("name", "short"),
    [("NVIDIA A100-SXM4-80GB", "a100"), ("Tesla T4", "t4"), ("NVIDIA H200", "h200"), ("Tesla V100-SXM2-16GB", "v100"),
     ("NVIDIA GeForce RTX 4090", "rtx4090"), ("NVIDIA L4", "l4"), ("NVIDIA H100 80GB HBM3", "h100"),
     ("NVIDIA RTX A6000", "a6000"), (None, "cpu"), ("", "cpu")],
)
def test_short_gpu_names(name, short):
    assert short_gpu_name(name) == short


def _request(workers: int) -> LaunchRequest:
    return LaunchRequest(workers=workers, module="profiler._worker", args=("task.json",), run_id="cotune-x-t-w4-b8",
                         timeout_s=60, log_path=Path("log.txt"))


def test_torchrun_command_single_and_multi_host():
    local = TorchrunLauncher().command(_request(2))
    assert local[1:3] == ["-m", "torch.distributed.run"]
    assert local[local.index("--nproc-per-node") + 1] == "2" and local[local.index("--nnodes") + 1] == "1"
    assert local[local.index("--rdzv-endpoint") + 1].startswith("127.0.0.1:")
    assert local[-3:] == ["-m", "profiler._worker", "task.json"]
    assert local[local.index("--log-dir") + 1] == str(Path("torchrun"))  # beside the probe's log, not in /tmp

    multi = TorchrunLauncher(nnodes=2, rdzv_endpoint="head:29400")
    cmd = multi.command(_request(4))
    assert cmd[cmd.index("--nproc-per-node") + 1] == "2" and cmd[cmd.index("--nnodes") + 1] == "2"
    assert cmd[cmd.index("--rdzv-endpoint") + 1] == "head:29400"
    assert cmd[cmd.index("--rdzv-id") + 1] == "cotune-x-t-w4-b8"  # same on every host
    assert multi.hosts == 2
    with pytest.raises(ValueError, match="multiples of 2"):
        multi.command(_request(3))
    with pytest.raises(ValueError, match="rdzv_endpoint"):
        TorchrunLauncher(nnodes=2)


@pytest.mark.skipif(not hasattr(__import__("os"), "mkfifo"), reason="needs mkfifo")
def test_a_pipe_as_the_output_profile_is_refused_before_anything_reads_it(tmp_path: Path) -> None:
    # read_state used to read the whole --out file at once: /dev/full or /dev/zero filled
    # memory until the kernel killed the run, a FIFO blocked it for ever. A daemon thread
    # and a deadline: this test must not hang if the guard goes.
    import os
    import threading

    from cotune.errors import ProfileError
    from profiler._state import read_state

    fifo = tmp_path / "p.jsonl"
    os.mkfifo(fifo)
    got: list[BaseException] = []
    t = threading.Thread(target=lambda: _capture(got, lambda: read_state(fifo)), daemon=True)
    t.start()
    t.join(timeout=120)
    assert not t.is_alive(), "read_state blocked on a pipe"
    assert len(got) == 1 and isinstance(got[0], ProfileError) and "is not a regular file" in str(got[0])


def _capture(into: list[BaseException], call) -> None:
    try:
        call()
    except BaseException as exc:  # noqa: BLE001 - the test inspects it
        into.append(exc)


@pytest.mark.parametrize("end", [b"", b"\r"])
def test_a_resumed_profile_whose_lines_lack_a_newline_keeps_its_records(tmp_path, end):
    # Read as "only a torn first line": the done probes were run again and the profiler's
    # workload record written a second time (a different one made the profile unreadable).
    from profiler._state import read_state

    path = tmp_path / "p.jsonl"
    path.write_bytes(b'{"record": "workload", "name": "w", "dataset_size": 100}\r'
                     b'{"record": "step", "gpu": "cpu", "workers": 1, "local_batch": 8, "step_time_s": 0.1}' + end)
    state = read_state(path)
    assert state.workload is not None and state.workload.name == "w" and state.timing_done(("cpu", 1, 1, 8))
