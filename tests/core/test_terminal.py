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


@pytest.mark.parametrize("field", ["name", "metric", "gpu"])
def test_a_line_break_in_a_name_is_refused_by_the_reader(capsys, tmp_path, field):
    # terminal_safe keeps newlines (the output's own lines): a workload named
    # "x\nCHOSEN ..." printed a forged line above the table, a gpu with one a line in
    # every sentence that names it. The reader now refuses such a name, at its line.
    recs = synthetic_records(seed=4)
    target = recs[0] if field in ("name", "metric") else next(r for r in recs if r["record"] == "step")
    target[field] = "t4\u2028CHOSEN  forged"
    path = write_jsonl(tmp_path / "nl.jsonl", recs)
    for argv in (["recommend", str(path), "--target", "0.9"], ["fit", str(path)]):
        assert main(argv) == 2
        out = capsys.readouterr()
        assert out.out == "" and out.err.count("\n") == 1
        assert f"field {field!r} must be one line" in out.err and "\\u2028" in out.err


def test_the_writer_refuses_what_the_reader_would(tmp_path):
    from cotune.errors import ProfileError
    from cotune.profile import WorkloadRecord, write_profile
    from cotune.profile import Profile

    bad = WorkloadRecord(name="job\nforged", dataset_size=100, metric="acc", goal="max")
    path = tmp_path / "p.jsonl"
    with pytest.raises(ProfileError, match="field 'name' must be one line"):
        write_profile(Profile(workload=bad), path)
    assert list(tmp_path.iterdir()) == []  # neither the profile nor its temporary file


def test_tables_escape_a_line_break_in_a_cell():
    lines = table(["GPU", "N"], [["t4\nforged", "1"], ["a100", "2"]]).splitlines()
    assert len(lines) == 4 and "t4\\nforged" in lines[2]


def test_a_note_naming_a_path_with_a_line_break_stays_one_line(capsys, tmp_path):
    # Notes quote paths and names the CLI did not choose (a cluster file's path here): a line
    # break in one printed a line of the caller's choosing under "Notes:".
    profile = write_jsonl(tmp_path / "p.jsonl", synthetic_records(seed=4))
    cluster = tmp_path / "c\nCHOSEN  v100  999 workers.toml"
    cluster.write_text("version = 1\n[checkpoint]\nwrite_s = 1\n[gpu.t4]\non_demand = 4\non_demand_price_per_hour = 1\n"
                       "[gpu.v100]\non_demand = 4\non_demand_price_per_hour = 2\n")
    assert main(["recommend", str(profile), "--target", "0.9", "--cluster", str(cluster), "--quiet"]) in (0, 1)
    lines = capsys.readouterr().out.splitlines()
    note = next(line for line in lines if "offers v100" in line)
    assert note.startswith("  - ") and "c\\nCHOSEN  v100  999 workers.toml" in note
    assert not any(line.startswith("CHOSEN  v100") for line in lines)
