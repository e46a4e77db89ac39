"""The cluster file: which GPUs can be rented, on which market, at what price and risk.

A cluster file is TOML (``.toml``) or YAML (``.yaml``/``.yml``) with the same keys
(documented with an example in ``docs/spot.md``; ``examples/cluster.toml``)::

    version = 1
    gpus_per_host = 1                 # optional: GPUs per server, the unit that is revoked
                                      # (a [gpu.NAME] table may give its own)

    [checkpoint]                      # needed when any spot servers are offered
    write_s = 20                      # seconds to write one checkpoint, or both of:
    # model_size_gb = 0.5             #   checkpoint size
    # bandwidth_gb_per_s = 0.05       #   write bandwidth (write_s = size / bandwidth)
    restart_s = 30                    # reload + re-initialise after a revocation (default 0)

    [gpu.t4]
    on_demand = 16                    # servers' GPUs available on demand
    spot = 32                         # ... and on the spot market
    on_demand_price_per_hour = 0.526  # USD per GPU-hour
    spot_price_per_hour = 0.158
    revocation_rate_per_hour = 0.05   # revocations per spot server-hour
    replacement_delay_s = 120         # a number of seconds or a span such as "2m"
    # gpus_per_host = 4               # optional: this type's servers hold 4 (not the file's)

Validation errors are one line: the file, the field, a short escaped excerpt of the
value that broke the rule (never its ``repr``: a YAML value built from nested aliases
would expand to gigabytes), and what to write instead. Files are read up to
:data:`MAX_CLUSTER_FILE_BYTES`; YAML aliases are capped at :data:`MAX_YAML_ALIASES` and
nodes at :data:`MAX_YAML_NODES` ("billion laughs" files are refused while parsing).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from cotune._checks import (
    CLUSTER_NAMED, BadValue, excerpt, file_problem, integer, line_break_in, not_text_reason, number, path_text_problem,
)
from cotune._request import MAX_GPUS_PER_HOST as REQUEST_MAX_GPUS_PER_HOST
from cotune.errors import InputError

__all__ = [
    "Checkpoint",
    "GpuOffer",
    "Cluster",
    "load_cluster",
    "parse_cluster",
    "CLUSTER_FILE_VERSION",
    "MAX_CLUSTER_FILE_BYTES",
    "MAX_YAML_ALIASES",
    "MAX_YAML_NODES",
]

CLUSTER_FILE_VERSION = 1
# A cluster file lists a few GPU types: far below these, far above any real file.
MAX_CLUSTER_FILE_BYTES = 1024 * 1024
MAX_YAML_ALIASES = 100
MAX_YAML_NODES = 100_000
# Caps on counts a cluster file may give (beyond them a value is a typo, not a cluster).
MAX_GPUS_PER_TYPE = 1_000_000
MAX_GPUS_PER_HOST = REQUEST_MAX_GPUS_PER_HOST  # one bound for a request's and a file's host size
_MAX_SECONDS = 1e9
# One revocation every 36 s on average is no market; far beyond it the revocation
# quantiles take minutes (10⁶/h did not finish in 120 s).
MAX_REVOCATIONS_PER_HOUR = 100.0

_TOP_KEYS = {"version", "gpus_per_host", "checkpoint", "gpu"}
_CKPT_KEYS = {"write_s", "model_size_gb", "bandwidth_gb_per_s", "restart_s"}
_GPU_KEYS = {
    "on_demand",
    "spot",
    "on_demand_price_per_hour",
    "spot_price_per_hour",
    "revocation_rate_per_hour",
    "replacement_delay_s",
    "gpus_per_host",
}


@dataclass(frozen=True)
class Checkpoint:
    """``write_s``: seconds to write one checkpoint (δ); ``restart_s``: seconds to reload it
    and re-initialise the job after a revocation (added to the replacement delay)."""

    write_s: float
    restart_s: float = 0.0


@dataclass(frozen=True)
class GpuOffer:
    """One GPU type: availability and price per market, and the spot market's risk.

    ``revocation_rate_per_hour`` is per spot *server*-hour; a job on ``h`` spot servers
    is revoked at ``h ×`` that rate. ``replacement_delay_s`` is how long a new server
    takes to join (also used as the delay of switching markets). ``gpus_per_host``: the
    GPUs in one of its servers, where they differ from the file's (8 V100s, 4 T4s).
    """

    name: str
    on_demand: int = 0
    spot: int = 0
    on_demand_price_per_hour: float | None = None
    spot_price_per_hour: float | None = None
    revocation_rate_per_hour: float = 0.0
    replacement_delay_s: float = 0.0
    gpus_per_host: int | None = None

    def available(self, market: str) -> int:
        if market == "on_demand":
            return self.on_demand
        if market == "spot":
            return self.spot
        if market == "mixed":
            return min(self.on_demand, self.spot)
        raise InputError(f"unknown market {excerpt(market)}: use on_demand, spot or mixed")


@dataclass(frozen=True)
class Cluster:
    """A validated cluster description (see the module docstring for the file format)."""

    gpus: Mapping[str, GpuOffer]
    checkpoint: Checkpoint | None = None
    gpus_per_host: int | None = None
    source: str = "<cluster>"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def host_size(self, gpu: str) -> int | None:
        """GPUs per server of ``gpu``: its table's ``gpus_per_host``, else the file's (None: neither says)."""
        own = self.gpus[gpu].gpus_per_host if gpu in self.gpus else None
        return own if own is not None else self.gpus_per_host

    @property
    def has_spot(self) -> bool:
        return any(o.spot > 0 for o in self.gpus.values())

    def offer(self, gpu: str) -> GpuOffer:
        try:
            return self.gpus[gpu]
        except KeyError:
            raise InputError(
                f"{self.source}: gpu {excerpt(gpu)} is not in the cluster file (it lists {', '.join(self.gpus)}): add a [gpu.{gpu}] table"
            ) from None

    def with_offer(self, gpu: str, **changes: Any) -> "Cluster":
        """A copy with one GPU type's fields changed (new prices, fewer servers …), re-validated."""
        offer = replace(self.offer(gpu), **changes)
        _check_offer(offer, self.source, has_checkpoint=self.checkpoint is not None)
        return replace(self, gpus={**self.gpus, gpu: offer})


def _fail(source: str, where: str, problem: str, fix: str) -> InputError:
    # ``where`` holds the file's own keys (a GPU name, an unknown field): a line break or
    # another control character in one is shown escaped, so the error stays one line.
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in where)
    return InputError(f"{source}: {shown} {problem}; {fix}")


def _number(
    source: str, where: str, value: Any, *, fix: str, minimum: float = 0.0, positive: bool = False, maximum: float | None = None
) -> float:
    try:
        return number(value, where=where, le=maximum, **({"gt": 0.0} if positive else {"ge": minimum}))
    except BadValue as exc:
        raise _fail(source, where, exc.detail, fix) from None


def _count(source: str, where: str, value: Any) -> int:
    # One rule for whole numbers at every door (cotune._checks.integer): 4.0 is 4, as in a
    # request's own fields and JSON Schema's "integer"; 4.5 and true are refused.
    try:
        return integer(value, where=where, ge=0, le=MAX_GPUS_PER_TYPE)
    except BadValue as exc:
        raise _fail(source, where, exc.detail, "give how many GPUs of this type can be rented (0 for none)") from None


def _seconds(source: str, where: str, value: Any, *, fix: str) -> float:
    if isinstance(value, str):
        from cotune.units import parse_duration

        try:
            value = parse_duration(value, allow_zero=True)  # "0s" is the number 0: a warm pool, no reload
        except InputError as exc:
            problem = "must be zero or more" if "zero or more" in str(exc) else "cannot be read as a duration"
            raise _fail(source, where, f"{problem}: {excerpt(value)}", fix) from None
    # Seconds feed exponentials of the revocation model: keep them within a century.
    seconds = _number(source, where, value, fix=fix)
    if seconds > _MAX_SECONDS:
        raise _fail(source, where, f"must be at most {_MAX_SECONDS:.0e} s (about 30 years), got {seconds:g} s", fix)
    return seconds


def _unknown(source: str, where: str, table: Mapping[str, Any], allowed: set[str]) -> None:
    extra = sorted((str(k) for k in set(table) - allowed), key=str)
    if extra:
        raise _fail(source, f"{where}{extra[0][:60]}", "is not a known field", f"use one of: {', '.join(sorted(allowed))}")


def _check_offer(o: GpuOffer, source: str, *, has_checkpoint: bool) -> None:
    at = f"gpu.{o.name}."
    if o.on_demand < 0 or o.spot < 0:
        raise _fail(source, f"{at}on_demand/spot", "must be >= 0", "give how many GPUs can be rented")
    if o.on_demand == 0 and o.spot == 0:
        raise _fail(source, f"{at}on_demand and spot", "are both 0", "offer at least one GPU on one market, or remove the table")
    if o.on_demand > 0 and o.on_demand_price_per_hour is None:
        raise _fail(source, f"{at}on_demand_price_per_hour", "is missing", "give the on-demand price in USD per GPU-hour")
    if o.spot > 0:
        if o.spot_price_per_hour is None:
            raise _fail(source, f"{at}spot_price_per_hour", "is missing", "give the spot price in USD per GPU-hour")
        if not has_checkpoint:
            raise _fail(source, "[checkpoint]", "is missing but spot servers are offered", "add a [checkpoint] table with write_s (seconds)")


def _host_size(source: str, at: str, value: Any) -> int | None:
    if value is None:
        return None
    try:
        return integer(value, where=at, ge=1, le=MAX_GPUS_PER_HOST)  # 4.0 is 4, as for _count
    except BadValue as exc:
        raise _fail(source, at, exc.detail, "give the GPUs in one server (1 for one-GPU servers)") from None


def parse_cluster(data: Mapping[str, Any], *, source: str = "<cluster>") -> Cluster:
    """Validate a cluster description already read into plain data (from TOML, YAML, JSON)."""
    if not isinstance(data, Mapping):
        got = "an empty file" if data is None else excerpt(data)
        raise InputError(f"{source}: the file must hold a table of fields (version, checkpoint, gpu), got {got}")
    _unknown(source, "", data, _TOP_KEYS)
    version = data.get("version", CLUSTER_FILE_VERSION)
    if isinstance(version, bool) or version != CLUSTER_FILE_VERSION:  # True == 1 in Python; not in the schema
        raise _fail(source, "version", f"is {excerpt(version)}, not supported", f"write version = {CLUSTER_FILE_VERSION}")
    per_host = _host_size(source, "gpus_per_host", data.get("gpus_per_host"))

    ckpt = None
    raw_ckpt = data.get("checkpoint")
    if raw_ckpt is not None:
        if not isinstance(raw_ckpt, Mapping):
            raise _fail(source, "checkpoint", f"must be a table, got {excerpt(raw_ckpt)}", "write [checkpoint] with write_s = SECONDS")
        _unknown(source, "checkpoint.", raw_ckpt, _CKPT_KEYS)
        if "write_s" in raw_ckpt:
            if "model_size_gb" in raw_ckpt or "bandwidth_gb_per_s" in raw_ckpt:
                raise _fail(source, "checkpoint", "gives write_s and model_size_gb/bandwidth_gb_per_s", "give write_s alone, or the size and the bandwidth")
            write = _seconds(source, "checkpoint.write_s", raw_ckpt["write_s"], fix="give the seconds one checkpoint write takes, e.g. 20")
        elif "model_size_gb" in raw_ckpt and "bandwidth_gb_per_s" in raw_ckpt:
            size = _number(source, "checkpoint.model_size_gb", raw_ckpt["model_size_gb"], fix="give the checkpoint size in GB", positive=True)
            bw = _number(source, "checkpoint.bandwidth_gb_per_s", raw_ckpt["bandwidth_gb_per_s"], fix="give the write bandwidth in GB/s", positive=True)
            write = size / bw
            if write > _MAX_SECONDS:
                raise _fail(source, "checkpoint", f"model_size_gb / bandwidth_gb_per_s is {write:g} s, more than {_MAX_SECONDS:.0e} s",
                            "check the units: size in GB, bandwidth in GB/s")
        else:
            raise _fail(source, "checkpoint.write_s", "is missing", "give write_s (seconds), or both model_size_gb and bandwidth_gb_per_s")
        restart = _seconds(source, "checkpoint.restart_s", raw_ckpt.get("restart_s", 0.0), fix="give the seconds to reload a checkpoint, e.g. 30")
        ckpt = Checkpoint(write_s=write, restart_s=restart)

    gpus_raw = data.get("gpu")
    if not isinstance(gpus_raw, Mapping) or not gpus_raw:
        raise _fail(source, "gpu", "has no GPU type", "add a table per type, e.g. [gpu.t4] with on_demand, spot and prices")
    offers: dict[str, GpuOffer] = {}
    for name, table in gpus_raw.items():
        if not isinstance(name, (str, int)) or isinstance(name, bool) or not str(name).strip() or len(str(name)) > 100:
            raise _fail(source, "gpu", f"has a GPU type named {excerpt(name)}", "name each type with 1 to 100 characters, e.g. [gpu.t4]")
        if line_break_in(str(name)):
            # The profile reader's rule for names: a type named "t4\nCHOSEN ..." would print a
            # line of its own choosing in every note that names it (no profile can probe it).
            raise _fail(source, "gpu", f"has a GPU type named {excerpt(name)}, which breaks the line",
                        "name each type on one line, as the profile's step records name it, e.g. [gpu.t4]")
        key = str(name).strip().lower()
        at = f"gpu.{key}."
        if not isinstance(table, Mapping):
            raise _fail(source, f"gpu.{key}", f"must be a table, got {excerpt(table)}", "write [gpu.NAME] with on_demand, spot and prices")
        if key in offers:
            raise _fail(source, f"gpu.{key}", "appears twice (names are case-insensitive)", "merge the two tables")
        _unknown(source, at, table, _GPU_KEYS)
        price_fix = "give USD per GPU-hour, e.g. 0.526"

        def opt_price(k: str) -> float | None:
            return None if k not in table else _number(source, at + k, table[k], fix=price_fix)

        # A market's count left out while its price or risk is given reads as 0 servers:
        # the market would vanish from the search without a word.
        for count, fields in (("on_demand", ("on_demand_price_per_hour",)),
                              ("spot", ("spot_price_per_hour", "revocation_rate_per_hour", "replacement_delay_s"))):
            given = [f for f in fields if f in table]
            if given and count not in table:
                raise _fail(source, at + count, f"is missing but {given[0]} is given",
                            f"add {count} = N (GPUs available on that market), or {count} = 0 to leave it out")

        offer = GpuOffer(
            name=key,
            on_demand=_count(source, at + "on_demand", table.get("on_demand", 0)),
            spot=_count(source, at + "spot", table.get("spot", 0)),
            on_demand_price_per_hour=opt_price("on_demand_price_per_hour"),
            spot_price_per_hour=opt_price("spot_price_per_hour"),
            revocation_rate_per_hour=_number(
                source, at + "revocation_rate_per_hour", table.get("revocation_rate_per_hour", 0.0),
                fix="give revocations per spot server-hour, e.g. 0.05 (0 for never)", maximum=MAX_REVOCATIONS_PER_HOUR,
            ),
            replacement_delay_s=_seconds(
                source, at + "replacement_delay_s", table.get("replacement_delay_s", 0.0),
                fix="give seconds or a span such as 2m",
            ),
            gpus_per_host=_host_size(source, at + "gpus_per_host", table.get("gpus_per_host")),
        )
        if offer.spot > 0 and "revocation_rate_per_hour" not in table:
            raise _fail(source, at + "revocation_rate_per_hour", "is missing", "give revocations per spot server-hour, e.g. 0.05")
        if offer.spot > 0 and "replacement_delay_s" not in table:
            raise _fail(source, at + "replacement_delay_s", "is missing", "give how long a replacement server takes to join, e.g. 120 or \"2m\"")
        _check_offer(offer, source, has_checkpoint=ckpt is not None)
        offers[key] = offer
    return Cluster(gpus=offers, checkpoint=ckpt, gpus_per_host=per_host, source=source)


def _read_toml(text: str, source: str) -> Any:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as tomllib  # type: ignore[no-redef]
        except ModuleNotFoundError:
            raise InputError(f"{source}: reading TOML needs Python 3.11+ or 'pip install tomli'; or write the file in YAML") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        first = " ".join(str(exc).split())[:200]
        raise InputError(f"{source}: not valid TOML ({first}); fix the syntax (see examples/cluster.toml)") from None
    except RecursionError:
        raise InputError(f"{source}: not valid TOML (nested too deeply); a cluster file is a few flat tables") from None


def _read_yaml(text: str, source: str) -> Any:
    try:
        import yaml
    except ModuleNotFoundError:
        raise InputError(f"{source}: reading YAML needs pyyaml ('pip install pyyaml' or cotune[spot]); or write the file in TOML") from None
    try:
        return yaml.load(text, Loader=_bounded_loader(yaml))  # noqa: S506 (a SafeLoader subclass)
    except _TooManyNodes as exc:
        raise InputError(f"{source}: {exc}; a cluster file is a few flat tables: write the values out") from None
    except _RepeatedKey as exc:
        raise InputError(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        first = " ".join(str(exc).split())[:200]
        raise InputError(f"{source}: not valid YAML ({first}); fix the syntax (see docs/spot.md)") from None
    except RecursionError:
        raise InputError(f"{source}: not valid YAML (nested too deeply); a cluster file is a few flat tables") from None


class _TooManyNodes(Exception):
    pass


class _RepeatedKey(Exception):
    pass


@lru_cache(maxsize=1)
def _bounded_loader(yaml: Any) -> type:
    """``yaml.SafeLoader`` that refuses more than MAX_YAML_ALIASES aliases or MAX_YAML_NODES nodes.

    Aliases let a few hundred bytes describe a value of 10⁹ elements ("billion laughs");
    safe_load builds it as a shared graph quickly, but anything that walks it (a message,
    a copy, validation) expands it. A real cluster file needs few or no aliases.
    """

    class BoundedSafeLoader(yaml.SafeLoader):  # type: ignore[name-defined, misc]
        _aliases = 0
        _nodes = 0  # nodes of the value with every alias expanded

        def _expanded(self, node: Any, sizes: dict[int, int]) -> int:
            # Nodes under ``node`` with aliases expanded; memoised by node, so a graph of a
            # few hundred distinct nodes is measured in a few hundred steps.
            stack, order = [node], []
            while stack:
                n = stack.pop()
                if id(n) in sizes:
                    continue
                sizes[id(n)] = 0  # visiting (a YAML graph has no cycles through anchors)
                order.append(n)
                value = n.value if isinstance(n.value, list) else []
                for child in value:
                    stack.extend(child if isinstance(child, tuple) else (child,))
            for n in reversed(order):
                value = n.value if isinstance(n.value, list) else []
                kids = [k for c in value for k in (c if isinstance(c, tuple) else (c,))]
                sizes[id(n)] = min(MAX_YAML_NODES + 1, 1 + sum(sizes.get(id(k), 1) for k in kids))
            return sizes[id(node)]

        def compose_node(self, parent: Any, index: Any) -> Any:
            alias = self.check_event(yaml.AliasEvent)
            if alias:
                self._aliases += 1
                if self._aliases > MAX_YAML_ALIASES:
                    raise _TooManyNodes(f"more than {MAX_YAML_ALIASES} YAML aliases (*name)")
            node = super().compose_node(parent, index)
            self._nodes += self._expanded(node, {}) if alias else 1
            if self._nodes > MAX_YAML_NODES:
                raise _TooManyNodes(f"its aliases expand to more than {MAX_YAML_NODES:,} YAML values")
            return node

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            # PyYAML keeps the last of two equal keys silently (TOML refuses them): a
            # cluster file saying `on_demand: 16` and later `on_demand: 8` would be read as
            # 8 with no word. Merge keys (<<) may be overridden: they are not counted.
            seen: set[str] = set()
            for key, _ in node.value if isinstance(node, yaml.MappingNode) else ():
                if isinstance(key, yaml.ScalarNode) and key.tag != "tag:yaml.org,2002:merge":
                    if key.value in seen:
                        raise _RepeatedKey(f"line {key.start_mark.line + 1}: key {excerpt(key.value)} appears twice in one "
                                           "table; keep one of them")
                    seen.add(key.value)
            return super().construct_mapping(node, deep=deep)

    return BoundedSafeLoader


def load_cluster(path: str | os.PathLike[str] | Cluster) -> Cluster:
    """Read and validate a cluster file (``.toml``, ``.yaml`` or ``.yml``); a :class:`Cluster` passes through."""
    if isinstance(path, Cluster):
        return path
    if not isinstance(path, (str, os.PathLike)):
        raise InputError(f"cluster must be a path to a .toml or .yaml file (or a Cluster), got {excerpt(path)}")
    text = os.fspath(path)
    problem = path_text_problem(text, what=CLUSTER_NAMED) if isinstance(text, str) else ""
    if problem:  # the request's rule for its 'cluster': '' read as '.', "unknown cluster file type"
        raise InputError(f"the cluster file path {problem}")
    p = Path(path)
    source = str(p)
    suffix = p.suffix.lower()
    if suffix not in (".toml", ".yaml", ".yml"):
        raise InputError(f"{source}: unknown cluster file type {excerpt(suffix or '(none)')}: name it .toml, .yaml or .yml")
    problem = file_problem(p)
    if problem is not None:
        raise InputError(f"cluster file {source} {problem}: give the path of a .toml or .yaml file")
    try:
        with p.open("rb") as fh:
            raw = fh.read(MAX_CLUSTER_FILE_BYTES + 1)
    except FileNotFoundError:
        raise InputError(f"cluster file {source} does not exist: give the path of a .toml or .yaml file (see examples/cluster.toml)") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise InputError(f"cannot read cluster file {source}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(raw) > MAX_CLUSTER_FILE_BYTES:
        raise InputError(f"{source}: larger than {MAX_CLUSTER_FILE_BYTES // 1024} KiB: a cluster file lists a few GPU types (see examples/cluster.toml)")
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark (Windows editors write one) is no TOML
    except UnicodeDecodeError as exc:
        why = not_text_reason(raw)
        raise InputError(f"{source}: {why or f'not UTF-8 text (byte {exc.start}): save the file as UTF-8'}") from None
    if "\x00" in text[:8] and not_text_reason(raw):  # UTF-16 without a byte order mark decodes: no TOML error
        raise InputError(f"{source}: {not_text_reason(raw)}")
    if suffix == ".toml":
        data = _read_toml(text, source)
    else:
        data = _read_yaml(text, source)
    return parse_cluster(data, source=source)
