import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
# One torch thread per test process: the default of one per core oversubscribes a shared machine.
os.environ.setdefault("TIMEFOIL_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
