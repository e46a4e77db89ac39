"""benchmarks/live_log.py compares the bounded live log's pipe with a plain file."""

from __future__ import annotations

from pathlib import Path


def test_the_throughput_benchmark_writes_both_ways_and_only_the_pipe_is_bounded(tmp_path: Path, capsys) -> None:
    from benchmarks import live_log

    assert live_log.main(["throughput", "--mib", "12", "--repeats", "1", "--tmp", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    on_disk = {line.split()[2].rstrip(":"): float(line.split("log ")[1].split()[0])
               for line in captured.err.splitlines() if line.startswith("repeat ")}
    assert on_disk["file"] == 12.0 and on_disk["pipe"] <= 5.1  # the first 1 MiB and the last 4 MiB
    assert [line.split()[0] for line in captured.out.splitlines()[-2:]] == ["pipe", "file"]
    assert list(tmp_path.iterdir()) == []  # its logs are gone
