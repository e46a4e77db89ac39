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
