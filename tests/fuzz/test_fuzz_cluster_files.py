"""Fuzz the cluster file as a user's editor leaves it: the bundled ``examples/cluster.toml``
(and the same cluster as YAML) with its cells, lines and bytes mutated, through
``cotune recommend --cluster``. The CLI contract holds (fuzz_helpers), with ``--json`` the
error document's message is the stderr line character for character.
"""

from __future__ import annotations

import pytest
import yaml
from fuzz_helpers import FAST, HEAVY, REPO, captured, check_cli_result, memory_bound, mutated_text, time_bound
from hypothesis import given
from hypothesis import strategies as st

from cotune.cli import main
from cotune.spot._cluster import _read_toml

TOML = (REPO / "examples" / "cluster.toml").read_text()
YAML = yaml.safe_dump(_read_toml(TOML, "examples/cluster.toml"))  # the library's TOML reader (tomli on 3.10)


def _check(tmp_path_factory, data) -> None:
    kind = data.draw(st.sampled_from(["toml", "yaml"]))
    text = data.draw(mutated_text(TOML if kind == "toml" else YAML))
    path = tmp_path_factory.mktemp("fuzz-cluster", numbered=True) / f"cluster.{kind}"
    path.write_bytes(text.encode("utf-8", "surrogateescape"))
    argv = (["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "45m", "--cluster", str(path)]
            + data.draw(st.sampled_from([[], ["--json"], ["--confidence", "0.9", "--json"]])))
    with time_bound(argv), memory_bound(), captured() as (out, err):
        code = main(argv)
    check_cli_result(argv, code, out.getvalue(), err.getvalue())


@FAST
@given(data=st.data())
def test_a_mutated_cluster_file_plans_or_is_one_error_line(tmp_path_factory, data):
    _check(tmp_path_factory, data)


@pytest.mark.slow
@HEAVY
@given(data=st.data())
def test_many_mutated_cluster_files_plan_or_are_one_error_line(tmp_path_factory, data):
    _check(tmp_path_factory, data)


def test_with_json_an_unprintable_character_in_a_message_is_escaped_as_on_stderr(tmp_path, capsys):
    # YAML's parser quotes the offending line: U+D7FC (unassigned) reached the error document
    # as itself and stderr escaped, so the two said different things (found by the fuzz above).
    import json

    path = tmp_path / "c.yaml"
    path.write_text("checkpoint:\n\ud7fc\n  restart_s: 30\n", encoding="utf-8")
    code = main(["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "45m", "--cluster", str(path),
                 "--json"])
    out, err = capsys.readouterr()
    message = json.loads(out)["error"]["message"]
    assert code == 2 and "\\ud7fc" in message and f"cotune: {message}\n" == err
