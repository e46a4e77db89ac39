"""``cotune serve``: the recommend API over HTTP (needs ``pip install 'cotune[serve]'``)."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import signal
import threading
from types import FrameType
from typing import Iterator

from cotune._checks import excerpt
from cotune._request import DEFAULT_MAX_CANDIDATES
from cotune.cli import _args

__all__ = ["add_parser", "run"]

INSTALL_HINT = "cotune serve needs the HTTP extra (FastAPI + uvicorn): pip install 'cotune[serve]'"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve POST /v1/recommend, POST /v1/replan and GET /health over HTTP (extra: cotune[serve])",
        description="Serve the API over HTTP: POST /v1/recommend (docs/schema/recommend-request.v1.json), "
        "POST /v1/replan (docs/schema/replan-request.v1.json), GET /health, GET /metrics (Prometheus), OpenAPI at /openapi.json and /docs. Profiles are bundled examples or inline records; "
        "reading files needs --profile-dir. See docs/scheduler.md.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 exposes it to the network)")
    p.add_argument("--port", type=_args.port, default=8000, help="port, 1 to 65535 (default 8000)")
    p.add_argument("--profile-dir", default=None, metavar="DIR", help="allow {\"path\": ...} profiles, read only inside DIR (default: paths refused)")
    p.add_argument("--max-body-bytes", type=_args.positive_int, default=4 * 1024 * 1024, metavar="N", help="largest request body (default 4 MiB)")
    p.add_argument("--max-records", type=_args.positive_int, default=50_000, metavar="N", help="largest profile, in records (default 50000)")
    p.add_argument("--max-candidates", type=_args.positive_int, default=DEFAULT_MAX_CANDIDATES, metavar="N",
                   help=f"largest search space, in candidates (default {DEFAULT_MAX_CANDIDATES:,})")
    p.add_argument("--concurrency", type=_args.positive_int, default=None, metavar="N", help="solves at once (default: CPU count)")
    p.add_argument("--max-pending", type=_args.positive_int, default=32, metavar="N",
                   help="requests in progress (waiting or solving) before answering 503 + Retry-After (default 32)")
    p.add_argument("--candidate-budget", type=_args.positive_int, default=None, metavar="N",
                   help="candidates solved at once over all requests, which bounds memory (default: --max-candidates)")
    p.add_argument("--request-timeout", type=_args.duration, default=30.0, metavar="DURATION",
                   help="time for a request's head, and for its body, to arrive (default 30s)")
    p.add_argument("--idle-timeout", type=_args.duration, default=5.0, metavar="DURATION",
                   help="an idle keep-alive connection is closed after this (default 5s)")
    p.add_argument("--max-connections", type=_args.positive_int, default=1000, metavar="N",
                   help="open connections before answering 503 (default 1000)")
    p.add_argument("--token-file", default=None, metavar="FILE",
                   help="require 'Authorization: Bearer TOKEN' on every route but /health; FILE holds TOKEN")
    p.add_argument("--log-level", choices=("critical", "error", "warning", "info", "debug"), default="info")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cotune.errors import EXIT_INPUT, InputError

    if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        from cotune.cli._output import error

        error(INSTALL_HINT)
        return EXIT_INPUT
    import os

    from cotune.api import Limits
    from cotune.cli._output import info, warning
    from cotune.serve import ServiceSettings, create_app
    from cotune.serve._server import is_loopback, run_server

    if args.profile_dir is not None and not os.path.isdir(args.profile_dir):
        raise InputError(f"--profile-dir {excerpt(args.profile_dir)} is not a directory: give an existing directory of profiles")
    for name in ("request_timeout", "idle_timeout"):
        value = getattr(args, name)
        if not 0 < value <= 86_400:
            raise InputError(f"--{name.replace('_', '-')} must be more than 0 s and at most 1 day, got {value:g} s: give e.g. 30s")
    token = None if args.token_file is None else read_token(args.token_file)
    if token is None and not is_loopback(args.host):
        warning(
            f"serving on {args.host} without authentication: anyone who can reach this address can use the service; "
            "add --token-file FILE or bind 127.0.0.1"
        )
    settings = ServiceSettings(
        # The fitted-model cache holds two profiles at the record limit (Limits' default for it).
        limits=Limits(max_records=args.max_records, max_candidates=args.max_candidates),
        profile_dir=args.profile_dir,
        max_body_bytes=args.max_body_bytes,
        max_concurrency=args.concurrency or max(1, os.cpu_count() or 1),
        request_timeout_s=args.request_timeout,
        idle_timeout_s=args.idle_timeout,
        max_pending=args.max_pending,
        candidate_budget=args.candidate_budget,
        max_connections=args.max_connections,
        token=token,
    )
    guard = "bearer token required" if token else "no authentication"
    try:
        with _sigterm_interrupts():
            run_server(
                create_app(settings), host=args.host, port=args.port, log_level=args.log_level,
                on_listen=lambda url: info(f"serving {url} (POST /v1/recommend and /v1/replan, GET /health and /metrics; {guard}); Ctrl-C stops"),
            )
    except _Terminated:
        from cotune.cli._output import error

        with contextlib.suppress(OSError):  # a log reader gone with the pod must not turn the stop into a crash
            error("stopped by SIGTERM")
        return 130
    return 0


class _Terminated(KeyboardInterrupt):
    """SIGTERM to the server, after uvicorn's graceful drain, taken down Ctrl-C's path."""


@contextlib.contextmanager
def _sigterm_interrupts() -> Iterator[None]:
    """Within the block SIGTERM (how Kubernetes and systemd stop a service) ends the server as
    Ctrl-C does: uvicorn drains the connections with its own handler, then re-raises the
    signal to the handler it found — this one, where the default action ended the process
    with 143 and nothing said. A SIGTERM someone set to be ignored stays ignored; only the
    main thread can hold handlers, so a call from another thread keeps the default."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return

    def stop(signal_no: int, frame: FrameType | None) -> None:
        raise _Terminated(signal_no)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def read_token(path: str) -> str:
    """The bearer token in ``path``: its text without surrounding whitespace."""
    from cotune._checks import file_problem
    from cotune.errors import InputError

    problem = file_problem(path)
    if problem is not None:
        raise InputError(f"--token-file {excerpt(path)} {problem}: give a readable file holding the token")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(4097)
    except OSError as exc:
        raise InputError(f"--token-file {excerpt(path)}: cannot read it ({exc.strerror}): give a readable file holding the token") from None
    if raw.startswith(b"\xef\xbb\xbf"):
        # Notepad's "UTF-8" writes a byte-order mark first: invisible in an editor, and every
        # client's header would then be refused. The token itself is what follows it.
        raw = raw[3:]
    try:
        token = raw.decode("ascii").strip()
    except UnicodeDecodeError:
        token = ""
    if not token or len(raw) > 4096 or not token.isprintable() or any(c.isspace() for c in token):
        from cotune._checks import not_text_reason

        why = ("it is empty" if not raw.strip() else "it holds more than 4,096 bytes" if len(raw) > 4096
               else "it holds several lines" if len(raw.strip().splitlines()) > 1
               else "it holds a space" if " " in token or "\t" in token
               else not_text_reason(raw) or "it holds characters other than printable ASCII")
        raise InputError(
            f"--token-file {excerpt(path)}: {why}; it must hold one token of 1 to 4096 printable ASCII characters without spaces; "
            "e.g. write the output of 'openssl rand -hex 32' into it"
        )
    return token
