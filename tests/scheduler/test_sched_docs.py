"""The Python examples in docs/scheduler.md and examples/scheduler_python.py run."""

from __future__ import annotations

import io
import re
import runpy
from contextlib import redirect_stdout

from sched_helpers import REPO


def test_docs_python_blocks_run():
    text = (REPO / "docs" / "scheduler.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert blocks
    for block in blocks:
        with redirect_stdout(io.StringIO()):
            exec(compile(block, "docs/scheduler.md", "exec"), {})


def test_python_scheduler_example_runs():
    buf = io.StringIO()
    with redirect_stdout(buf):
        runpy.run_path(str(REPO / "examples" / "scheduler_python.py"), run_name="__main__")
    assert "kind: PyTorchJob" in buf.getvalue() and "kueue.x-k8s.io/queue-name" in buf.getvalue()
    # the second half: the job's out-of-memory re-planned, the switch rendered below that batch
    assert "switch: the job ran out of memory at local batch" in buf.getvalue()
    assert buf.getvalue().count("kind: PyTorchJob") == 2 and "name: cifar10-2" in buf.getvalue()
