"""Cluster files: the shipped example parses, TOML and YAML agree, errors are one clear line."""

from __future__ import annotations

import os
import re

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
        ("gpu.t4.spot_price_per_hour", "cheap", "gpu.t4.spot_price_per_hour must be a finite number"),
        ("gpu.t4.spot_price_per_hour", KeyError, "gpu.t4.spot_price_per_hour is missing"),
        ("gpu.t4.revocation_rate_per_hour", -1, "gpu.t4.revocation_rate_per_hour must be a finite number >= 0 and <= 100, got -1"),
        ("gpu.t4.revocation_rate_per_hour", KeyError, "revocation_rate_per_hour is missing"),
        ("gpu.t4.replacement_delay_s", "soon", "replacement_delay_s cannot be read as a duration"),
        ("gpu.t4.replacement_delay_s", "-2m", "replacement_delay_s must be zero or more: '-2m'"),
        ("gpu.t4.spot", 1.5, "gpu.t4.spot must be a whole number"),
        ("gpu.t4.spto", 3, "gpu.t4.spto is not a known field"),
        # the file's own key, with a line break: shown escaped, the error stays one line
        ("gpu.t4.sp\not", 3, "gpu.t4.sp\\not is not a known field"),
        ("checkpoint", KeyError, "[checkpoint] is missing"),
        ("checkpoint.write_s", KeyError, "checkpoint.write_s is missing"),
        ("version", 2, "version is 2, not supported"),
        ("gpus_per_host", 0, "gpus_per_host must be a whole number >= 1"),
        ("gpu", {}, "gpu has no GPU type"),
        # a market's prices and risk given without its count would read as 0 servers, silently
        ("gpu.t4.spot", KeyError, "gpu.t4.spot is missing but spot_price_per_hour is given"),
        ("gpu.t4.on_demand", KeyError, "gpu.t4.on_demand is missing but on_demand_price_per_hour is given"),
    ],
)
def test_errors_name_the_field_and_the_fix(path, value, expect):
    with pytest.raises(InputError) as info:
        parse_cluster(_with(path, value), source="c.toml")
    msg = str(info.value)
    assert msg.startswith("c.toml: ") and expect in msg and "\n" not in msg
    assert ";" in msg  # the fix follows the problem


@pytest.mark.parametrize("path", ["gpu.t4.replacement_delay_s", "checkpoint.write_s"])
def test_a_zero_span_reads_as_the_number_zero(path):
    # "0s" was refused as unreadable while 0 was accepted.
    assert parse_cluster(_with(path, "0s")) == parse_cluster(_with(path, 0))


@pytest.mark.parametrize("field", ["on_demand", "spot", "gpus_per_host"])
def test_a_cluster_files_whole_number_written_as_a_float_reads_as_that_number(make_cluster, field):
    # One rule with the request's fields (cotune._checks.integer): TOML's 4.0 is 4, 4.5 stays an error.
    text = """
checkpoint = {{ write_s = 10 }}
[gpu.t4]
on_demand = {on_demand}
spot = {spot}
gpus_per_host = {gpus_per_host}
on_demand_price_per_hour = 0.5
spot_price_per_hour = 0.2
revocation_rate_per_hour = 0.1
replacement_delay_s = 60
"""
    whole = {"on_demand": "4", "spot": "4", "gpus_per_host": "4"}
    assert load_cluster(make_cluster(text=text.format(**{**whole, field: "4.0"}))) == load_cluster(make_cluster(text=text.format(**whole)))
    with pytest.raises(InputError, match=f"gpu.t4.{field} must be a whole number"):
        load_cluster(make_cluster(text=text.format(**{**whole, field: "4.5"})))


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


# --- hostile files: bounded time and memory, one line, never the value's repr ------------------


def _laughs(levels: int = 9, width: int = 10) -> str:
    """A "billion laughs" YAML value: ``width ** levels`` leaves from a few hundred bytes."""
    items = ["&a0 [" + ",".join(["x"] * width) + "]"]
    items += [f"&a{i} [" + ",".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels)]
    return "version: [" + ", ".join(items) + "]\n"


@pytest.mark.parametrize(
    "text",
    [
        _laughs(),
        "version: 1\ngpu: {t4: {on_demand: 4, on_demand_price_per_hour: *x}}\n" + "x: &x [" + ",".join(["y"] * 5) + "]\n",
        "version: 1\ngpu:\n" + "".join(f"  g{i}: &g{i} {{on_demand: 1, on_demand_price_per_hour: 1}}\n" for i in range(5))
        + "x: [" + ",".join("*g0" for _ in range(200)) + "]\n",
    ],
    ids=["billion-laughs", "undefined-alias", "many-aliases"],
)
def test_yaml_alias_bombs_are_refused_on_one_line(tmp_path, text):
    path = tmp_path / "c.yaml"
    path.write_text(text)
    assert len(text) < 4000
    with pytest.raises(InputError) as info:
        load_cluster(path)
    msg = str(info.value)
    assert msg.startswith(str(path)) and "\n" not in msg and len(msg) < 400


def test_yaml_aliases_of_a_real_file_still_work(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(
        "version: 1\ngpu:\n  t4: &base {on_demand: 4, on_demand_price_per_hour: 0.5}\n"
        "  v100: {<<: *base, on_demand_price_per_hour: 2.5}\n"
    )
    cluster = load_cluster(path)
    assert cluster.gpus["v100"].on_demand == 4 and cluster.gpus["v100"].on_demand_price_per_hour == 2.5


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_a_pipe_is_refused_instead_of_waited_on(tmp_path):
    os.mkfifo(tmp_path / "c.toml")
    with pytest.raises(InputError, match=r"c.toml is not a regular file \(a device, a pipe or a socket\)"):
        load_cluster(tmp_path / "c.toml")


def test_a_yaml_key_given_twice_in_one_table_is_refused_naming_its_line(tmp_path):
    # PyYAML keeps the last silently; TOML refuses it: both doors now agree.
    path = tmp_path / "c.yaml"
    path.write_text("version: 1\ngpu:\n  t4:\n    on_demand: 16\n    on_demand: 8\n    on_demand_price_per_hour: 0.5\n")
    with pytest.raises(InputError, match=r"c.yaml: line 5: key 'on_demand' appears twice in one table; keep one of them$"):
        load_cluster(path)


@pytest.mark.parametrize(
    ("name", "content", "expect"),
    [
        ("c.yaml", "version: 1\ngpus_per_host: 1" + "0" * 400 + "\ngpu: {t4: {on_demand: 4, on_demand_price_per_hour: 1}}\n",
         "gpus_per_host must be a whole number >= 1 and <= 4096, got an integer of 401 digits"),
        ("c.toml", "version = 1\n[gpu.t4]\non_demand = 4\non_demand_price_per_hour = 1" + "0" * 400 + "\n",
         "on_demand_price_per_hour must be a finite number >= 0 (at most 1e+15 in magnitude), got an integer of 401 digits"),
        ("c.toml", "version = 1\n[gpu.t4]\non_demand = 4\non_demand_price_per_hour = 1e400\n", "got inf"),
        ("c.yaml", "version: 1\ngpu: {t4: {on_demand: 4, on_demand_price_per_hour: .nan}}\n", "got nan"),
        ("c.toml", "version = 1\n[gpu.t4]\non_demand = 10000000000000000000\non_demand_price_per_hour = 1\n", "on_demand must be"),
        ("c.toml", "version = 1\ngpu = " + "[" * 3000 + "]" * 3000 + "\n", "c.toml"),
        ("c.yaml", "version: 1\ngpu: " + "[" * 3000 + "]" * 3000 + "\n", "c.yaml"),
        ("c.yaml", "version: 1\ngpu: {'" + "g" * 300 + "': {on_demand: 1}}\n", "name each type with 1 to 100 characters"),
        ("c.yaml", "version: 1\nversiom" + "n" * 900 + ": 2\n", "is not a known field"),
    ],
    ids=["huge-int-yaml", "huge-int-toml", "inf-toml", "nan-yaml", "huge-count", "deep-toml", "deep-yaml", "long-name", "long-key"],
)
def test_absurd_values_are_one_line_errors(tmp_path, name, content, expect):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(InputError) as info:
        load_cluster(path)
    msg = str(info.value)
    assert expect in msg and "\n" not in msg and len(msg) < 500, msg


def test_a_cluster_file_that_is_not_utf8_is_one_line(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_bytes(b"version: 1\ngpu: {t\xff4: {on_demand: 4}}\n")
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 18\): save the file as UTF-8"):
        load_cluster(path)


def test_a_huge_cluster_file_is_refused_without_reading_it_all(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(b"# " + b"x" * (2 * 1024 * 1024) + b"\n")
    with pytest.raises(InputError, match="larger than 1024 KiB"):
        load_cluster(path)


def test_cluster_errors_quote_control_characters_escaped(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text('version: 1\ngpu: {t4: {on_demand: "\\e]0;owned\\a"}}\n')
    with pytest.raises(InputError) as info:
        load_cluster(path)
    assert "\x1b" not in str(info.value) and "\\x1b]0;owned\\x07" in str(info.value)


@pytest.mark.parametrize(
    ("path", "value", "expect"),
    [
        ("gpu.t4.revocation_rate_per_hour", 1e6, "revocation_rate_per_hour must be a finite number >= 0 and <= 100"),
        ("checkpoint.write_s", "99999999999999999999h", "checkpoint.write_s must be"),
        ("gpu.t4.replacement_delay_s", 1e12, "at most 1e+09 s"),
    ],
)
def test_values_that_would_stall_the_revocation_model_are_refused(path, value, expect):
    with pytest.raises(InputError, match=re.escape(expect)):
        parse_cluster(_with(path, value), source="c.toml")


def test_a_cluster_file_with_a_byte_order_mark_reads(tmp_path, repo_root):
    text = (repo_root / "examples" / "cluster.toml").read_text(encoding="utf-8")
    path = tmp_path / "c.toml"
    path.write_bytes("\ufeff".encode() + text.encode())  # as Windows editors save it
    assert load_cluster(path).offer("t4").spot == 32


def test_a_version_of_true_is_no_version_one():
    # True == 1 in Python: the schema's integer 1 took a boolean.
    from cotune.spot import parse_cluster

    with pytest.raises(InputError, match="version is true, not supported; write version = 1"):
        parse_cluster({"version": True, "gpu": {"t4": {"on_demand": 4, "on_demand_price_per_hour": 1.0}}}, source="c")


@pytest.mark.parametrize("name", ["t4\nCHOSEN  t4  on_demand  999", "v100\rx", "a100\u2028x"], ids=["newline", "carriage-return", "line-separator"])
def test_a_gpu_type_whose_name_breaks_the_line_is_refused_naming_it_escaped(name):
    # The profile reader's rule for a gpu name (one line): a cluster file's type named so would
    # print a line of its own choosing in the note that lists the types no probe measured.
    data = {"version": 1, "gpu": {"t4": {"on_demand": 4, "on_demand_price_per_hour": 1.0},
                                  name: {"on_demand": 1, "on_demand_price_per_hour": 1.0}}}
    with pytest.raises(InputError, match="which breaks the line; name each type on one line") as info:
        parse_cluster(data, source="c.toml")
    assert "\n" not in str(info.value) and "\r" not in str(info.value)


def test_a_gpu_name_with_only_surrounding_whitespace_still_reads_as_the_name():
    cluster = parse_cluster({"version": 1, "gpu": {"t4\n": {"on_demand": 4, "on_demand_price_per_hour": 1.0}}}, source="c.toml")
    assert cluster.offer("t4").on_demand == 4
