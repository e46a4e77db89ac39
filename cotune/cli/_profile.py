"""``cotune profile``: run probes (delegates to the ``profiler`` package, imported lazily
because it needs torch)."""

from __future__ import annotations

import argparse

from cotune.errors import EXIT_INPUT

__all__ = ["add_parser", "forward"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "profile",
        help="probe a training job (torchrun) and write a profile",
        description="Probe a training job and write a profile; see 'cotune profile --help' and docs/profiler.md.",
        add_help=False,
    )
    p.set_defaults(run=lambda args: forward([]))


def forward(argv: list[str]) -> int:
    from cotune.cli._output import error

    try:
        from profiler.cli import main as profiler_main
    except ImportError as exc:
        error(
            f"profiling needs the probe side ({exc.name or exc}): install it with pip install 'cotune[profiler]' "
            "(or pip install torch)"
        )
        return EXIT_INPUT
    return int(profiler_main(argv))
