"""Rules the test suite keeps: a hang fails a test instead of stalling CI."""
import ast
import glob
import os

HERE = os.path.dirname(__file__)
BOUNDED = {"run", "check_output", "call", "check_call"}  # subprocess functions that take timeout=
WAITS = {"wait", "communicate"}  # a started process is waited for with a timeout


def unbounded_calls(source: str) -> list[int]:
    """Lines of subprocess calls and process waits that give no timeout."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        name, owner = node.func.attr, ast.unparse(node.func.value)
        timed = any(k.arg == "timeout" for k in node.keywords) or (name == "wait" and node.args)
        if ((name in BOUNDED and owner == "subprocess") or name in WAITS) and not timed:
            lines.append(node.lineno)
    return lines


def test_the_rule_sees_an_unbounded_call_and_accepts_a_bounded_one():
    assert unbounded_calls("import subprocess\nsubprocess.run(['x'])\nproc.wait()\n") == [2, 3]
    assert unbounded_calls("subprocess.run(['x'], timeout=5)\nproc.wait(timeout=5)\nproc.wait(5)\n") == []


def test_every_subprocess_in_the_tests_and_benchmarks_has_a_timeout():
    files = glob.glob(os.path.join(HERE, "**", "*.py"), recursive=True)
    files += glob.glob(os.path.join(HERE, "..", "bench", "*.py"))
    found = {}
    for path in files:
        with open(path, encoding="utf-8") as handle:
            lines = unbounded_calls(handle.read())
        if lines:
            found[os.path.relpath(path, HERE)] = lines
    assert not found, f"calls without a timeout: {found}"


def definitions(source: str, names: set[str]) -> set[str]:
    """Which of ``names`` a module defines at its top level (functions, fixtures, assignments)."""
    found = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in names:
            found.add(node.name)
        elif isinstance(node, ast.Assign):
            found |= {t.id for t in node.targets if isinstance(t, ast.Name) and t.id in names}
    return found


def test_the_definition_rule_sees_functions_fixtures_and_assignments():
    source = "@pytest.fixture\ndef suite(): pass\ncli = partial(run)\ndef other(): pass\n"
    assert definitions(source, {"cli", "suite"}) == {"cli", "suite"}
    assert definitions("def f():\n    def cli(): pass\n", {"cli"}) == set()


def test_the_cli_helper_and_the_suite_fixture_are_defined_once():
    where: dict[str, list[str]] = {}
    for path in glob.glob(os.path.join(HERE, "**", "*.py"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            for name in definitions(handle.read(), {"cli", "suite"}):
                where.setdefault(name, []).append(os.path.relpath(path, HERE))
    assert where == {"cli": ["helpers.py"], "suite": ["conftest.py"]}
