"""A long build inside the tests says where it is: llama-server's build steps (tests/real_server.py)
run through ``run_reporting``, which writes a line at least every PROGRESS_S seconds (under 30)
with the time so far and the step's latest output line, past pytest's output capture."""
import sys

import real_server


def test_a_long_step_writes_a_line_at_each_interval_with_its_latest_output():
    lines = []
    # prints a line every 0.2 s for 1.5 s; reported every 0.5 s
    step = [sys.executable, "-u", "-c", "import time\nfor i in range(8):\n    print(f'[{i}] compiling', flush=True)\n"
            "    time.sleep(0.2)"]
    code, output = real_server.run_reporting(step, "building", lines.append, timeout=60, every=0.5)
    assert code == 0 and output.splitlines()[-1] == "[7] compiling"
    assert 2 <= len(lines) <= 3, lines  # 1.6 s of work at one line per 0.5 s
    for line in lines:
        assert line.startswith("building: 0.0 min so far · [") and line.endswith("] compiling"), line
    assert real_server.PROGRESS_S < 30


def test_the_lines_get_past_pytests_capture(capfd):
    real_server.say("(the build's progress lines reach the terminal past pytest's capture: this is one)")
    captured = capfd.readouterr()
    assert "progress lines reach" not in captured.err  # written around the capture, to the terminal
