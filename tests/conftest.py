"""What every test shares: one torch thread, the tests folder on the import path, and the
synthetic suite fixture (``helpers`` holds the subprocess ``cli`` and items built in code)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
# One torch thread per test process: the default of one per core oversubscribes a shared machine.
os.environ.setdefault("TIMEFOIL_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_configure(config):
    """A first run builds llama-server inside a test (minutes): its progress lines must reach the
    terminal through pytest's output capture (real_server.say)."""
    import real_server

    real_server.PYTEST_CONFIG = config


@pytest.fixture(scope="module")
def suite(tmp_path_factory, request) -> str:
    """A synthetic suite rendered once per module. A module sets its size and seed (expected
    values depend on them) with ``pytestmark = pytest.mark.suite(per_family=..., seed=..., families=...)``."""
    from timefoil.synth import generate

    marker = request.node.get_closest_marker("suite")
    options = {"per_family": 2, "seed": 0, **(marker.kwargs if marker else {})}
    root = str(tmp_path_factory.mktemp("suite"))
    generate(root, **options)
    return root
