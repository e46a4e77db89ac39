"""Shared fixtures: small synthetic profiles written to real files, and the bundled examples."""

from __future__ import annotations

from pathlib import Path

import pytest

from _helpers import synthetic_records, write_jsonl

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def synthetic_profile_path(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "synthetic.jsonl", synthetic_records())


@pytest.fixture(scope="session")
def cifar_models():
    from cotune import fit_models, load_profile

    return fit_models(load_profile("cifar10-resnet18"))


@pytest.fixture(autouse=True, scope="session")
def _private_cotune_cache(tmp_path_factory):
    """CLI calls cache fits (cotune/_cache.py): keep the tests' cache out of the user's home."""
    import os

    old = os.environ.get("COTUNE_CACHE_DIR")
    os.environ["COTUNE_CACHE_DIR"] = str(tmp_path_factory.mktemp("cotune-cache"))
    yield
    if old is None:
        os.environ.pop("COTUNE_CACHE_DIR", None)
    else:
        os.environ["COTUNE_CACHE_DIR"] = old


@pytest.fixture(autouse=True, scope="session")
def _private_tempdir(tmp_path_factory):
    """The docs' examples, run as tests, make their files with ``tempfile.mkdtemp()`` (what a
    reader copying them wants); in the suite those land in the session's own folder, which
    pytest prunes, not one more ``/tmp/tmpXXXXXXXX`` per run on the machine."""
    import tempfile

    old = tempfile.tempdir
    tempfile.tempdir = str(tmp_path_factory.mktemp("tempfile"))
    yield
    tempfile.tempdir = old


@pytest.fixture(autouse=True, scope="session")
def _no_launcher_rank():
    """A tracker left to find its rank reads the launcher's variables (RANK, SLURM_PROCID,
    OMPI_COMM_WORLD_RANK...): a suite run inside an srun or mpirun task other than the first
    would track nothing. The tests that read them set them themselves."""
    import os

    from cotune.track._tracker import GLOBAL_RANK_VARIABLES

    names = (*GLOBAL_RANK_VARIABLES, "LOCAL_RANK", "NODE_RANK", "GROUP_RANK", "SLURM_PROCID", "TF_CONFIG")
    saved = {name: os.environ.pop(name) for name in names if name in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture
def fewer_gil_turns():
    """Switch threads every microsecond, so a race between threads shows in a few hundred calls."""
    import sys

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(old)
