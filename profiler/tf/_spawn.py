"""``python -m profiler.tf._spawn N MODULE ARGS...``: N local TensorFlow workers.

Each child gets ``TF_CONFIG`` = the cluster of all N (free localhost ports) and its
own index. The first child that fails stops the others; the exit code is the first
non-zero one (0 when all succeed). Started by :class:`profiler.tf.TFConfigLauncher`.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time

from profiler._launcher import free_port
from profiler._entry import die_with_parent

STOP_GRACE_S = 10.0  # after the first failure, the seconds the other workers get to stop on SIGTERM


def _signal_name(number: int) -> str:
    try:
        return f"Signals.{signal.Signals(number).name}"  # as torchrun's log says it
    except ValueError:
        return f"signal {number}"


def main(argv: list[str]) -> int:
    if len(argv) < 2 or not argv[0].isdigit():
        print("usage: python -m profiler.tf._spawn N MODULE [ARGS...]", file=sys.stderr)
        return 2
    die_with_parent()
    workers = int(argv[0])
    ports = set()
    while len(ports) < workers:
        ports.add(free_port())
    cluster = {"worker": [f"localhost:{p}" for p in sorted(ports)]}
    children = []
    for index in range(workers):
        env = dict(os.environ)
        env["TF_CONFIG"] = json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}})
        env["RANK"], env["WORLD_SIZE"] = str(index), str(workers)
        children.append(subprocess.Popen([sys.executable, "-m", *argv[1:]], env=env))
    code = 0
    stopped_at: float | None = None
    index_of = {id(c): i for i, c in enumerate(children)}
    while children:
        for child in list(children):
            rc = child.poll()
            if rc is None:
                continue
            children.remove(child)
            if rc < 0 and code == 0:
                # Said as torchrun says it, so the profiler tells a worker killed by a signal
                # it did not send (the kernel's out-of-memory killer) from a crash.
                print(f"profiler.tf._spawn: worker {index_of[id(child)]} exited: {_signal_name(-rc)} "
                      f"(exitcode  : {rc})", file=sys.stderr, flush=True)
            if rc != 0 and code == 0:
                code = rc if rc > 0 else 128 - rc
                stopped_at = time.monotonic()
                for other in children:  # peers would wait in a collective forever
                    other.send_signal(signal.SIGTERM)
        if stopped_at is not None and children and time.monotonic() - stopped_at > STOP_GRACE_S:
            for other in children:  # a peer blocked in a collective may not heed SIGTERM
                other.kill()
            stopped_at = math.inf
        time.sleep(0.05)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
