"""Pictures (cotune/plot.py): the PNGs are written and draw what they claim."""

from __future__ import annotations

import pytest

pytest.importorskip("matplotlib")

import cotune
from cotune.cli import main

PNG = b"\x89PNG\r\n\x1a\n"


def test_recommendation_plot_draws_every_target_reaching_candidate_and_the_deadline(tmp_path):
    rec = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800)
    fig = rec.plot(tmp_path / "rec.png")
    assert (tmp_path / "rec.png").read_bytes()[:8] == PNG
    ax = fig.axes[0]
    frame = rec.candidates_frame()
    drawn = sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets") and len(c.get_offsets()) > 1)
    assert drawn == int(frame["reaches_target"].sum())
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(label.startswith("chosen") for label in labels)
    assert any("resource-only" in label for label in labels) and any("batch-only" in label for label in labels)
    assert any(label.startswith("deadline 0.5 h") for label in labels)


def test_a_plot_with_nothing_reaching_the_target_says_so_without_a_warning(tmp_path):
    import warnings

    rec = cotune.recommend("cifar10-resnet18", target=0.999)
    assert rec.chosen is None
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "No artists with labels found" was printed to users
        fig = rec.plot(tmp_path / "none.png")
    assert (tmp_path / "none.png").read_bytes()[:8] == PNG
    assert any("no candidate reaches top1 0.999" in t.get_text() for t in fig.axes[0].texts)


@pytest.mark.slow
def test_cli_recommend_and_fit_write_pngs(tmp_path, capsys):
    assert main(["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--plot", str(tmp_path / "r.png")]) == 0
    assert main(["fit", "cifar10-resnet18", "--plot", str(tmp_path / "f.png")]) == 0
    capsys.readouterr()
    assert (tmp_path / "r.png").read_bytes()[:8] == PNG and (tmp_path / "f.png").read_bytes()[:8] == PNG


def test_unwritable_plot_path_is_a_one_line_error(tmp_path, capsys):
    code = main(["recommend", "cifar10-resnet18", "--target", "0.94", "--plot", str(tmp_path / "missing" / "r.png")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot write the plot" in err


def test_a_full_disk_keeps_the_earlier_picture_whole_and_exits_3(tmp_path, capsys):
    # The picture was written in place: a full disk left a truncated PNG where the last good
    # one had been, and said "choose a writable path" with exit 2, as for a typo in the path.
    from _fsfaults import fill, tmpfs

    rec = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800)
    with tmpfs(tmp_path / "small", size_kib=512) as mount:
        rec.plot(mount / "r.png")
        before = (mount / "r.png").read_bytes()
        fill(mount)
        code = main(["recommend", "cifar10-resnet18", "--target", "0.94", "--deadline", "30m", "--quiet",
                     "--plot", str(mount / "r.png")])
        err = capsys.readouterr().err
        assert code == 3 and err.count("\n") == 1 and "cannot write the plot: No space left on device" in err, err
        assert (mount / "r.png").read_bytes() == before
        assert sorted(p.name for p in mount.iterdir()) == ["filler.bin", "r.png"]  # no temporary file left


def test_a_replaced_picture_keeps_its_mode_and_a_new_one_gets_the_umasks(tmp_path):
    # Written through a temporary file, the picture would get mkstemp's 0600.
    import os
    import stat

    rec = cotune.recommend("cifar10-resnet18", target=0.94)
    rec.plot(tmp_path / "new.png")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.png").st_mode) == 0o666 & ~umask
    os.chmod(tmp_path / "new.png", 0o640)
    rec.plot(tmp_path / "new.png")
    assert stat.S_IMODE(os.stat(tmp_path / "new.png").st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["new.png"]


def test_a_plot_path_that_is_a_pipe_gets_the_picture(tmp_path):
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    try:
        cotune.recommend("cifar10-resnet18", target=0.94).plot(fifo)  # a PNG writer seeks; a pipe cannot
    finally:
        if reader.is_alive():  # the write failed before opening the pipe: let the reader go
            with open(fifo, "wb"):
                pass
        reader.join(timeout=60)
    assert got and got[0][:8] == PNG and fifo.is_fifo()


def test_plotting_does_not_touch_pyplot_state():
    import sys

    rec = cotune.recommend("cifar10-resnet18", target=0.94)
    rec.plot()
    if "matplotlib.pyplot" in sys.modules:
        import matplotlib.pyplot as plt

        assert plt.get_fignums() == []


def test_the_path_suffix_chooses_svg_or_pdf(tmp_path):
    rec = cotune.recommend("cifar10-resnet18", target=0.94, deadline_s=1800)
    rec.plot(tmp_path / "rec.svg")
    rec.plot(tmp_path / "rec.PDF")
    rec.plot(tmp_path / "rec")
    assert b"<svg" in (tmp_path / "rec.svg").read_bytes()[:400]
    assert (tmp_path / "rec.PDF").read_bytes()[:5] == b"%PDF-"
    assert (tmp_path / "rec").read_bytes()[:8] == PNG


def test_an_unknown_plot_suffix_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    import cotune.cli._question as question

    def no_fit(*_args, **_kwargs):
        raise AssertionError("the fit ran before the plot path was checked")

    monkeypatch.setattr(question, "recommend_from_args", no_fit)
    monkeypatch.setattr("cotune.cli._recommend.recommend_from_args", no_fit)
    code = main(["recommend", "cifar10-resnet18", "--target", "0.94", "--plot", str(tmp_path / "r.xyz")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "cannot draw a .xyz picture" in err and ".svg" in err
    assert not (tmp_path / "r.xyz").exists() and not (tmp_path / "r.xyz.png").exists()


def test_a_directory_as_plot_path_is_refused(tmp_path, capsys):
    code = main(["fit", "cifar10-resnet18", "--plot", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--plot needs a file name" in err


def test_a_plot_path_that_is_a_symlink_writes_the_file_it_points_to_and_keeps_the_link(tmp_path):
    # The picture was renamed over the link itself: the link became a file, its target kept the old bytes.
    (tmp_path / "real").mkdir()
    target = tmp_path / "real" / "r.png"
    target.write_bytes(b"old")
    link = tmp_path / "r.png"
    link.symlink_to(target)
    cotune.recommend("cifar10-resnet18", target=0.94).plot(link)
    assert link.is_symlink() and target.read_bytes()[:8] == PNG
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.png", "real"]
    assert [p.name for p in (tmp_path / "real").iterdir()] == ["r.png"]  # no temporary file left


def test_a_named_pipe_without_a_reader_is_one_line_exit_2_not_a_wait(tmp_path):
    import os
    import subprocess
    import sys

    fifo = tmp_path / "pipe.png"
    os.mkfifo(fifo)
    # A subprocess, so that the blocking open this replaced fails the test instead of hanging
    # the suite: the timeout is that guard, far above the command's few seconds.
    done = subprocess.run([sys.executable, "-m", "cotune", "recommend", "cifar10-resnet18", "--target", "0.94",
                           "--quiet", "--plot", str(fifo)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "no reader on the pipe" in done.stderr, done.stderr
    assert fifo.is_fifo()
