#!/usr/bin/env bash
# The wheels bench/gpu.py needs on a GPU machine that has CUDA torch and nothing else: no network,
# no PyAV, zstandard, numpy or this transformers. Every package timefoil and transformers import is
# fetched, worked out from the metadata of the ones installed here (timefoil's own requirements and
# transformers, each with what it requires in turn, for the GPU machine's Python version), less
# torch and what torch brings with it. Carried beside the checkout, installed there with the
# command this prints.
# Usage: [PYTHON=.venv/bin/python] bash bench/gpu_wheels.sh [--quick] [python version of the GPU machine, default 3.12]
# PYTHON: an interpreter with timefoil's requirements and transformers installed (default python3).
# --quick: a machine that has torch, transformers and numpy already (their requirements bring click
# and rich): only PyAV and zstandard are fetched, for bench/gpu.py --quick.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=
if [ "${1:-}" = --quick ]; then quick=1; shift; fi
py=${1:-3.12}
python=${PYTHON:-python3}
if [ -n "$quick" ]; then
  versions=$("$python" -c 'from importlib import metadata as m; print(" ".join(f"{n}=={m.version(n)}" for n in ("av", "zstandard")))')
else
versions=$("$python" - "$py" <<'PY'
import re
import sys
import tomllib
from importlib import metadata

from packaging.requirements import Requirement

target = sys.argv[1]
# markers read as on the GPU machine, not as on this one
env = {"python_version": target, "python_full_version": f"{target}.0", "extra": "",
       "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
       "implementation_name": "cpython", "platform_python_implementation": "CPython", "os_name": "posix"}


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(roots):
    """Each installed package ``roots`` need, with its version, followed through their requirements."""
    found, todo = {}, [Requirement(r) for r in roots]
    while todo:
        req = todo.pop()
        name = norm(req.name)
        if name in found or (req.marker and not req.marker.evaluate(env)):
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            sys.exit(f"{name} is required but not installed for {sys.executable}: install it, or set PYTHON")
        found[name] = dist.version
        todo.extend(Requirement(r) for r in dist.requires or [])
    return found


with open("pyproject.toml", "rb") as f:
    roots = tomllib.load(f)["project"]["dependencies"] + ["transformers"]
torch_brings = closure(["torch"])  # on the GPU machine already, in the build it was installed with
needed = {name: version for name, version in closure(roots).items() if name not in torch_brings}
print(" ".join(f"{name}=={version}" for name, version in sorted(needed.items())))
PY
)
fi
rm -rf .whl && mkdir -p .whl  # only this run's wheels: the install takes every one
exclude=$(git rev-parse --git-path info/exclude)  # a worktree's .git is a file naming the real one
mkdir -p "$(dirname "$exclude")"
for ignored in /.whl/ /.site/; do grep -qx "$ignored" "$exclude" 2>/dev/null || echo "$ignored" >> "$exclude"; done
echo "fetching: $versions"
# shellcheck disable=SC2086
"$python" -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl $versions
# Together they pass what one transfer to the GPU machine carries (64 MiB with the checkout):
# parts of at most 60 MB, largest wheels first, each carried and installed in its own call.
"$python" - <<'PY'
import os

wheels = sorted((os.path.getsize(os.path.join(".whl", w)), w) for w in os.listdir(".whl") if w.endswith(".whl"))
parts: list[list] = []
for size, wheel in reversed(wheels):
    part = next((p for p in parts if sum(s for s, _ in p) + size <= 60_000_000), None)
    if part is None:
        part = []
        parts.append(part)
    part.append((size, wheel))
for n, part in enumerate(parts, 1):
    os.makedirs(f".whl/{n}")
    for _, wheel in part:
        os.rename(f".whl/{wheel}", f".whl/{n}/{wheel}")
    print(f".whl/{n}: {len(part)} wheels, {sum(s for s, _ in part) / 1e6:.1f} MB")
PY
echo "on the GPU machine, in the checkout, one call for each part (carry .whl/N; .site stays between calls):"
echo "  python3 -m pip install -q --no-index --no-deps --target .site .whl/N/*.whl"
echo "then:"
echo "  PYTHONPATH=.site:src PYTHONUNBUFFERED=1 python3 bench/gpu.py --shape 7b${quick:+ --quick}"
