"""Fuzz the command line: generated argument lists keep the CLI contract (exit 0/1/2,
one error line, no traceback, no terminal escapes, bounded time and memory)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import Any

import pytest
from fuzz_helpers import FAST, HEAVY, NUMBER_TEXTS, REPO, TEXTS, captured, check_cli_result, memory_bound, synthetic_profile, time_bound
from hypothesis import given
from hypothesis import strategies as st

from cotune.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("fuzz-cli")
    cache = tmp_path_factory.mktemp("fuzz-cache")
    old = os.environ.get("COTUNE_CACHE_DIR")
    os.environ["COTUNE_CACHE_DIR"] = str(cache)  # fits are cached between examples, never in the user's cache
    bad_cluster = d / "c.yaml"
    bad_cluster.write_text("version: [" + ", ".join(["&a0 [x,x,x,x,x,x,x,x,x,x]"] + [f"&a{i} [" + ",".join([f"*a{i-1}"] * 10) + "]" for i in range(1, 9)]) + "]\n")
    cluster = d / "ok.toml"
    cluster.write_text("version = 1\n[checkpoint]\nwrite_s = 10\n[gpu.t4]\non_demand = 8\nspot = 8\non_demand_price_per_hour = 0.5\n"
                       "spot_price_per_hour = 0.2\nrevocation_rate_per_hour = 0.05\nreplacement_delay_s = 60\n")
    yield {"profile": str(synthetic_profile(d)), "cluster": str(cluster), "bad_cluster": str(bad_cluster), "dir": str(d)}
    if old is None:
        os.environ.pop("COTUNE_CACHE_DIR", None)
    else:
        os.environ["COTUNE_CACHE_DIR"] = old


_SANE = {
    "--target": "0.9",
    "--deadline": "30m",
    "--max-workers": "4",
    "--gpus-per-host": "4",
    "--price": "t4=0.5",
    "--objective": "cost",
    "--budget": "10",
    "--confidence": "0.9",
    "--gpu": "t4",
    "--local-batch": "16,32",
    "--workers": "1,2",
    "--hosts": "packed",
    "--startup": "1m",
    "--baseline-batch": "16",
    "--baseline-workers": "2",
    "--top": "3",
}
_LIST_TEXTS = st.lists(NUMBER_TEXTS, min_size=1, max_size=4).map(",".join)


def _option_value(name: str) -> st.SearchStrategy[str]:
    """A hostile value for option ``name``."""
    hostile = TEXTS if name not in ("--local-batch", "--workers") else st.one_of(TEXTS, _LIST_TEXTS)
    if name in ("--price", "--max-workers"):
        hostile = st.one_of(hostile, st.tuples(st.sampled_from(["t4", "T4", "v100", "t4:spot", "", "\x1b[2J"]), NUMBER_TEXTS).map("=".join))
    return hostile


@st.composite
def recommend_argv(draw, files) -> list[str]:
    """Mostly sane command lines with one or two hostile parts, so that examples reach the
    fit and the solver and not only the argument parser."""
    profile = draw(st.sampled_from([files["profile"]] * 6 + ["/dev/zero", files["dir"], "no-such-profile", "", "\x1b]0;x\x07"]))
    command = draw(st.sampled_from(["recommend", "recommend", "recommend", "k8s", "fit"]))
    argv = [command, profile]
    if command == "fit":
        return argv + draw(st.sampled_from([[], ["--json"]]))
    names = ["--target"] + draw(st.lists(st.sampled_from(sorted(set(_SANE) - {"--target"})), max_size=5, unique=True))
    hostile = set(draw(st.lists(st.sampled_from(names), max_size=2, unique=True)))
    for name in names:
        if name == "--target" and name in hostile and draw(st.integers(0, 4)) == 0:
            continue  # a missing required option
        argv += [name, draw(_option_value(name)) if name in hostile else _SANE[name]]
    if draw(st.integers(0, 7)) == 0:
        argv += ["--cluster", draw(st.sampled_from([files["cluster"], files["bad_cluster"], "/dev/zero", "x.toml"]))]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


def _run(argv: list[str]) -> tuple[int, str, str]:
    with memory_bound(), captured() as (out, err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def _check_generated(files, data) -> None:
    argv = data.draw(recommend_argv(files))
    with time_bound(argv):
        code, out, err = _run(argv)
    check_cli_result(argv, code, out, err)


@FAST
@given(data=st.data())
def test_generated_command_lines_keep_the_cli_contract(files, data):
    _check_generated(files, data)


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--port", "70000"],
        ["serve", "--port", "1" + "0" * 400],
        ["serve", "--request-timeout", "0s"],
        ["serve", "--token-file", "/dev/null"],
        ["examples", "--json"],
        ["recommend", "--help"],
        ["nonsense"],
        ["recommend"],
    ],
)
def test_fixed_command_lines_keep_the_cli_contract(argv):
    code, out, err = _run(argv)
    check_cli_result(argv, code, out, err)


_K8S_SANE = {
    "--kind": "pytorchjob",
    "--name": "job-a",
    "--namespace": "team-a",
    "--image": "ghcr.io/me/train:1",
    "--command": "torchrun train.py",
    "--runtime": "torch-distributed",
    "--gang": "volcano",
    "--queue": "default",
    "--gpu-resource": "nvidia.com/gpu",
    "--node-selector": "pool=gpu",
}
_K8S_HOSTILE = st.one_of(TEXTS, st.sampled_from([
    "1job", "Job", "a" * 300, "a\nb", "a: b", "{x}", "'", "- x", "*x", "&x", "x=y=z", "=v", "k=", "a b=c", "kubernetes.io/x=y",
    "trainjob", "kueue", "none", "volcano", "nvidia.com/gpu\n", "$(rm -rf /)", "`id`", "#", "ũ",
]))


@st.composite
def k8s_argv(draw, files) -> list[str]:
    argv = ["k8s", files["profile"], "--target", "0.9", "--max-workers", "4"]
    names = draw(st.lists(st.sampled_from(sorted(_K8S_SANE)), min_size=1, max_size=6, unique=True))
    hostile = set(draw(st.lists(st.sampled_from(names), max_size=2, unique=True)))
    for name in names:
        argv += [name, draw(_K8S_HOSTILE) if name in hostile else _K8S_SANE[name]]
    if draw(st.booleans()):
        argv.append("--json")
    return argv


def _check_k8s(files, data) -> None:
    argv = data.draw(k8s_argv(files))
    with time_bound(argv):
        code, out, err = _run(argv)
    check_cli_result(argv, code, out, err)
    if code == 0:
        _check_manifests(argv, out)


def _check_manifests(argv: list[str], out: str) -> None:
    """What kubectl would read: one JSON list, or YAML documents, each an object with a valid name."""
    import yaml

    docs = json.loads(out)["items"] if "--json" in argv else [d for d in yaml.safe_load_all(out) if d is not None]
    assert docs and all(isinstance(d, dict) and d.get("apiVersion") and d.get("kind") for d in docs), out[:500]
    for d in docs:
        assert re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", d["metadata"]["name"]), d["metadata"]


@FAST
@given(data=st.data())
def test_generated_k8s_command_lines_render_loadable_manifests_or_one_error_line(files, data):
    _check_k8s(files, data)


@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_many_generated_k8s_command_lines_render_loadable_manifests_or_one_error_line(files, data):
    _check_k8s(files, data)


@pytest.mark.slow  # three of them search a huge space with Optuna (~3 s each)
@pytest.mark.parametrize(
    "extra",
    [
        ["--max-workers", "1000000000"],
        ["--max-workers", "10000", "--hosts", "any"],
        ["--max-workers", "t4=100000000000"],
        ["--gpus-per-host", "1" + "0" * 30],
        ["--workers", "1,2," + "9" * 400],
        ["--local-batch", "1," + "1" + "0" * 30],
        ["--price", "t4=" + "9" * 400],
        ["--target", "1" + "0" * 400],
        ["--deadline", "99999999999999999999999h"],
        ["--top", "100000000000"],
        ["--budget", "5e-324"],
    ],
    ids=lambda extra: " ".join(extra)[:40],
)
def test_the_issue_campaign_command_lines_keep_the_contract(files, extra):
    # Each of these once allocated gigabytes, overflowed or printed a traceback (issue 11).
    argv = ["recommend", files["profile"], "--target", "0.9", *extra]
    with time_bound(argv):
        code, out, err = _run(argv)
    check_cli_result(argv, code, out, err)


@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_many_generated_command_lines_keep_the_cli_contract(files, data):
    _check_generated(files, data)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["recommend", "/dev/zero", "--target", "0.9"], ["recommend", "cifar10-resnet18", "--target", "0.9",
                                                                                 "--cluster", "/dev/zero"]])
def test_the_installed_command_keeps_the_contract_in_a_fresh_process(argv):
    code = "import sys; from cotune.cli import main; sys.exit(main())"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120, env=env)
    check_cli_result(argv, r.returncode, r.stdout, r.stderr)


# --- cotune k8s --answer: a saved answer, hand-edited or cut short --------------------------

@pytest.fixture(scope="module")
def answers(files, tmp_path_factory):
    """A recommend answer and a replan switch (built on it: its chosen option as best, its
    plan at one size) on the synthetic profile, as valid documents to mutate."""
    d = tmp_path_factory.mktemp("fuzz-answers")
    with captured() as (out, _):
        assert main(["recommend", files["profile"], "--target", "0.9", "--max-workers", "4", "--price", "t4=0.5",
                     "--json"]) == 0
    rec = json.loads(out.getvalue())
    plan = dict(rec["plan"], elastic={"min_workers": rec["plan"]["workers"], "max_workers": rec["plan"]["workers"]})
    switch = {"decision": "switch", "reason": "r", "best": rec["recommendation"], "plan": plan, "remaining_deadline_s": 900.0,
              "budget_left": None, "confidence": None, "cost_unit": rec["cost_unit"], "workload": rec["workload"],
              "target": 0.9, "interval": 0.9, "lr_scale": 0.5, "job": "j"}
    return {"recommend": rec, "switch": switch, "dir": d}


def _paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _mutated(doc: Any, path: tuple, value: Any, delete: bool) -> Any:
    import copy

    out = copy.deepcopy(doc)
    node = out
    for key in path[:-1]:
        node = node[key]
    if delete and isinstance(node, dict):
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _check_answer(answers, data) -> None:
    from fuzz_helpers import JSON_VALUES

    kind = data.draw(st.sampled_from(["recommend", "switch"]))
    doc = answers[kind]
    path = data.draw(st.sampled_from(_paths(doc)))
    bad = _mutated(doc, path, data.draw(JSON_VALUES), data.draw(st.booleans()))
    saved = answers["dir"] / "answer.json"
    saved.write_text(json.dumps(bad))
    argv = ["k8s", "--answer", str(saved), "--image", "i", "--command", "c", *(["--json"] if data.draw(st.booleans()) else [])]
    with time_bound((argv, path)):
        code, out, err = _run(argv)
    check_cli_result(argv, code, out, err)
    if code == 0:
        _check_manifests(argv, out)


@FAST
@given(data=st.data())
def test_a_mutated_saved_answer_renders_or_is_one_error_line(answers, data):
    _check_answer(answers, data)


@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_many_mutated_saved_answers_render_or_are_one_error_line(answers, data):
    _check_answer(answers, data)


@pytest.mark.parametrize("kind", ["recommend", "switch"])
def test_every_field_of_a_saved_answer_left_out_or_null_renders_or_is_one_error_line(answers, kind):
    # Exhaustive where the generated door samples: a renderer that indexed a field the
    # checks let through as optional (recommendation.time_s) crashed with exit 4.
    doc = answers[kind]
    saved = answers["dir"] / f"every-{kind}.json"
    for path in _paths(doc):
        for delete in (True, False):
            saved.write_text(json.dumps(_mutated(doc, path, None, delete)))
            argv = ["k8s", "--answer", str(saved), "--image", "i", "--command", "c"]
            code, out, err = _run(argv)
            check_cli_result([*argv, f"(path {path}, {'deleted' if delete else 'null'})"], code, out, err)
