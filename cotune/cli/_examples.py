"""``cotune examples``: list the bundled example profiles."""

from __future__ import annotations

import argparse

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "examples",
        help="list the bundled example profiles (usable wherever a PROFILE path is)",
        description="List the bundled example profiles. Their names work wherever a PROFILE path does.",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from cotune.cli._output import emit, emit_json, table
    from cotune.examples import list_examples

    examples = list_examples()
    if args.json:
        emit_json(
            [
                {"name": e.name, "metric": e.metric, "goal": e.goal, "dataset_size": e.dataset_size, "source": e.source, "path": str(e.path)}
                for e in examples
            ]
        )
        return 0
    rows = [(e.name, e.metric, e.goal, f"{e.dataset_size:,}", e.source) for e in examples]
    emit(table(["NAME", "METRIC", "GOAL", "DATASET", "SOURCE"], rows))
    emit()
    emit("Use a name as PROFILE, e.g.: cotune recommend cifar10-resnet18 --target 0.94 --deadline 30m")
    return 0
