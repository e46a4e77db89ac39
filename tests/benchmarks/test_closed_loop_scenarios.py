"""The per-scenario closed-loop tool (benchmarks/closed_loop_scenarios.py)."""

from __future__ import annotations

import pytest

from benchmarks.closed_loop_scenarios import _returns, main, summary_line


def test_a_return_is_a_switch_back_to_a_configuration_the_run_left() -> None:
    assert _returns(["3:switch:4->6", "4:switch:6->4", "8:switch:4->6"]) == 2
    assert _returns(["2:switch:1->2", "5:switch:2->3", "9:switch:3->7"]) == 0
    assert _returns(["4:give_up"]) == 0


def test_the_summary_counts_misses_by_cause_and_returns() -> None:
    runs = [dict(miss=None, regret=0.1, restarts=2, actions=["1:switch:0->1", "2:switch:1->0"]),
            dict(miss="deadline", regret=float("inf"), restarts=0, actions=[])]
    line = summary_line("p", runs)
    assert "50.0%" in line and "'deadline': 1" in line and "returns 1" in line


@pytest.mark.parametrize("argv", [["cotune"], ["cotune_closed", "--workloads", "no-such-trace"]])
def test_an_open_loop_policy_or_unknown_workload_is_refused_with_exit_2(argv, capsys) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "choose from" in err


@pytest.mark.parametrize("spec", ["cotune_closed@x", "cotune_closed@0", "cotune_closed@-3"])
def test_a_probe_budget_that_is_no_whole_number_of_at_least_one_is_refused_before_any_run(spec, capsys) -> None:
    assert main([spec, "--workloads", "ncf-t4"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and "@16" in err


def test_a_json_file_in_a_missing_folder_is_refused_before_any_run(tmp_path, capsys) -> None:
    assert main(["oracle", "--workloads", "ncf-t4", "--json", str(tmp_path / "no" / "x.json")]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "does not exist" in captured.err and captured.err.count("\n") == 1
