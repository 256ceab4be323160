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
