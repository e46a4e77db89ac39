"""Shared strategies and contract checks of the fuzz layer (a unique module name: test
folders share sys.path).

The contract every door keeps, whatever it is sent:

* CLI: exit code 0, 1 or 2; a usage or input error is exactly one line ``cotune: …`` on
  standard error; never a traceback; no control characters reach the terminal;
* HTTP: 2xx or 4xx, never 5xx; every error body is ``error.v1`` with a one-line message;
* Python: a result, or :class:`cotune.InputError` with a one-line message; nothing else;
* all: bounded time (generous: :data:`TIME_LIMIT_S`) and bounded memory
  (:func:`memory_bound`: an address-space limit, so a runaway allocation is a
  ``MemoryError`` the test reports instead of a machine swapping).

Examples are derandomized (the same inputs on every run, no example database), so the
tier is deterministic; the heavy variants are marked slow.
"""

from __future__ import annotations

import contextlib
import io
import json
import resource
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

HERE = Path(__file__).parent
REPO = HERE.parent.parent
sys.path.insert(0, str(REPO / "tests"))

from _helpers import synthetic_records, write_jsonl  # noqa: E402

TIME_LIMIT_S = 60.0

# A well-formed question on the synthetic records: the baseline every fuzz test mutates.
SANE_QUESTION = {
    "target": 0.9,
    "deadline_s": 1800.0,
    "max_workers": 4,
    "gpus_per_host": 4,
    "prices": {"t4": 0.5},
    "objective": "cost",
    "budget": 10.0,
    "confidence": 0.9,
    "gpus": ["t4"],
    "local_batches": [16, 32],
    "workers": [1, 2],
    "hosts": "packed",
    "startup_s": 60.0,
    "baseline_local_batch": 16,
    "baseline_workers": 2,
    "top": 3,
    "pareto_limit": 5,
}
MEMORY_HEADROOM_BYTES = 1536 * 1024 * 1024  # far above a legitimate solve (~+320 MB near the limits)

FAST = settings(max_examples=25, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
HEAVY = settings(FAST, max_examples=150)


def _vm_size_bytes() -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


@contextlib.contextmanager
def memory_bound(headroom_bytes: int = MEMORY_HEADROOM_BYTES) -> Iterator[None]:
    """Limit this process's address space to its current size + ``headroom_bytes`` (Linux)."""
    current = _vm_size_bytes()
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if current is None:
        yield
        return
    limit = current + headroom_bytes
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


@contextlib.contextmanager
def time_bound(what: Any, limit_s: float = TIME_LIMIT_S) -> Iterator[None]:
    t0 = time.monotonic()
    yield
    took = time.monotonic() - t0
    assert took < limit_s, f"took {took:.1f} s (> {limit_s:g} s) on {str(what)[:300]}"


def one_line(message: str) -> bool:
    return bool(message.strip()) and "\n" not in message.strip() and "Traceback" not in message


# --- hostile values -----------------------------------------------------------------------

NUMBER_TEXTS = st.sampled_from([
    "0", "-1", "1", "0.5", "2.5", "16.7", "1e400", "-1e400", "1e-400", "nan", "NaN", "inf", "-inf", "Infinity",
    "1" + "0" * 400, "9" * 5000, "1e18", "1e15", "1000000000", "0x10", "1_000", "３", "", " ", "1,2", "--", "-0",
])
WORDS = st.sampled_from([
    "", " ", "a" * 300, "\x1b]0;owned\x07", "\x1b[2J", "t4", "T4", "v100", "../../etc/passwd", "/dev/zero", "cost",
    "time", "any", "packed", "30m", "1h30m", "2h", "90", "1e400s", "-5m", "999999999999h", "\u202e", "é", "null",
])
TEXTS = st.one_of(NUMBER_TEXTS, WORDS, st.text(max_size=24))

# JSON-ish values for the HTTP and Python doors: huge and non-finite numbers, wrong types, nesting.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.sampled_from([0, 1, -1, 10**400, -(10**400), 10**18, 2**63, 1e308, -1e308, 5e-324, 16.7, 0.5, 1e15]),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXTS,
)
JSON_VALUES = st.recursive(SCALARS, lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(TEXTS, kids, max_size=4)),
                           max_leaves=12)
# Python values no JSON holds: tuples, sets, bytes, objects, complex numbers, NaN.
PY_VALUES = st.one_of(SCALARS, JSON_VALUES, st.sampled_from([(), (1, 2), {1, 2}, frozenset(), b"16", object(), 1j, float("nan"),
                                                             float("inf"), -float("inf"), [0], [16.7], "30m"]))
DEEP = st.integers(min_value=30, max_value=3000).map(lambda n: json.loads("[" * min(n, 900) + "]" * min(n, 900)))


# Cells of a table, lines of a text file: what a corrupted, hand-edited or half-written file holds.
CELLS = st.one_of(TEXTS, st.sampled_from(["nan", "inf", "-1", "0", "1e308", "1e-320", "", '"', "a,b", "1;2", "\t",
                                          "true", "null", "[]", "{}", "0,5", "９", "\u202e1"]))


@st.composite
def mutated_text(draw, text: str) -> str:
    lines = text.splitlines(keepends=True) or [""]
    kind = draw(st.sampled_from(["cell", "cell", "cell", "line", "truncate", "header", "bytes", "blank", "many"]))
    if kind == "cell":
        i = draw(st.integers(0, len(lines) - 1))
        sep = "\t" if "\t" in lines[i] else ","
        cells = lines[i].rstrip("\r\n").split(sep)
        cells[draw(st.integers(0, len(cells) - 1))] = draw(CELLS)
        lines[i] = sep.join(cells) + "\n"
    elif kind == "line":
        lines.insert(draw(st.integers(0, len(lines))), draw(TEXTS) + "\n")
    elif kind == "truncate":
        return text[: draw(st.integers(0, max(len(text) - 1, 0)))]
    elif kind == "header":
        cells = lines[0].rstrip("\r\n").split(",")
        cells[draw(st.integers(0, len(cells) - 1))] = draw(st.sampled_from(["", cells[0], "x" * 300, "epoch", "step",
                                                                            "record", "run", "_runtime", "hours"]))
        lines[0] = ",".join(cells) + "\n"
    elif kind == "bytes":
        at = draw(st.integers(0, len(text)))
        return text[:at] + draw(st.sampled_from(["\x00", "\ufeff", "\x1b[2J", "\r", "\udcff", "\x85"])) + text[at:]
    elif kind == "blank":
        return draw(st.sampled_from(["", "\n", "\ufeff", "epoch\n", "{}", "[]", "null"]))
    else:  # many rows: a long log, still a bounded one
        lines += lines[1:] * draw(st.integers(1, 200))
    return "".join(lines)


def synthetic_profile(directory: Path) -> Path:
    """A small, quickly fitted profile (the fuzz examples fit it many times)."""
    return write_jsonl(directory / "synthetic.jsonl", synthetic_records(seed=11, workers=(1, 2, 4), batches=(16, 32, 64)))


@contextlib.contextmanager
def captured() -> Iterator[tuple[io.StringIO, io.StringIO]]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        yield out, err


def check_cli_result(argv: list[str], code: int, out: str, err: str) -> None:
    """The CLI contract on one run (see the module doc)."""
    shown = " ".join(argv)[:400]
    assert code in (0, 1, 2), f"exit {code} for {shown}: {err[-500:]}"
    assert "Traceback" not in out + err, f"traceback for {shown}: {err[-2000:]}"
    assert "\x1b" not in out + err and "\x07" not in out + err, f"control characters printed for {shown}"
    lines = [line for line in err.splitlines() if line.strip()]
    problems = [line for line in lines if not line.startswith("cotune: warning: ")]
    if code == 2:
        assert len(problems) == 1 and problems[0].startswith("cotune: "), f"exit 2 without one error line for {shown}: {err[-800:]}"
        options = argv[: argv.index("--")] if "--" in argv else argv  # after "--" a word is no option
        if "--json" in options and argv[:1] != ["k8s"]:  # the failure as one error.v1 document on stdout too
            doc = json.loads(out)
            assert doc["status"] == "error" and doc["error"]["message"] == problems[0][len("cotune: "):], (
                f"exit 2 with --json: stdout is not the error document for {shown}: {out[-300:]}")
        else:
            assert not out.strip(), f"exit 2 with output on stdout for {shown}: {out[-300:]}"
    elif code == 1 and argv[:1] == ["k8s"]:
        # Nothing feasible has no manifest: stdout (piped to kubectl apply) stays empty and
        # the one line that says why goes to stderr (docs/scheduler.md).
        assert not out.strip() and len(problems) == 1 and problems[0].startswith("cotune: "), (
            f"k8s exit 1 must print nothing and one error line for {shown}: {out[-300:]} | {err[-800:]}")
    else:
        assert not problems, f"exit {code} with error output for {shown}: {err[-800:]}"
        assert out.strip() or "--help" in argv or "-h" in argv, f"exit {code} with nothing printed for {shown}"
