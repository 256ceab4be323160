"""The fault-injection table as a whole: one row format, distinct rows, every class covered."""
import glob
import importlib.util
import os
import sys

from faults import Fault

HERE = os.path.dirname(__file__)
CLASSES = ("cli", "video", "loaders", "stores", "served", "providers", "building", "plugins")


def rows() -> dict[str, list[Fault]]:
    found = {}
    for path in sorted(glob.glob(os.path.join(HERE, "**", "test_faults_*.py"), recursive=True)):
        name = os.path.basename(path)[:-3]
        found[name.removeprefix("test_faults_")] = _module(name, path).FAULTS
    return found


def _module(name: str, path: str):
    """The fault module as pytest imported it (by its file name), or loaded from its file."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        sys.modules[name] = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sys.modules[name])
    return sys.modules[name]


def test_every_class_of_fault_has_rows_and_the_table_holds_at_least_40():
    table = rows()
    assert set(CLASSES) <= set(table), sorted(table)
    assert all(isinstance(row, Fault) for faults in table.values() for row in faults)
    assert all(len(table[c]) >= 6 for c in CLASSES), {c: len(table[c]) for c in CLASSES}
    assert sum(len(faults) for faults in table.values()) >= 40


def test_row_names_are_distinct_within_a_class():
    for faults in rows().values():
        names = [row.name for row in faults]
        assert len(names) == len(set(names)), names
