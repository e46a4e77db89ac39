from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def cifar_models():
    """Fitted once per session: fitting is the slow part of every recommend call."""
    from cotune.profile import load_profile
    from cotune.models import fit_models

    return fit_models(load_profile("cifar10-resnet18"), n_bootstrap=8)


CLUSTER_TOML = """
version = 1
gpus_per_host = 1

[checkpoint]
write_s = 30
restart_s = 30

[gpu.t4]
on_demand = 16
spot = 16
on_demand_price_per_hour = 0.526
spot_price_per_hour = 0.158
revocation_rate_per_hour = {rate}
replacement_delay_s = "3m"
"""


@pytest.fixture()
def make_cluster(tmp_path):
    def make(rate: float = 2.0, text: str | None = None, suffix: str = ".toml") -> Path:
        p = tmp_path / f"cluster{suffix}"
        p.write_text(text if text is not None else CLUSTER_TOML.format(rate=rate), encoding="utf-8")
        return p

    return make
