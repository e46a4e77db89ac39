"""The Python examples in docs/closed-loop.md run as written."""

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "closed-loop.md"


@pytest.mark.slow  # the re-plan example fits the CIFAR-10 models (about 5 s)
def test_closed_loop_doc_python_examples_run() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert blocks
    for code in blocks:
        exec(compile(code, str(DOC), "exec"), {})
