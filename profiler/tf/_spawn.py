"""``python -m profiler.tf._spawn N MODULE ARGS...``: N local TensorFlow workers.

Each child gets ``TF_CONFIG`` = the cluster of all N (free localhost ports) and its
own index. The first child that fails stops the others; the exit code is the first
non-zero one (0 when all succeed). Started by :class:`profiler.tf.TFConfigLauncher`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

from profiler._launcher import free_port
from profiler._entry import die_with_parent


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
    while children:
        for child in list(children):
            rc = child.poll()
            if rc is None:
                continue
            children.remove(child)
            if rc != 0 and code == 0:
                code = rc if rc > 0 else 128 - rc
                for other in children:  # peers would wait in a collective forever
                    other.send_signal(signal.SIGTERM)
        time.sleep(0.05)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
