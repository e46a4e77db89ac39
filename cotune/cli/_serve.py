"""``cotune serve``: the recommend API over HTTP (needs ``pip install 'cotune[serve]'``)."""

from __future__ import annotations

import argparse
import importlib.util

from cotune.cli import _args

__all__ = ["add_parser", "run"]

INSTALL_HINT = "cotune serve needs the HTTP extra (FastAPI + uvicorn): pip install 'cotune[serve]'"


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve",
        help="serve POST /v1/recommend and GET /health over HTTP (extra: cotune[serve])",
        description="Serve the recommend API over HTTP: POST /v1/recommend (docs/schema/recommend-request.v1.json), "
        "GET /health, OpenAPI at /openapi.json and /docs. Profiles are bundled examples or inline records; "
        "reading files needs --profile-dir. See docs/scheduler.md.",
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1; 0.0.0.0 exposes it to the network)")
    p.add_argument("--port", type=_args.port, default=8000, help="port, 1 to 65535 (default 8000)")
    p.add_argument("--profile-dir", default=None, metavar="DIR", help="allow {\"path\": ...} profiles, read only inside DIR (default: paths refused)")
    p.add_argument("--max-body-bytes", type=_args.positive_int, default=4 * 1024 * 1024, metavar="N", help="largest request body (default 4 MiB)")
    p.add_argument("--max-records", type=_args.positive_int, default=50_000, metavar="N", help="largest profile, in records (default 50000)")
    p.add_argument("--max-candidates", type=_args.positive_int, default=1_000_000, metavar="N", help="largest search space, in candidates (default 1000000)")
    p.add_argument("--concurrency", type=_args.positive_int, default=None, metavar="N", help="solves at once (default: CPU count)")
    p.add_argument("--log-level", choices=("critical", "error", "warning", "info", "debug"), default="info")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cotune.errors import EXIT_INPUT, InputError

    if importlib.util.find_spec("fastapi") is None or importlib.util.find_spec("uvicorn") is None:
        from cotune.cli._output import error

        error(INSTALL_HINT)
        return EXIT_INPUT
    import os

    import uvicorn

    from cotune.api import Limits
    from cotune.serve import ServiceSettings, create_app

    if args.profile_dir is not None and not os.path.isdir(args.profile_dir):
        raise InputError(f"--profile-dir {args.profile_dir!r} is not a directory: give an existing directory of profiles")
    settings = ServiceSettings(
        limits=Limits(max_records=args.max_records, max_candidates=args.max_candidates),
        profile_dir=args.profile_dir,
        max_body_bytes=args.max_body_bytes,
        max_concurrency=args.concurrency or max(1, os.cpu_count() or 1),
    )
    uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level=args.log_level)
    return 0
