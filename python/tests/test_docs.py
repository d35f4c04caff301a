"""The examples in the package's docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["simlsh", "simlsh.signers", "simlsh.text", "simlsh.index", "simlsh.join",
           "simlsh.estimate", "simlsh.arrow", "simlsh.sklearn"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    import numpy as np
    import simlsh

    r = doctest.testmod(mod, extraglobs={"np": np, "simlsh": simlsh, "hamming": simlsh.hamming},
                        optionflags=doctest.ELLIPSIS)
    assert r.attempted > 0 and r.failed == 0


def test_readme_scikit_learn_example_prints_what_it_says(capsys):
    import pathlib
    import re

    text = (pathlib.Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Ten lines with scikit-learn\n\n```python\n(.*?)```", text, re.S).group(1)
    exec(compile(block, "README.md", "exec"), {})
    printed = capsys.readouterr().out.strip()
    claimed = block.strip().splitlines()[-1].split("#")[-1].strip()
    assert printed == claimed


def test_examples_run_on_the_bundled_data():
    import pathlib
    import subprocess
    import sys

    here = pathlib.Path(__file__).resolve().parents[1] / "examples"
    for name in ("dedup_text", "sklearn_pipeline", "glove_neighbours", "arrow_batches"):
        r = subprocess.run([sys.executable, str(here / f"{name}.py")], capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, f"{name}: {r.stderr}"
        assert r.stdout.strip(), name
