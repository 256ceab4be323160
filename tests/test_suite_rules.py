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


def command_line_runners(source: str) -> set[str]:
    """Top-level functions other than tests that start ``python -m timefoil.cli`` in a
    subprocess, whatever their name: each is a command-line helper (a test that must start the
    process itself, to drop a variable from its environment, is no helper)."""
    found = set()
    for node in ast.parse(source).body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name.startswith("test_"):
            continue
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) \
                    and ast.unparse(call.func.value) == "subprocess" \
                    and any(isinstance(c, ast.Constant) and c.value == "timefoil.cli" for c in ast.walk(call)):
                found.add(node.name)
    return found


def test_the_runner_rule_sees_a_helper_under_any_name():
    source = ("def run_cli(*args):\n    return subprocess.run([sys.executable, '-m', 'timefoil.cli', *args], "
              "timeout=5)\ndef test_x():\n    cli('score')\n")
    assert command_line_runners(source) == {"run_cli"}
    assert command_line_runners("def f():\n    subprocess.run(['ls'], timeout=5)\n") == set()


def test_the_cli_helper_and_the_suite_fixture_are_defined_once():
    """Standalone scripts (tests/smoke/, standard library only) keep their own runner."""
    where: dict[str, list[str]] = {}
    for path in glob.glob(os.path.join(HERE, "**", "*.py"), recursive=True):
        if os.path.relpath(path, HERE).startswith("smoke" + os.sep):
            continue
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        for name in definitions(source, {"cli", "suite"}) | command_line_runners(source):
            where.setdefault(name, []).append(os.path.relpath(path, HERE))
    assert where == {"cli": ["helpers.py"], "suite": ["conftest.py"]}
