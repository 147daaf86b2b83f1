"""The README's Python quick start runs as printed (ten lines)."""
import os
import re

from conftest import REPO


def test_quick_start_runs(capsys):
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Python", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) == 10
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        exec(compile(code, "README.md", "exec"), {})
    finally:
        os.chdir(cwd)
    assert capsys.readouterr().out.startswith("[1. 1. 1. 1.]")
