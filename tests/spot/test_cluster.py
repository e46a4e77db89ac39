"""Cluster files: the shipped example parses, TOML and YAML agree, errors are one clear line."""

from __future__ import annotations

import pytest

from cotune.errors import InputError
from cotune.spot import load_cluster, parse_cluster


def test_shipped_example_parses(repo_root):
    cl = load_cluster(repo_root / "examples" / "cluster.toml")
    t4 = cl.offer("t4")
    assert (t4.on_demand, t4.spot) == (16, 32)
    assert t4.replacement_delay_s == 120.0  # "2m"
    assert cl.checkpoint.write_s == 20 and cl.checkpoint.restart_s == 30
    assert cl.gpus_per_host == 4 and cl.has_spot


def test_yaml_equals_toml(make_cluster):
    toml = load_cluster(make_cluster(rate=0.5))
    yaml_text = """
version: 1
gpus_per_host: 1
checkpoint: {write_s: 30, restart_s: 30}
gpu:
  T4: {on_demand: 16, spot: 16, on_demand_price_per_hour: 0.526, spot_price_per_hour: 0.158,
       revocation_rate_per_hour: 0.5, replacement_delay_s: 3m}
"""
    yml = load_cluster(make_cluster(text=yaml_text, suffix=".yaml"))
    assert yml.gpus == toml.gpus and yml.checkpoint == toml.checkpoint and yml.gpus_per_host == toml.gpus_per_host


def test_checkpoint_from_size_and_bandwidth():
    cl = parse_cluster({"checkpoint": {"model_size_gb": 2.0, "bandwidth_gb_per_s": 0.1}, "gpu": {"k80": {
        "spot": 4, "spot_price_per_hour": 0.135, "revocation_rate_per_hour": 0.1, "replacement_delay_s": 60}}})
    assert cl.checkpoint.write_s == pytest.approx(20.0)
    assert cl.offer("k80").available("on_demand") == 0 and cl.offer("k80").available("mixed") == 0


BASE = {"checkpoint": {"write_s": 10}, "gpu": {"t4": {"on_demand": 2, "spot": 2, "on_demand_price_per_hour": 0.5,
        "spot_price_per_hour": 0.2, "revocation_rate_per_hour": 0.1, "replacement_delay_s": 60}}}


def _with(path: str, value):
    import copy

    data = copy.deepcopy(BASE)
    *parents, leaf = path.split(".")
    node = data
    for p in parents:
        node = node[p]
    if value is KeyError:
        del node[leaf]
    else:
        node[leaf] = value
    return data


@pytest.mark.parametrize(
    "path,value,expect",
    [
        ("gpu.t4.spot_price_per_hour", "cheap", "gpu.t4.spot_price_per_hour must be a number"),
        ("gpu.t4.spot_price_per_hour", KeyError, "gpu.t4.spot_price_per_hour is missing"),
        ("gpu.t4.revocation_rate_per_hour", -1, "gpu.t4.revocation_rate_per_hour must be >= 0"),
        ("gpu.t4.revocation_rate_per_hour", KeyError, "revocation_rate_per_hour is missing"),
        ("gpu.t4.replacement_delay_s", "soon", "replacement_delay_s cannot be read as a duration"),
        ("gpu.t4.spot", 1.5, "gpu.t4.spot must be a whole number"),
        ("gpu.t4.spto", 3, "gpu.t4.spto is not a known field"),
        ("checkpoint", KeyError, "[checkpoint] is missing"),
        ("checkpoint.write_s", KeyError, "checkpoint.write_s is missing"),
        ("version", 2, "version is 2, not supported"),
        ("gpus_per_host", 0, "gpus_per_host must be a whole number >= 1"),
        ("gpu", {}, "gpu has no GPU type"),
    ],
)
def test_errors_name_the_field_and_the_fix(path, value, expect):
    with pytest.raises(InputError) as info:
        parse_cluster(_with(path, value), source="c.toml")
    msg = str(info.value)
    assert msg.startswith("c.toml: ") and expect in msg and "\n" not in msg
    assert ";" in msg  # the fix follows the problem


def test_file_errors(tmp_path):
    with pytest.raises(InputError, match="does not exist"):
        load_cluster(tmp_path / "nope.toml")
    bad = tmp_path / "c.toml"
    bad.write_text("gpu = [", encoding="utf-8")
    with pytest.raises(InputError, match="not valid TOML"):
        load_cluster(bad)
    other = tmp_path / "c.json"
    other.write_text("{}", encoding="utf-8")
    with pytest.raises(InputError, match="name it .toml, .yaml or .yml"):
        load_cluster(other)


def test_with_offer_revalidates():
    cl = parse_cluster(BASE)
    assert cl.with_offer("t4", spot_price_per_hour=0.3).offer("t4").spot_price_per_hour == 0.3
    assert cl.offer("t4").spot_price_per_hour == 0.2  # the original is untouched
    with pytest.raises(InputError, match="both 0"):
        cl.with_offer("t4", on_demand=0, spot=0)
