"""The service adapter: ``recommend_request`` / ``replan_request`` — a plain-data request
in, the recommendation (or re-plan) document out.

The document is :meth:`cotune.solver.Recommendation.to_dict` — the same object that
``cotune recommend --json`` prints and ``POST /v1/recommend`` returns — so a scheduler
sees one shape whichever way it calls cotune.

Safety, because the request may come from anyone who can reach a service:

* profiles are bundled examples (by exact name), inline records, or — only when the
  caller passes ``profile_dir`` — a relative path that must resolve inside it;
* no user code is imported: a profile is data;
* :class:`Limits` bound the records fitted and the candidates enumerated, checked
  *before* any work is done.

Fitted models are cached by profile content (an LRU of at most :attr:`Limits.cache_size`
profiles holding at most :attr:`Limits.cache_records` records together; a path profile
keeps one entry, its latest content), so a scheduler asking about the same workload again
pays only for the solve.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Collection, ContextManager, Iterable, Iterator, Mapping

from cotune._checks import excerpt
from cotune._request import DEFAULT_MAX_CANDIDATES, ProfileRef, RecommendRequest, ReplanRequest
from cotune.api._errors import LimitError, RequestError
from cotune.api._request import parse_replan_request, parse_request
from cotune.errors import CotuneError, InputError, ModelError, ProfileError

__all__ = ["SPOT_ROW_WEIGHT", "Limits", "recommend_request", "replan_request", "candidate_count", "clear_cache"]


# What one spot or mixed row costs, in on-demand candidates, in the service's count and its
# admission budget. Measured (cifar10-resnet18, hosts "any", 2 shared cores, 2026-12-06):
# an on-demand row takes ~2.5 µs and ~0.65 KB (937,488 in 2.1-2.8 s, +594 MiB); a spot
# configuration ~1.4 ms and ~7 KB (its P(success) and time at the confidence are mixtures over
# 128 revocation delays): ~500x in time, ~10x in memory. Counted as one (until 2026-12-06), a
# spot space the default limit admitted (226,498 configurations) would take minutes and GBs;
# at 100 the largest admitted, 4,576 configurations (max_workers 32), takes 6.3 s and +75 MiB.
SPOT_ROW_WEIGHT = 100


@dataclass(frozen=True)
class Limits:
    """What one request may ask for (defaults suit a shared service on a small machine).

    max_records : records in an inline or path profile (fitting cost grows with them); a path
        profile's non-blank lines are counted while it is read (optional records against a cap
        of their own, as many again), and reading stops at one past this.
    max_candidates : size of the search space, Σ_gpu |workers × hosts| × |local batches|,
        counted before enumeration (and before any fit); with a cluster, each configuration
        counts 1 + 2 × :data:`SPOT_ROW_WEIGHT` (its on-demand, spot and mixed plans). 10⁶
        on-demand candidates solve in ~3 s at ~+600 MiB on 2 shared cores.
    cache_size : fitted profiles kept in memory.
    cache_records : records those profiles hold together, which bounds the cache's memory
        (an entry costs ~0.9 KB a record, its profile and models: a 50,000-record tracked
        profile kept 42.8 MiB); a profile of more records than this is not cached. None (the
        default): twice ``max_records`` (100,000 at the default), so every door keeps two
        profiles at the record limit. The field keeps what was given; the budget in force
        is :attr:`cache_record_budget`.
    """

    max_records: int = 50_000
    max_candidates: int = DEFAULT_MAX_CANDIDATES
    cache_size: int = 32
    # Two profiles at max_records (~90 MiB at the default); counted in entries only (until
    # 2026-12-07), 32 versions of a growing tracked profile held ~820 MiB. A fixed 100,000
    # refitted, on every request, each profile over it that a larger max_records admitted
    # (only cotune serve raised it, with --max-records).
    cache_records: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_records", "max_candidates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.cache_size < 0:
            raise ValueError(f"cache_size must be >= 0, got {self.cache_size}")
        if self.cache_records is not None and self.cache_records < 0:
            raise ValueError(f"cache_records must be >= 0, got {self.cache_records}")

    @property
    def cache_record_budget(self) -> int:
        """The records the cache may hold: ``cache_records``, or twice ``max_records`` when it
        is None. Computed on each read, not stored when the Limits is made: stored, a
        ``dataclasses.replace(limits, max_records=...)`` kept the old limit's budget."""
        return 2 * self.max_records if self.cache_records is None else self.cache_records


# --- profiles ----------------------------------------------------------------------------


def _example(name: str) -> tuple[Any, Any]:
    from cotune.examples import list_examples
    from cotune.profile import read_profile

    by_name = {e.name: e.path for e in list_examples()}
    if name not in by_name:  # exact names only: never a path in disguise
        raise RequestError(
            f"no bundled example profile named {name!r}: known are {', '.join(sorted(by_name))}; "
            "or send the profile's records inline",
            path="/profile",
            code="unknown_profile",
        )
    path = by_name[name]
    st = path.stat()
    return ("example", name, st.st_mtime_ns, st.st_size), lambda: read_profile(path)


def _records(ref: ProfileRef, limits: Limits) -> tuple[Any, Any]:
    from cotune.profile import parse_profile

    records = ref.records or ()
    if len(records) > limits.max_records:
        raise LimitError(
            f"{len(records)} records exceed this service's limit of {limits.max_records}: "
            "send fewer probes (e.g. thin the learning curves)",
            path="/profile/records",
        )
    try:
        lines = ref.record_lines()  # the request's own frozen records: not copied and frozen again
    except ProfileError as exc:
        raise RequestError(exc.reason, path=f"/profile/records/{(exc.line or 1) - 1}", code="invalid_profile") from None
    digest = hashlib.sha256("".join(lines).encode()).hexdigest()

    def load() -> Any:
        try:
            return parse_profile(lines)
        except ProfileError as exc:
            where = "/profile/records" + ("" if exc.line is None else f"/{exc.line - 1}")
            # The record's index is the error's path: no "line N: " (one more than it) in the message.
            raise RequestError(exc.reason, path=where, code="invalid_profile") from None

    return ("records", digest), load


def _path(text: str, profile_dir: str | os.PathLike[str] | None, limits: Limits) -> tuple[Any, Any]:
    if profile_dir is None:
        raise RequestError(
            "profiles by path are disabled: send the records inline or name a bundled example "
            "(a server opts in with 'cotune serve --profile-dir DIR')",
            path="/profile/path",
            status=403,
            code="paths_disabled",
        )
    root = Path(profile_dir).resolve()
    candidate = Path(text)
    if candidate.is_absolute() or ".." in candidate.parts:
        raise RequestError("must be a relative path without '..' inside the profile directory", path="/profile/path")
    try:
        full = (root / candidate).resolve()
        st = full.stat() if full.is_relative_to(root) and full.is_file() else None
    except (OSError, ValueError, RuntimeError):  # a NUL byte, a name too long, a symlink loop
        st = None
    if st is None:
        raise RequestError(f"no profile file {excerpt(text)} in the profile directory", path="/profile/path", code="unknown_profile")
    # Characters the read below may take at most (the record count bounds lines, not their
    # length); checked as read too, for a file that grows after this stat.
    most_chars = limits.max_records * 4096
    if st.st_size > most_chars:
        raise LimitError(f"profile file is {st.st_size} bytes: too large for this service", path="/profile/path")
    profile, digest = _parse_counted(full, shown=text, limits=limits, most_chars=most_chars)
    # Keyed by the content read, not the file's stat: a file replaced by one of the same size
    # and mtime (cp -p, rsync -a, tar, an edited digit) has the old file's stat. The text that
    # was hashed is the text parsed, in one pass: a file replaced or appended to since (a
    # tracker's append) can never put one content's fit under another's key.
    return ("path", str(full), digest), lambda: profile


#: A line the parser may skip: an optional record (docs/profile-format.md, "Tool records"), by
#: its ``"optional": true`` key — the profiler's probe_cost / curve_done, another tool's own. A
#: string holding the text "optional" is no such line (its quotes would be escaped).
_OPTIONAL_LINE = re.compile(r'^\s*\{.*"optional"\s*:\s*true\b')
#: A tracked job's record (cotune.track.Tracker writes ``"job"`` on each): a profile over the
#: limit by such records is a long job's step windows, not learning curves to thin.
_TRACKED_LINE = re.compile(r'"job"\s*:')


def _over_records(limits: Limits, *, tracked: bool) -> str:
    """What to do about a profile of more than ``limits.max_records`` records: a tracked job's
    file is its step windows, which splitting would cut from the history a re-plan reads."""
    over = f"more than {limits.max_records} records, over this service's limit of {limits.max_records}"
    if tracked:
        return (f"{over}, most of them a tracked job's step windows (cotune.track.Tracker): have the tracker write "
                "fewer (a larger Tracker(window=...); a current tracker doubles its window every 1,000 records at "
                "one configuration) or the limit raised (cotune serve --max-records)")
    return f"{over}: thin its learning curves or split it, or have the limit raised (cotune serve --max-records)"


def _parse_counted(full: Path, *, shown: str, limits: Limits, most_chars: int) -> tuple[Any, str]:
    """The profile file ``full`` (``shown`` in the request) parsed in one streaming pass, and
    the SHA-256 of the text parsed.

    Records are counted as they are read and the read stops at the first over
    ``limits.max_records`` — a non-blank line, but not an optional one (``"optional": true``:
    the profiler's ``probe_cost`` / ``curve_done``, another tool's records), which the parser
    may skip and which counts against a cap of its own, as many again; the exact count after
    the parse backs the cheap one — so a file of a million lines costs the
    limit's worth, not a 15 s parse. Memory is the parsed records' (the text is never held
    whole: held, a 200 MB file took 1 GB), and parse_profile's own line bound stops a file of
    blank lines."""
    from cotune.profile import parse_profile
    from cotune.profile._profile import file_lines

    digest = hashlib.sha256()

    def counted(lines: Iterable[str]) -> Iterator[str]:
        records = optional = chars = tracked = 0
        for line in lines:
            chars += len(line)
            if chars > most_chars:  # it grew since the stat
                raise LimitError(f"profile file is over {most_chars} bytes: too large for this service",
                                 path="/profile/path")
            if line.strip():
                if _OPTIONAL_LINE.search(line):
                    optional += 1
                    if optional > limits.max_records:
                        raise LimitError(f"the profile file has more than {limits.max_records} optional lines "
                                         f"(probe_cost, curve_done, other tools' records), over this service's limit "
                                         f"of {limits.max_records}: split it", path="/profile/path")
                else:
                    records += 1
                    tracked += bool(_TRACKED_LINE.search(line))
                    if records > limits.max_records:
                        raise LimitError(f"the profile file has {_over_records(limits, tracked=2 * tracked > records)}",
                                         path="/profile/path")
            digest.update(line.encode("utf-8", "surrogateescape"))
            yield line

    lines = file_lines(full)
    try:
        profile = parse_profile(counted(lines), path=str(full))
    except ProfileError as exc:  # not UTF-8, unreadable, gone since the stat, a bad line
        raise RequestError(str(exc).replace(str(full), shown), path="/profile/path", code="invalid_profile") from None
    finally:
        lines.close()  # a refusal mid-file closes the file now, not at garbage collection
    n = _profile_records(profile)
    if n > limits.max_records:
        jobs = sum(r.job is not None for r in (*profile.steps, *profile.evals, *profile.noise))
        raise LimitError(f"the profile has {_over_records(limits, tracked=2 * jobs > n)}", path="/profile/path")
    return profile, digest.hexdigest()


# --- fitted-model cache ---------------------------------------------------------------------

@dataclass(frozen=True)
class _Entry:
    profile: Any
    models: Any
    records: int  # the profile's records: the entry's size in the cache's budget
    slot: tuple[Any, ...] | None  # a path profile's key without its content hash: one entry per file


_CACHE: "OrderedDict[tuple[Any, ...], _Entry]" = OrderedDict()
# slot -> the full key of the entry that holds it (a path profile's latest content).
_SLOTS: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_LOCK = threading.Lock()


def clear_cache() -> None:
    with _LOCK:
        _CACHE.clear()
        _SLOTS.clear()


def _cached(full: tuple[Any, ...]) -> tuple[Any, Any] | None:
    """The (profile, models) cached under ``full``, or None."""
    with _LOCK:
        hit = _CACHE.get(full)
        if hit is None:
            return None
        _CACHE.move_to_end(full)
        return hit.profile, hit.models


def _profile_records(profile: Any) -> int:
    """The records ``profile`` holds (its workload record, steps, evaluations, failures, noise)."""
    return 1 + len(profile.steps) + len(profile.evals) + len(profile.failures) + len(profile.noise)


def _slot(full: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """A path profile's place in the cache: its key without the content hash, so a new
    version of the file (a tracker's append) replaces the old one, which no request asks
    for again. None for examples and inline records (their key is their content)."""
    lead = 1 if full[0] == "planning" else 0  # _prepared's keys: [planning,] kind, ..., interval
    if full[lead] != "path":
        return None
    return full[:lead + 2] + full[lead + 3:]  # ("path", file) kept, the digest after it dropped


def _drop(full: tuple[Any, ...]) -> None:
    entry = _CACHE.pop(full)
    if entry.slot is not None and _SLOTS.get(entry.slot) == full:
        del _SLOTS[entry.slot]


def _store(full: tuple[Any, ...], profile: Any, models: Any, *, limits: Limits) -> None:
    """Cache (profile, models) under ``full``, then evict least recently used entries until at
    most ``limits.cache_size`` entries of at most ``limits.cache_record_budget`` records remain; an
    entry over the record budget alone is not kept, and an older version of the same path
    profile goes whatever the budget."""
    records = _profile_records(profile)
    slot = _slot(full)
    with _LOCK:
        if slot is not None and _SLOTS.get(slot, full) != full:
            _drop(_SLOTS[slot])
        if full in _CACHE:
            _drop(full)
        if limits.cache_size == 0 or records > limits.cache_record_budget:
            return
        _CACHE[full] = _Entry(profile=profile, models=models, records=records, slot=slot)
        if slot is not None:
            _SLOTS[slot] = full
        held = sum(e.records for e in _CACHE.values())
        while len(_CACHE) > limits.cache_size or held > limits.cache_record_budget:
            held -= _CACHE[next(iter(_CACHE))].records
            _drop(next(iter(_CACHE)))


def _fit(full: tuple[Any, ...], profile: Any, *, limits: Limits) -> Any:
    """The models of ``profile`` (fitted at the interval that ends ``full``), cached under ``full``."""
    from cotune.models import fit_models

    try:
        models = fit_models(profile, interval=full[-1])
    except ModelError as exc:  # the profile's contents (no step records, too many GPU types): point at it
        raise RequestError(str(exc), path="/profile", code="invalid_profile") from None
    except CotuneError:
        raise
    except (ValueError, ArithmeticError, IndexError, TypeError) as exc:  # degenerate data, not a server fault
        raise RequestError(f"cannot fit models to this profile ({type(exc).__name__}: {exc}): probe more configurations",
                           path="/profile", code="invalid_profile") from None
    _store(full, profile, models, limits=limits)
    return models


# --- search-space size ----------------------------------------------------------------------


def candidate_count(req: RecommendRequest, batches_per_gpu: Mapping[str, Collection[int]], *,
                    dataset_size: int | None = None) -> int:
    """An upper bound on the candidates ``req`` enumerates (exact unless memory limits drop
    batches): the solver's own count (:func:`~cotune.solver.count_candidates`) of the space
    the profile's batches make, before any fit."""
    from cotune.solver import SearchSpace, count_candidates

    batches = {}
    for gpu in req.gpus or tuple(batches_per_gpu):
        values = set(req.local_batches) if req.local_batches else set(batches_per_gpu.get(gpu, ()))
        # A batch above the training set is dropped by the solver (a step cannot hold more).
        kept = tuple(sorted(int(b) for b in values if dataset_size is None or b <= dataset_size))
        if kept:
            batches[gpu] = kept
    if not batches:
        return 0
    return count_candidates(SearchSpace(
        gpus=tuple(batches), max_workers={g: req.cap_for(g) for g in batches}, local_batches=batches,
        gpus_per_host=req.host_sizes(tuple(batches)), hosts=req.hosts,
        workers=None if req.workers is None else tuple(req.workers),
        max_global_batch=dataset_size,
    ))


def _resolve(ref: ProfileRef, profile_dir: str | os.PathLike[str] | None, limits: Limits) -> tuple[Any, Any]:
    if ref.example is not None:
        return _example(ref.example)
    if ref.records is not None:
        return _records(ref, limits)
    assert ref.path is not None
    return _path(ref.path, profile_dir, limits)


def _admitted_count(req: RecommendRequest, profile: Any, limits: Limits) -> int:
    """The candidates ``req`` may make of ``profile`` (an upper bound, before fitting the space),
    a spot or mixed row counted as :data:`SPOT_ROW_WEIGHT` on-demand ones, checked against
    the limit by the solver's one check; the admission budget takes the same count."""
    from cotune.solver import SearchSpaceTooLarge, check_candidate_limit

    batches: dict[str, set[int]] = {}
    for s in profile.steps:
        batches.setdefault(s.gpu, set()).add(int(s.local_batch * s.accum_steps))
    offers = getattr(req.cluster, "gpus", None)
    if offers:  # a cluster file bounds each gpu type by what it offers
        # ... and the solver searches only the types it offers (a profiled type it lacks is
        # left out with a note): counting that type too refused requests the solver answers.
        batches = {g: b for g, b in batches.items() if g in offers}
        req = req.replace(max_workers={g: max(1, min(req.cap_for(g), max(o.on_demand, o.spot))) for g, o in offers.items()})
    count = candidate_count(req, batches, dataset_size=profile.workload.dataset_size)
    if req.cluster is None:
        return _solve(lambda: check_candidate_limit(count, limit=limits.max_candidates))
    # A cluster file searches on-demand and spot, plus mixed copies of the spot rows: one
    # on-demand row and two weighed ones per configuration.
    per_configuration = 1 + 2 * SPOT_ROW_WEIGHT
    weighted = count * per_configuration
    try:
        return check_candidate_limit(weighted, limit=limits.max_candidates)
    except SearchSpaceTooLarge:
        if limits.max_candidates < per_configuration:
            # Even one configuration is over: no lever of the request can help, only
            # leaving the cluster out or the operator's limit.
            raise LimitError(
                f"one spot configuration (an on-demand, a spot and a mixed plan; a spot or mixed plan counts as "
                f"{SPOT_ROW_WEIGHT} candidates) counts {per_configuration:,} candidates, over this service's limit "
                f"of {limits.max_candidates:,}, so it answers no request with a 'cluster': send the request without "
                f"one (on-demand only), or have the limit (cotune serve --max-candidates) raised to at least {per_configuration:,}",
                path="",
                code="search_space_too_large",
            ) from None
        raise LimitError(
            f"the spot search space has {count:,} configurations, each an on-demand, a spot and a mixed plan; "
            f"a spot or mixed plan counts as {SPOT_ROW_WEIGHT} candidates (its revocation law costs that much more "
            f"to weigh), so {weighted:,} candidates, over this service's limit of {limits.max_candidates:,}: "
            "lower max_workers, list 'workers' or 'local_batches', or use hosts 'packed'",
            path="",
            code="search_space_too_large",
        ) from None


def _solve(fn: Any) -> Any:
    """Run a solve; the search-space limit becomes the service's LimitError, a field judged
    against the profile (a cap for an unprofiled gpu, a cluster without a profiled type) a
    RequestError at its pointer, and a profile the solve finds unusable (no local batch
    within memory) ``invalid_profile`` at ``/profile``."""
    from cotune._checks import BadValue
    from cotune.api._errors import pointer_code
    from cotune.solver import SearchSpaceTooLarge

    try:
        return fn()
    except BadValue as exc:
        raise RequestError(exc.detail, path=exc.where, code=pointer_code(exc.where)) from None
    except ModelError as exc:
        raise RequestError(str(exc), path="/profile", code="invalid_profile") from None
    except SearchSpaceTooLarge as exc:
        raise LimitError(
            f"the search space has {exc.count:,} candidates, over this service's limit of {exc.limit:,}: "
            "lower max_workers, list 'workers' or 'local_batches', or use hosts 'packed'",
            path="",
            code="search_space_too_large",
        ) from None


def _prepared(req: RecommendRequest, profile_dir: Any, limits: Limits, *, planning: bool = False,
              resolve: Callable[[ProfileRef], tuple[Any, Callable[[], Any]]] | None = None,
              ) -> tuple[RecommendRequest, Any, int]:
    """The question with its profile loaded (within the limits), its fitted models, and its candidate count.

    ``planning``: models of a running job, fitted on :func:`cotune.track.planning_profile`
    (its tracked curve is evidence of its own), while the question keeps the whole profile.
    ``resolve``: the request's own (key, load) of its profile, when another part of the
    request (its progress) read it already; default: read it here."""
    if req.max_candidates > limits.max_candidates:  # a caller never raises the service's limit
        req = req.replace(max_candidates=limits.max_candidates)
    if not isinstance(req.profile, ProfileRef):
        raise RequestError("the profile of a service request is a bundled example, inline records or a path", path="/profile")
    key, load = resolve(req.profile) if resolve is not None else _resolve(req.profile, profile_dir, limits)
    # The count needs the parsed profile only (its batches and dataset size), never the models:
    # it is checked before the fit, so a request over the limit costs a parse, not a fit
    # (a 4 MiB inline profile took ~40 s to fit before its 422).
    if planning:
        from cotune.track import planning_profile

        profile = load()
        n_candidates = _admitted_count(req, profile, limits)
        full = ("planning",) + tuple(key) + (req.interval,)
        hit = _cached(full)
        models = hit[1] if hit is not None else _fit(full, planning_profile(profile), limits=limits)
    else:
        full = tuple(key) + (req.interval,)
        hit = _cached(full)
        profile = hit[0] if hit is not None else load()
        n_candidates = _admitted_count(req, profile, limits)
        models = hit[1] if hit is not None else _fit(full, profile, limits=limits)
    return req.replace(profile=profile), models, n_candidates


def _check_limits(limits: Any) -> None:
    """A Python caller's ``limits`` (a dict gave an AttributeError traceback deep in the count)."""
    if not isinstance(limits, Limits):
        raise InputError(f"limits must be a cotune.api.Limits, got {excerpt(limits)}: pass Limits(max_records=..., "
                         "max_candidates=..., cache_size=..., cache_records=...)")


def recommend_request(
    request: Mapping[str, Any] | RecommendRequest,
    *,
    profile_dir: str | os.PathLike[str] | None = None,
    limits: Limits = Limits(),
    admit: Callable[[int], ContextManager[Any]] | None = None,
) -> dict[str, Any]:
    """Answer a recommend request (plain data) with the recommendation document.

    Parameters
    ----------
    request : a ``dict`` following ``docs/schema/recommend-request.v1.json`` (or a
        :class:`~cotune.RecommendRequest` whose profile is a :class:`~cotune.ProfileRef`).
    profile_dir : directory that ``{"profile": {"path": ...}}`` may read from; ``None``
        (default) disables paths — inline records and bundled examples only.
    limits : bounds on records and search-space size.
    admit : called with the request's candidate count (an upper bound) once it passed the
        limits; the solve runs inside the context it returns. A service uses it to bound
        the candidates solved at once (``cotune.serve``).

    Returns the document of ``docs/schema/recommend-response.v1.json``: ``status`` is
    ``"ok"`` or ``"infeasible"`` (then ``relax`` says what to change). Bad input raises
    :class:`~cotune.api.RequestError` (or another :class:`~cotune.errors.InputError`).
    """
    from cotune._pipeline import recommend

    _check_limits(limits)
    req = request if isinstance(request, RecommendRequest) else parse_request(request, max_candidates=limits.max_candidates)
    req, models, n_candidates = _prepared(req, profile_dir, limits)
    with (admit(n_candidates) if admit is not None else contextlib.nullcontext()):
        rec = _solve(lambda: recommend(req, models=models))
    return rec.to_dict()


def replan_request(
    request: Mapping[str, Any] | ReplanRequest,
    *,
    profile_dir: str | os.PathLike[str] | None = None,
    limits: Limits = Limits(),
    admit: Callable[[int], ContextManager[Any]] | None = None,
) -> dict[str, Any]:
    """Answer a replan request (``docs/schema/replan-request.v1.json``) with the re-plan
    document (``replan-response.v1.json``): stay, switch or infeasible, and why.
    ``profile_dir``, ``limits`` and ``admit`` as for :func:`recommend_request`."""
    from cotune.spot import replan

    _check_limits(limits)

    # One read and one parse of the profile per request: the progress (from the job's tracked
    # records) and the curve and models come from the same snapshot. Read twice, a tracker's
    # append between the reads gave an answer mixing the two (progress from one, curve from the other).
    once: dict[str, tuple[Any, Callable[[], Any]]] = {}

    def resolve_once(ref: ProfileRef) -> tuple[Any, Callable[[], Any]]:
        if "ref" not in once:
            key, load = _resolve(ref, profile_dir, limits)
            once["ref"] = (key, functools.cache(load))
        return once["ref"]

    def load_ref(ref: Any) -> Any:  # the same confinement and limits as the solve's own read
        if not isinstance(ref, ProfileRef):
            raise RequestError("the profile of a service request is a bundled example, inline records or a path", path="/profile")
        return resolve_once(ref)[1]()

    rr = request if isinstance(request, ReplanRequest) else parse_replan_request(
        request, max_candidates=limits.max_candidates, load_profile_ref=load_ref)
    question, models, n_candidates = _prepared(rr.request, profile_dir, limits, planning=True, resolve=resolve_once)
    rr = dataclasses.replace(rr, request=question)
    with (admit(n_candidates) if admit is not None else contextlib.nullcontext()):
        result = _solve(lambda: replan(rr, models=models))
    return result.to_dict()
