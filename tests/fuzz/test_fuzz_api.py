"""Fuzz the Python door's data: hostile cluster data and profile files give a result or
a one-line :class:`cotune.InputError`, never another exception; bounded time and memory.
(Keyword arguments of :func:`cotune.recommend`: ``test_fuzz_keywords.py``.)"""

from __future__ import annotations

import json

from fuzz_helpers import FAST, JSON_VALUES, PY_VALUES, TEXTS, memory_bound, one_line, synthetic_records, time_bound
from hypothesis import given
from hypothesis import strategies as st

import cotune
from cotune.errors import InputError

_RECORDS = synthetic_records(seed=13, workers=(1, 2, 4), batches=(16, 32, 64))


_CLUSTER = {
    "version": 1,
    "gpus_per_host": 4,
    "checkpoint": {"write_s": 10, "restart_s": 5},
    "gpu": {"t4": {"on_demand": 8, "spot": 8, "on_demand_price_per_hour": 0.5, "spot_price_per_hour": 0.2,
                   "revocation_rate_per_hour": 0.05, "replacement_delay_s": "2m"}},
}


@st.composite
def cluster_data(draw) -> object:
    if draw(st.integers(0, 5)) == 0:
        return draw(PY_VALUES)
    doc = json.loads(json.dumps(_CLUSTER))
    for _ in range(draw(st.integers(1, 3))):
        where = draw(st.sampled_from(["top", "checkpoint", "gpu", "t4"]))
        # An earlier draw may have replaced a table by a plain value: change the top instead.
        get = {"top": lambda: doc, "checkpoint": lambda: doc["checkpoint"], "gpu": lambda: doc["gpu"],
               "t4": lambda: doc["gpu"]["t4"]}[where]
        try:
            table = get()
        except (KeyError, TypeError):
            table = doc
        if not isinstance(table, dict):
            table = doc
        key = draw(st.one_of(st.sampled_from(sorted(table) or ["x"]), TEXTS))
        table[key] = draw(PY_VALUES)
    return doc


@FAST
@given(data=cluster_data())
def test_cluster_data_gives_a_cluster_or_a_one_line_input_error(data):
    from cotune.spot import parse_cluster

    with time_bound(data), memory_bound():
        try:
            parse_cluster(data, source="c.toml")
        except InputError as exc:
            assert one_line(str(exc)) and str(exc).startswith("c.toml") and len(str(exc)) < 1000, str(exc)


@st.composite
def profile_bytes(draw) -> bytes:
    lines = [json.dumps(r) for r in _RECORDS[:12]]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines)))
        bad = draw(st.one_of(
            st.binary(max_size=80),
            st.sampled_from([b"[" * 20_000, b"x" * 70_000, b"\x00" * 100, b'{"record": "step", "workers": 1' + b"0" * 5000 + b"}",
                             b'{"record": "eval", "global_batch": 1, "epoch": 1, "metric": 1e999}', b"\xff\xfe"]),
            JSON_VALUES.map(lambda v: json.dumps(v, allow_nan=True).encode()),
        ))
        lines.insert(i, bad.decode("latin-1"))
    return "\n".join(lines).encode("latin-1")


@FAST
@given(content=profile_bytes())
def test_profile_files_give_a_profile_or_a_one_line_profile_error(tmp_path_factory, content):
    from cotune.errors import ProfileError

    path = tmp_path_factory.mktemp("fuzz-profile") / "p.jsonl"
    path.write_bytes(content)
    with time_bound(content[:200]), memory_bound():
        try:
            cotune.read_profile(path)
        except ProfileError as exc:
            assert one_line(str(exc)) and str(exc).startswith(str(path)) and len(str(exc)) < 1000, str(exc)[:1000]


_STEP_TABLE = "gpu,workers,hosts,local_batch,step_time_s\nt4,1,1,16,0.05\nt4,2,1,16,0.06\nt4,4,1,32,0.09\n"


@st.composite
def record_tables(draw) -> tuple[bytes, str | None]:
    """A CSV table of records (``cotune import records``): a valid one with cells, lines or
    the header changed to anything, or bytes."""
    if draw(st.integers(0, 6)) == 0:
        return draw(st.binary(max_size=300)), draw(st.sampled_from([None, "step", "eval"]))
    lines = _STEP_TABLE.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        cells = lines[i].split(",")
        j = draw(st.integers(0, len(cells) - 1))
        cells[j] = draw(st.one_of(TEXTS, st.sampled_from(["", "nan", "inf", "-1", "1e999", "2.5", "0", '"a,b"', "1" * 400,
                                                           "record", "eval", "workload", "\x00", "true"])))
        lines[i] = ",".join(cells)
    if draw(st.booleans()):
        lines.insert(draw(st.integers(1, len(lines))), draw(TEXTS))
    return "\n".join(lines).encode("utf-8", "surrogatepass"), draw(st.sampled_from([None, "step", "steps", "eval", "x"]))


@FAST
@given(table=record_tables())
def test_record_tables_give_a_profile_or_a_one_line_input_error(tmp_path_factory, table):
    from cotune.logs import import_table

    content, record = table
    path = tmp_path_factory.mktemp("fuzz-table") / "t.csv"
    path.write_bytes(content)
    out = path.with_name("p.jsonl")
    with time_bound(content[:200]), memory_bound():
        try:
            profile = import_table(path, out=out, record=record, dataset_size=100_000, metric="acc")
        except InputError as exc:
            assert one_line(str(exc)) and len(str(exc)) < 1000, str(exc)[:1000]
            assert not out.exists()  # nothing written unless every row is a record
        else:
            assert cotune.read_profile(out).steps == profile.steps  # what was written reads back


@st.composite
def hand_built_profiles(draw) -> object:
    """A Profile built in Python from a read one: a field of a record, or an entry of a group,
    set to any value a caller could hold (dataclasses.replace does not check)."""
    import dataclasses

    profile = cotune.parse_profile([json.dumps(r) + "\n" for r in _RECORDS[:14]])
    group = draw(st.sampled_from(["workload", "steps", "evals"]))
    if group == "workload":
        field = draw(st.sampled_from([f.name for f in dataclasses.fields(profile.workload)]))
        return dataclasses.replace(profile, workload=dataclasses.replace(profile.workload, **{field: draw(PY_VALUES)}))
    records = list(getattr(profile, group))
    i = draw(st.integers(0, len(records) - 1))
    if draw(st.booleans()):
        field = draw(st.sampled_from([f.name for f in dataclasses.fields(records[i])]))
        records[i] = dataclasses.replace(records[i], **{field: draw(PY_VALUES)})
    else:
        records[i] = draw(st.one_of(PY_VALUES, st.just(profile.workload)))
    return dataclasses.replace(profile, **{group: tuple(records)})


@FAST
@given(profile=hand_built_profiles())
def test_a_hand_built_profile_gives_a_profile_or_a_one_line_input_error(tmp_path_factory, profile):
    with time_bound(profile), memory_bound():
        try:
            loaded = cotune.load_profile(profile)
        except InputError as exc:
            assert one_line(str(exc)) and len(str(exc)) < 1000, str(exc)[:1000]
            return
    # What passes holds only records a file can hold: written, it reads back as the same records.
    path = tmp_path_factory.mktemp("hand") / "p.jsonl"
    cotune.write_profile(loaded, path)
    again = cotune.read_profile(path)
    assert (again.workload, again.steps, again.evals) == (loaded.workload, loaded.steps, loaded.evals)
