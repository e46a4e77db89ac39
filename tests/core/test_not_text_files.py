"""A file handed over compressed, zipped or in UTF-16 is named as such at every door that
reads a user's file, with the conversion to make — not "not UTF-8 text" or a JSON error."""

from __future__ import annotations

import bz2
import gzip
import lzma
import zipfile
from pathlib import Path

import pytest

from cotune._checks import not_text_reason
from cotune.cli import main
from cotune.examples import example_path
from cotune.profile import read_profile
from cotune.errors import InputError, ProfileError
from cotune.spot import load_cluster

ROOT = Path(__file__).resolve().parents[2]
PROFILE_TEXT = Path(example_path("cifar10-resnet18")).read_bytes()


def _zip(data: bytes, *, date_time: tuple[int, ...] | None = None) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("job.jsonl" if date_time is None else zipfile.ZipInfo("job.jsonl", date_time=date_time), data)
    return buf.getvalue()


def _zip_with_a_newline_in_its_header(data: bytes) -> bytes:
    # DOS time's low byte is (minute % 8) << 5 | second // 2: 12:00:20 writes 0x0a, a newline,
    # before any byte that is not ASCII — the header's first "line" decodes cleanly.
    out = _zip(data, date_time=(2026, 12, 6, 12, 0, 20))
    assert out.index(b"\n") < min(i for i, b in enumerate(out) if b >= 0x80)
    return out


_ENCODINGS = {
    "gzip": (gzip.compress, "gzip-compressed: decompress it first (gunzip FILE)"),
    "bzip2": (bz2.compress, "bzip2-compressed: decompress it first (bunzip2 FILE)"),
    "xz": (lzma.compress, "xz-compressed: decompress it first (unxz FILE)"),
    "zip": (_zip, "a zip archive: extract the file from it first (unzip FILE)"),
    "zip-newline-in-header": (_zip_with_a_newline_in_its_header,
                              "a zip archive: extract the file from it first (unzip FILE)"),
    "utf16": (lambda b: b.decode().encode("utf-16"), "UTF-16 text (PowerShell's '>' and Excel's Unicode text write it): "
              "save it as UTF-8"),
}


@pytest.mark.parametrize("kind", sorted(_ENCODINGS))
def test_a_profile_that_is_not_text_is_named_by_what_it_is(tmp_path, kind):
    encode, why = _ENCODINGS[kind]
    path = tmp_path / "job.jsonl"
    path.write_bytes(encode(PROFILE_TEXT))
    with pytest.raises(ProfileError) as info:
        read_profile(path)
    assert str(info.value) == f"{path}: {why}; a profile is JSON Lines"


def test_a_profile_with_other_bad_bytes_keeps_the_plain_advice(tmp_path):
    path = tmp_path / "job.jsonl"
    path.write_bytes(b'{"record": "workload", "name": "a\xff"}\n')
    with pytest.raises(ProfileError, match="not UTF-8 text: a profile is JSON Lines"):
        read_profile(path)


def test_the_cli_answers_a_gzipped_profile_with_one_line_and_exit_2(tmp_path, capsys):
    path = tmp_path / "job.jsonl.gz"
    path.write_bytes(gzip.compress(PROFILE_TEXT))
    assert main(["recommend", str(path), "--target", "0.9"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gzip-compressed: decompress it first (gunzip FILE)" in err, err


@pytest.mark.parametrize("kind", ["gzip", "utf16"])
def test_a_csv_log_that_is_not_text_is_named_by_what_it_is(tmp_path, capsys, kind):
    encode, why = _ENCODINGS[kind]
    path = tmp_path / "run.csv"
    path.write_bytes(encode(b"epoch,val_acc\n1,0.5\n2,0.6\n"))
    code = main(["import", "csv", str(path), "--out", str(tmp_path / "p.jsonl"), "--name", "a", "--dataset-size", "100",
                 "--gpu", "t4", "--workers", "1", "--local-batch", "8"])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"cotune: {path}: {why}"
    assert not (tmp_path / "p.jsonl").exists()


def test_a_gzipped_trainer_state_is_named_as_such(tmp_path, capsys):
    path = tmp_path / "trainer_state.json"
    path.write_bytes(gzip.compress((ROOT / "examples/logs/hf-trainer/trainer_state.json").read_bytes()))
    code = main(["import", "hf-trainer", str(path), "--out", str(tmp_path / "p.jsonl"), "--dataset-size", "96",
                 "--gpu", "t4", "--workers", "1", "--local-batch", "16"])
    assert code == 2
    assert capsys.readouterr().err.strip() == f"cotune: {path}: gzip-compressed: decompress it first (gunzip FILE)"


def test_a_gzipped_cluster_file_is_named_as_such(tmp_path):
    path = tmp_path / "cluster.toml"
    path.write_bytes(gzip.compress((ROOT / "examples/cluster.toml").read_bytes()))
    with pytest.raises(InputError) as info:
        load_cluster(path)
    assert str(info.value) == f"{path}: gzip-compressed: decompress it first (gunzip FILE)"


def test_leading_bytes_that_name_nothing_give_no_reason(tmp_path):
    assert not_text_reason(b"\xff\xd8\xff\xe0 a jpeg") == ""
    assert not_text_reason(tmp_path / "missing") == ""


_NO_MARK = "UTF-16 text without a byte order mark (iconv -t UTF-16LE and Windows programs write it): save it as UTF-8"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_named_by_its_nul_pattern(codec):
    # It decodes as UTF-8 (every byte is ASCII or NUL): only the pattern tells it apart.
    assert not_text_reason('{"record": "workload"}\n'.encode(codec)) == _NO_MARK
    assert not_text_reason(b"\x00" * 8) == "" and not_text_reason(b"a\x00") == ""  # a crash's zeros, too short to tell


def _files_in_utf16_without_a_mark(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """Each door's file written in UTF-16LE without a mark: (its command line, the file)."""
    def write(name: str, data: bytes) -> str:
        path = tmp_path / name
        path.write_bytes(data.decode("utf-8").encode("utf-16-le"))
        return str(path)

    out = str(tmp_path / "out.jsonl")
    profile = write("job.jsonl", PROFILE_TEXT)
    cluster = write("c.toml", (ROOT / "examples/cluster.toml").read_bytes())
    answer = write("a.json", b'{"schema_version": 1, "status": "ok"}')
    log = write("run.csv", (ROOT / "examples/logs/run.csv").read_bytes())
    table = write("sweep.csv", (ROOT / "examples/logs/sweep.csv").read_bytes())
    return {
        "profile": (["fit", profile], profile),
        "cluster": (["recommend", "cifar10-resnet18", "--target", "0.9", "--cluster", cluster], cluster),
        "answer": (["k8s", "--answer", answer], f"--answer {answer}"),
        "csv-log": (["import", "csv", log, "--out", out, "--global-batch", "16", "--dataset-size", "96"], log),
        "records-table": (["import", "records", table, "--record", "step", "--out", out, "--name", "c",
                           "--dataset-size", "50000", "--metric", "top1"], table),
    }


@pytest.mark.parametrize("door", ["profile", "cluster", "answer", "csv-log", "records-table"])
def test_a_file_in_utf16_without_a_byte_order_mark_is_named_at_every_door(tmp_path, capsys, door):
    # Before: "not valid JSON (Expecting property name ... column 2): fix or delete this line",
    # "not valid TOML", "line 2 has 1 cell", columns named 'g\x00p\x00u\x00'.
    argv, shown = _files_in_utf16_without_a_mark(tmp_path)[door]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"cotune: {shown}: {_NO_MARK}") and "\n" not in err, err
