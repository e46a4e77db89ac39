"""ProfileWriter under faults: an exclusive lock, a full disk, a read-only mount, an I/O error.

The promise: the file holds whole records only, a failed write is an error (never a
silent loss), and two writers can never interleave their records.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _fsfaults import fill, remount_read_only, tmpfs
from _waiting import wait_for
from cotune.errors import EXIT_ENVIRONMENT, ProfileLockedError, StorageError
from cotune.profile import EvalRecord, ProfileWriter, StepRecord, WorkloadRecord, read_profile

ROOT = Path(__file__).resolve().parents[2]
WORKLOAD = WorkloadRecord(name="w", dataset_size=100)


def _step(i: int) -> StepRecord:
    return StepRecord(gpu="cpu", workers=1, local_batch=8 + i, step_time_s=0.1 + i / 1000)


HOLDER = """
import sys, time
from cotune.profile import ProfileWriter, WorkloadRecord
with ProfileWriter(sys.argv[1]) as w:
    w.write(WorkloadRecord(name="w", dataset_size=100))
    open(sys.argv[2], "w").close()  # tell the test the lock is held
    sys.stdin.read()                # hold it until the test closes our stdin
"""


def _start_holder(path: Path, ready: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(ready)], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    wait_for(lambda: ready.exists() or proc.poll() is not None, what="the holder to take the lock")
    assert proc.poll() is None, proc.stderr.read().decode()
    return proc


def test_second_writer_in_another_process_is_refused_with_the_holders_pid(tmp_path):
    path = tmp_path / "p.jsonl"
    holder = _start_holder(path, tmp_path / "ready")
    try:
        with pytest.raises(ProfileLockedError) as info:
            ProfileWriter(path).open()
        assert info.value.holder_pid == holder.pid
        message = str(info.value)
        assert f"pid {holder.pid}" in message and f"kill {holder.pid}" in message and "\n" not in message
        assert info.value.exit_code == EXIT_ENVIRONMENT and isinstance(info.value, OSError)
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
    # Released at exit: the next writer appends after the holder's record.
    with ProfileWriter(path) as w:
        w.write(_step(0))
    profile = read_profile(path)
    assert profile.workload.name == "w" and len(profile.steps) == 1


def test_lock_is_released_when_the_holder_is_killed_with_sigkill(tmp_path):
    path = tmp_path / "p.jsonl"
    holder = _start_holder(path, tmp_path / "ready")
    holder.kill()
    holder.wait(timeout=60)
    with ProfileWriter(path) as w:  # no stale lock file, no manual cleanup
        w.write(_step(0))
    assert len(read_profile(path).steps) == 1


def test_second_writer_in_the_same_process_is_refused(tmp_path):
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write(WORKLOAD)
        with pytest.raises(ProfileLockedError, match="being written by"):
            with ProfileWriter(path):
                pass
        w.write(_step(0))  # the holder is unaffected
    assert len(read_profile(path).steps) == 1


def test_disk_full_raises_storage_error_and_leaves_only_whole_records(tmp_path):
    with tmpfs(tmp_path / "fs", size_kib=64) as fs:
        path = fs / "p.jsonl"
        written = 0
        with ProfileWriter(path) as w:
            w.write(WORKLOAD)
            fill(fs)
            with pytest.raises(StorageError) as info:
                for i in range(100_000):  # the last free bytes of the page, then ENOSPC
                    w.write(_step(i))
                    written += 1
            assert info.value.errno == errno.ENOSPC
            assert "No space left on device (ENOSPC)" in str(info.value) and "free space" in str(info.value)
            with pytest.raises(StorageError):  # a broken writer stays broken
                w.write(_step(0))
        profile = read_profile(path)
        assert not profile.warnings  # no torn line: the failed record was cut back
        assert len(profile.steps) == written
        # Space freed: the same file takes more records, with nothing lost before them.
        (fs / "filler.bin").unlink()
        with ProfileWriter(path) as w:
            w.write(EvalRecord(global_batch=32, epoch=1.0, metric=0.5))
        profile = read_profile(path)
        assert len(profile.steps) == written and len(profile.evals) == 1


def test_read_only_filesystem_raises_storage_error_at_open(tmp_path):
    with tmpfs(tmp_path / "fs", size_kib=256) as fs:
        path = fs / "p.jsonl"
        with ProfileWriter(path) as w:
            w.write(WORKLOAD)
        remount_read_only(fs)  # no descriptor is open: the kernel allows it
        before = path.read_bytes()
        for target in (path, fs / "new.jsonl", fs / "sub" / "new.jsonl"):
            with pytest.raises(StorageError) as info:
                ProfileWriter(target).open()
            assert info.value.errno == errno.EROFS
            assert "(EROFS)" in str(info.value) and "read-only" in str(info.value) and "\n" not in str(info.value)
        assert path.read_bytes() == before


def test_read_only_at_write_time_cuts_back_and_stays_broken(tmp_path, monkeypatch):
    # A filesystem turned read-only under an open descriptor (ext4 errors=remount-ro)
    # cannot be staged unprivileged or on tmpfs: inject EROFS at the write boundary.
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write(WORKLOAD)
        size = path.stat().st_size
        real_fsync = os.fsync

        def failing_fsync(fd: int) -> None:
            real_fsync(fd)
            raise OSError(errno.EROFS, "Read-only file system")

        monkeypatch.setattr(os, "fsync", failing_fsync)
        with pytest.raises(StorageError, match="read-only"):
            w.write(_step(0))
        monkeypatch.undo()
        assert path.stat().st_size == size  # the record that reached the page cache was cut off
        with pytest.raises(StorageError):
            w.write(_step(1))
    assert read_profile(path).steps == ()


def test_io_error_at_fsync_cuts_the_record_back(tmp_path, monkeypatch):
    # No unprivileged way to make a real disk fail: inject EIO at the fsync boundary.
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write(WORKLOAD)
        size = path.stat().st_size

        def failing_fsync(fd: int) -> None:
            raise OSError(errno.EIO, "Input/output error")

        monkeypatch.setattr(os, "fsync", failing_fsync)
        with pytest.raises(StorageError, match=r"Input/output error \(EIO\).*check the disk"):
            w.write(_step(0))
        monkeypatch.undo()
        assert path.stat().st_size == size
    assert read_profile(path).steps == ()


def test_a_batch_that_meets_a_full_disk_leaves_none_of_its_records(tmp_path):
    # An import appended record by record: a full disk (or a kill) midway left the first part
    # of a run, a curve that seemed to end early. A batch is one write, all or none.
    from cotune.profile import append_records

    with tmpfs(tmp_path / "fs", size_kib=64) as fs:
        path = fs / "p.jsonl"
        with ProfileWriter(path) as w:
            w.write(WORKLOAD)
        before = path.read_bytes()
        run = [EvalRecord(global_batch=32, epoch=float(e), metric=0.5 + e / 1e6) for e in range(1, 5000)]
        with pytest.raises(StorageError) as info:
            append_records(path, run)  # about 400 kB into 64 KiB
        assert info.value.errno == errno.ENOSPC
        assert path.read_bytes() == before
        assert read_profile(path).evals == ()


def test_a_batch_is_written_with_one_fsync(tmp_path, monkeypatch):
    from cotune.profile import append_records

    path = tmp_path / "p.jsonl"
    append_records(path, [WORKLOAD])
    calls = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (calls.append(fd), real(fd)))
    append_records(path, [_step(i) for i in range(50)])
    assert len(calls) == 1 and len(read_profile(path).steps) == 50


def test_a_missing_folder_of_a_profile_is_created_by_every_writer(tmp_path, capsys):
    # `cotune import … --out runs/p.jsonl` said "cannot write it: No such file or directory"
    # (exit 3, as if the storage had failed) where the tracker's writer made the folder.
    from cotune.cli import main

    out = tmp_path / "runs" / "today" / "p.jsonl"
    rc = main(["import", "csv", str(ROOT / "examples" / "logs" / "run.csv"), "--out", str(out), "--global-batch", "16",
               "--dataset-size", "96"])
    assert rc == 0, capsys.readouterr().err
    assert len(read_profile(out).evals) == 4
    with ProfileWriter(tmp_path / "other" / "w.jsonl") as writer:
        writer.write(WORKLOAD)
    assert read_profile(tmp_path / "other" / "w.jsonl").workload.name == "w"


def test_a_file_where_a_folder_of_the_path_should_be_is_bad_input(tmp_path, capsys):
    from cotune.cli import main
    from cotune.errors import InputError

    (tmp_path / "afile").write_text("x")
    rc = main(["import", "csv", str(ROOT / "examples" / "logs" / "run.csv"), "--out", str(tmp_path / "afile" / "p.jsonl"),
               "--global-batch", "16", "--dataset-size", "96"])
    err = capsys.readouterr().err
    assert rc == 2 and "afile is a file, not a folder: give a path inside a folder" in err and err.count("\n") == 1, err
    with pytest.raises(InputError, match="is a file, not a folder"):
        ProfileWriter(tmp_path / "afile" / "deeper" / "w.jsonl").open()


def test_a_whole_profile_is_written_with_the_modes_open_gives(tmp_path):
    # mkstemp made it 0600: a profile another user (or a pod under another uid) could read
    # became private; files the tracker and profiler append to were never so
    import os
    import stat

    from cotune import load_profile, write_profile

    old = os.umask(0o022)
    try:
        for i, exclusive in enumerate((False, True)):
            path = tmp_path / f"p{i}.jsonl"
            write_profile(load_profile("yolov3-voc"), path, exclusive=exclusive)
            assert stat.S_IMODE(path.stat().st_mode) == 0o644
    finally:
        os.umask(old)


def test_a_record_too_long_for_the_reader_is_refused_and_the_profile_kept(tmp_path):
    # the reader refuses a line over MAX_LINE_CHARS, and with it the whole profile: an
    # import of a 70,000-character message appended one (exit 0) and bricked the file
    from cotune.errors import ProfileError
    from cotune.profile import MAX_LINE_CHARS, FailureRecord, append_records, read_profile

    path = tmp_path / "p.jsonl"
    path.write_text('{"record": "workload", "name": "w", "dataset_size": 100}\n')
    before = path.read_bytes()
    long = FailureRecord(gpu="t4", workers=1, local_batch=8, failure="crash", message="x" * (MAX_LINE_CHARS + 10))
    with pytest.raises(ProfileError, match=r"line of [\d,]+ characters, over the 65,536 .* field 'message'"):
        append_records(path, [long])
    assert path.read_bytes() == before and read_profile(path).workload.name == "w"


def test_a_whole_profile_is_not_written_over_a_file_a_writer_holds(tmp_path):
    # The rename unlinked the file the writer held: its later records went to a file with no
    # name, lost with no error.
    from cotune.profile import Profile, write_profile

    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write(WORKLOAD)
        with pytest.raises(ProfileLockedError, match="being written by"):
            write_profile(Profile(workload=WORKLOAD, steps=(_step(5),)), path)
        w.write(_step(0))
    assert read_profile(path).steps == (_step(0),) and not list(tmp_path.glob(".p.jsonl.*.tmp"))
    write_profile(Profile(workload=WORKLOAD, steps=(_step(5),)), path)  # released: replaced
    assert read_profile(path).steps == (_step(5),)


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_whole_profile_is_not_written_over_a_path_that_is_no_file(tmp_path, kind):
    # A FIFO (or a device: /dev/null as root) was replaced by a regular file; a directory was
    # "fix the storage" (exit 3).
    from cotune.errors import EXIT_INPUT, ProfileError
    from cotune.profile import Profile, write_profile

    path = tmp_path / "p.jsonl"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(ProfileError, match="not a regular file" if kind == "fifo" else "is a directory") as info:
        write_profile(Profile(workload=WORKLOAD), path)
    assert info.value.exit_code == EXIT_INPUT
    assert (path.is_fifo() if kind == "fifo" else path.is_dir()) and not list(tmp_path.glob(".p.jsonl.*.tmp"))


def test_a_profile_with_carriage_return_line_ends_keeps_its_records_when_appended_to(tmp_path):
    # Read as lines, it was one torn line to the writer: an append cut it to nothing.
    from cotune.profile import append_records

    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write_all([WORKLOAD, _step(0)])
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))
    append_records(path, [_step(1)])
    assert read_profile(path).steps == (_step(0), _step(1))


def test_a_torn_tail_after_a_carriage_return_is_the_only_thing_cut(tmp_path):
    from cotune.profile import append_records

    path = tmp_path / "p.jsonl"
    with ProfileWriter(path) as w:
        w.write_all([WORKLOAD, _step(0)])
    path.write_bytes(path.read_bytes().replace(b"\n", b"\r") + b'{"record": "step", "gp')
    append_records(path, [_step(1)])
    profile = read_profile(path)
    assert profile.steps == (_step(0), _step(1)) and not profile.warnings


def test_a_tail_longer_than_any_record_line_is_refused_not_cut(tmp_path):
    # A file with no line end in its last 256 KiB is no profile a kill tore: cutting it lost
    # the whole file.
    from cotune.errors import EXIT_INPUT, ProfileError
    from cotune.profile import append_records

    path = tmp_path / "p.jsonl"
    data = b'{"record": "workload", "name": "w", "dataset_size": 100}\n' + b"x" * (4 * 65536 + 1)
    path.write_bytes(data)
    with pytest.raises(ProfileError, match="no line end") as info:
        append_records(path, [_step(0)])
    assert info.value.exit_code == EXIT_INPUT and path.read_bytes() == data


def test_a_profile_path_in_a_loop_of_symbolic_links_is_bad_input(tmp_path):
    # ELOOP from open() was "fix the storage" (exit 3): the path is the mistake.
    from cotune.errors import EXIT_INPUT, ProfileError
    from cotune.profile import append_records

    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    with pytest.raises(ProfileError, match="loop of symbolic links") as info:
        append_records(tmp_path / "a.jsonl", [WORKLOAD])
    assert info.value.exit_code == EXIT_INPUT


def test_a_new_profile_at_a_dangling_symbolic_link_names_the_link(tmp_path):
    # os.link's EEXIST read as "appeared while this profile was being written".
    from cotune.errors import InputError
    from cotune.profile import Profile, write_profile

    path = tmp_path / "p.jsonl"
    path.symlink_to("missing.jsonl")
    with pytest.raises(InputError, match="p.jsonl is a symbolic link to 'missing.jsonl', which does not exist"):
        write_profile(Profile(workload=WORKLOAD), path, exclusive=True)
    assert path.is_symlink() and not list(tmp_path.glob(".p.jsonl.*.tmp"))


def test_a_writer_that_opened_a_file_replaced_before_it_locked_writes_to_the_new_one(tmp_path, monkeypatch):
    # write_profile replaces a file under the lock; a writer that opened the old file just
    # before and locked it just after appended to a file with no name.
    import fcntl

    from cotune.profile import Profile, write_profile

    path = tmp_path / "p.jsonl"
    write_profile(Profile(workload=WORKLOAD), path)
    real_flock, replaced = fcntl.flock, []

    def replaced_first(fd, op):
        if not replaced:
            replaced.append(True)
            write_profile(Profile(workload=WORKLOAD, steps=(_step(5),)), path)
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", replaced_first)
    with ProfileWriter(path) as w:
        w.write(_step(0))
    assert replaced and read_profile(path).steps == (_step(5), _step(0))



def _lockf_that_refuses_to_wait(real_lockf):  # type: ignore[no-untyped-def]
    """fcntl.lockf where a lock that would have to wait raises instead: a write that waits
    on a lock hangs the job (where nothing releases it), which a test must see fail."""
    import fcntl

    def lockf(fd: int, cmd: int, *args: int) -> None:
        if cmd & fcntl.LOCK_EX and not cmd & fcntl.LOCK_NB:
            try:
                real_lockf(fd, cmd | fcntl.LOCK_NB, *args)
            except BlockingIOError:
                raise AssertionError("the write waited on a lock") from None
            except PermissionError:  # EACCES: what some systems say for a held lock
                raise AssertionError("the write waited on a lock") from None
            return
        real_lockf(fd, cmd, *args)

    return lockf


def test_a_writer_opens_and_writes_where_flock_is_emulated_by_a_posix_lock(tmp_path, monkeypatch):
    # On NFS and AFS, Linux emulates flock() as a whole-file POSIX lock owned by the open
    # file, which conflicts with the process's own POSIX record lock (lockf) on the file:
    # every writer waited on its own lock at open(), and the job hung. An open-file-
    # description lock on a local disk is that emulation.
    import fcntl
    import struct

    import cotune.profile._profile as profile_module

    def nfs_like_flock(fd: int, *, path: Path) -> None:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, struct.pack("hhqqi4x", fcntl.F_WRLCK, 0, 0, 0, 0))

    monkeypatch.setattr(profile_module, "_lock_exclusive", nfs_like_flock)
    monkeypatch.setattr(fcntl, "lockf", _lockf_that_refuses_to_wait(fcntl.lockf))
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path, fsync=False) as writer:
        writer.write(WORKLOAD)
        writer.write(_step(1))
    assert read_profile(path).steps == (_step(1),)


def test_a_write_never_waits_on_a_fork_childs_write_in_progress_or_a_reader_thread(tmp_path, monkeypatch):
    # Each write held a POSIX record lock (lockf) that a fork child writing with its
    # parent's writer held through its own write: the parent waited on a child stuck in
    # its fsync (slow storage), and a reader thread that closed its descriptor of the file
    # dropped the parent's lock, so the lock kept nothing out anyway. No write waits now.
    import fcntl
    import threading

    monkeypatch.setattr(fcntl, "lockf", _lockf_that_refuses_to_wait(fcntl.lockf))
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path, fsync=False) as writer:
        writer.write(WORKLOAD)
        inside_read, inside_write = os.pipe()
        go_read, go_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                real_fsync = os.fsync

                def fsync_that_stalls(fd: int) -> None:  # slow storage: its bytes written, it syncs
                    os.write(inside_write, b"i")
                    os.read(go_read, 1)
                    real_fsync(fd)

                os.fsync = fsync_that_stalls  # this child's only
                writer._fsync = True  # the fsync is inside the write, where the record lock was held
                writer.write(_step(1))
                code = 0
            finally:
                os._exit(code)
        os.close(inside_write)  # a child that dies early is an empty read, not a hang
        os.close(go_read)
        try:
            assert os.read(inside_read, 1) == b"i"  # the child is inside its write
            seen: list[int] = []
            reader = threading.Thread(target=lambda: seen.append(len(read_profile(path).steps)))
            reader.start()
            reader.join()
            writer.write(_step(2))  # beside the child's write in progress, not after it
        finally:
            os.write(go_write, b"g")
            _, status = os.waitpid(pid, 0)
            os.close(inside_read)
            os.close(go_write)
    assert os.waitstatus_to_exitcode(status) == 0 and seen == [1]
    assert read_profile(path).steps == (_step(1), _step(2))


class _FailingAfter:
    """A profile's file object whose write(2)s take ``first`` bytes of the first call, then fail
    with ENOSPC (a disk that fills in the middle of a record)."""

    def __init__(self, real, *, first: int) -> None:  # noqa: ANN001
        self._real, self._first, self.calls = real, first, 0

    def write(self, data) -> int:  # noqa: ANN001
        self.calls += 1
        if self.calls == 1 and self._first:
            return self._real.write(bytes(data[: self._first]))
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self) -> int:
        return self._real.fileno()

    def close(self) -> None:
        self._real.close()


def test_a_record_the_disk_took_only_part_of_is_cut_back_to_where_it_began(tmp_path):
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path, fsync=False) as w:
        w.write(WORKLOAD)
        before = path.read_bytes()
        real, w._fh = w._fh, _FailingAfter(w._fh, first=10)
        with pytest.raises(StorageError, match="ENOSPC"):
            w.write(_step(0))
        assert w._fh.calls == 2 and path.read_bytes() == before
        w._fh = real
    assert read_profile(path).steps == () and not read_profile(path).warnings


def test_a_write_that_took_nothing_cuts_nothing_not_even_a_line_appended_beside_it(tmp_path):
    # A fork() child appends beside its parent (O_APPEND): the parent's failed write must not
    # cut the child's record, which came after the parent's last one.
    path = tmp_path / "p.jsonl"
    with ProfileWriter(path, fsync=False) as w:
        w.write(WORKLOAD)
        with open(path, "ab") as beside:
            beside.write(b'{"record": "step", "gpu": "cpu", "workers": 1, "local_batch": 9, "step_time_s": 0.2}\n')
        before = path.read_bytes()
        real, w._fh = w._fh, _FailingAfter(w._fh, first=0)
        with pytest.raises(StorageError, match="ENOSPC"):
            w.write(_step(0))
        assert path.read_bytes() == before
        w._fh = real
    assert [s.local_batch for s in read_profile(path).steps] == [9]
