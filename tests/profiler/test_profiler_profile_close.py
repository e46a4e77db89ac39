"""The profile's close at the end of a profiler run: a failure there is a storage fault
(exit code 3), never silent, and never takes the place of the error or stop the run was
already ending with."""

from __future__ import annotations

import errno
import io
from dataclasses import dataclass

import pytest

from _fsfaults import CloseFails
from profiler_helpers import FormulaLauncher, spec

import profiler
from cotune.errors import EXIT_ENVIRONMENT, StorageError
from cotune.profile import ProfileWriter, read_profile
from profiler import ProbeSettings


@dataclass
class Launcher(FormulaLauncher):
    def step_time(self, local_batch: int, workers: int) -> tuple[float, float]:
        return 0.001 * local_batch, 0.0


@dataclass
class StoppedLauncher(Launcher):
    """Ctrl-C (or the SIGTERM the profiler turns into one) during the second probe."""

    def launch(self, request, *, poll=None):  # noqa: ANN001
        if len(self.calls) == 1:
            raise KeyboardInterrupt
        return super().launch(request, poll=poll)


@pytest.fixture
def close_fails(monkeypatch) -> None:
    real_open = ProfileWriter.open

    def open_then_fail_at_close(self) -> None:  # noqa: ANN001
        real_open(self)
        self._fh = CloseFails(self._fh, errno.EIO)

    monkeypatch.setattr(ProfileWriter, "open", open_then_fail_at_close)


def _profile(out, launcher):  # noqa: ANN001
    return profiler.profile(spec("tiny"), out=out, launcher=launcher, gpu="t4", stream=io.StringIO(),
                            probe=ProbeSettings(device="cpu"), workers=[1], local_batches=[8, 16], curves=[])


def test_a_profile_whose_close_fails_ends_the_run_as_a_storage_fault(tmp_path, close_fails):
    out = tmp_path / "p.jsonl"
    with pytest.raises(StorageError) as info:
        _profile(out, Launcher())
    assert info.value.exit_code == EXIT_ENVIRONMENT and info.value.errno == errno.EIO
    assert str(info.value).startswith(f"{out}: cannot close it") and "\n" not in str(info.value)
    profile = read_profile(out)  # what the run measured stays, and nothing is put on the workload
    assert sorted(s.local_batch for s in profile.steps) == [8, 16] and profile.failures == ()


def test_a_stopped_run_stays_stopped_when_the_profile_close_fails_too(tmp_path, close_fails):
    out = tmp_path / "p.jsonl"
    with pytest.warns(RuntimeWarning, match=r"cannot close it.*while KeyboardInterrupt was raised"):
        with pytest.raises(KeyboardInterrupt):  # the CLI's exit 130, not a storage fault's 3
            _profile(out, StoppedLauncher())
    profile = read_profile(out)
    assert [s.local_batch for s in profile.steps] == [8] and profile.failures == ()
