"""Names from a profile never reach the terminal as control characters (escape injection)."""

from __future__ import annotations

import json

import pytest

from _helpers import synthetic_records, write_jsonl
from cotune.cli import main
from cotune.cli._output import table, terminal_safe

TITLE = "\x1b]0;owned\x07"  # sets the terminal's window title
CLEAR = "\x1b[2J\x1b[H"  # clears the screen
BIDI = "\u202e"  # right-to-left override: makes text read backwards


@pytest.fixture(scope="module")
def hostile_profile(tmp_path_factory):
    recs = synthetic_records(seed=4)
    recs[0] = dict(recs[0], name=f"job{TITLE}", metric=f"acc{CLEAR}")
    for r in recs[1:]:
        if r["record"] == "step":
            r["gpu"] = f"t4{BIDI}x"
    return write_jsonl(tmp_path_factory.mktemp("esc") / "p.jsonl", recs)


def _no_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and BIDI not in text, text[:500]


@pytest.mark.parametrize("extra", [[], ["--deadline", "1s"]], ids=["feasible", "infeasible"])
def test_recommend_output_escapes_names_from_the_profile(capsys, hostile_profile, extra):
    code = main(["recommend", str(hostile_profile), "--target", "0.9", *extra])
    out = capsys.readouterr()
    assert code in (0, 1)
    _no_controls(out.out + out.err)
    assert "job\\x1b]0;owned\\x07" in out.out and "t4\\u202ex" in out.out


def test_recommend_json_escapes_them_as_json_does(capsys, hostile_profile):
    assert main(["recommend", str(hostile_profile), "--target", "0.9", "--json"]) == 0
    out = capsys.readouterr().out
    _no_controls(out)
    assert json.loads(out)["workload"] == f"job{TITLE}"  # the value itself is kept, only its display is escaped


def test_fit_output_escapes_names(capsys, hostile_profile):
    assert main(["fit", str(hostile_profile)]) == 0
    out = capsys.readouterr()
    _no_controls(out.out + out.err)
    assert "job\\x1b]0;owned\\x07" in out.out


def test_error_lines_escape_names(capsys, hostile_profile):
    code = main(["recommend", str(hostile_profile), "--target", "0.9", "--gpu", f"v100{CLEAR}"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    _no_controls(err)


def test_terminal_safe_keeps_printable_unicode_and_newlines():
    assert terminal_safe("é — ≥ 0.94\nnext") == "é — ≥ 0.94\nnext"
    assert terminal_safe("a\rb\tc\x00") == "a\\rb\\tc\\x00"


def test_tables_align_on_the_escaped_text():
    lines = table(["NAME", "N"], [["a\x1bb", "1"], ["ccccccc", "2"]], right=[False, True]).splitlines()
    assert len({len(line) for line in lines}) == 1 and "a\\x1bb" in lines[2]
