#!/usr/bin/env bash
# The wheels bench/gpu.py needs on a GPU machine that has CUDA torch but no network and no
# PyAV, zstandard or this transformers: fetched here, carried beside the checkout (about 53 MB,
# under 64 MiB with it), installed there with the command this prints.
# Usage: bash bench/gpu_wheels.sh [python version of the GPU machine, default 3.12]
set -euo pipefail
cd "$(dirname "$0")/.."
py=${1:-3.12}
versions=$(python3 - <<'PY'
from importlib import metadata
print(" ".join(f"{name}=={metadata.version(name)}" for name in ("av", "zstandard", "transformers")))
PY
)
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
# shellcheck disable=SC2086
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$py" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d .whl $versions
du -sh .whl
echo "on the GPU machine, in the checkout:"
echo "  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && \\"
echo "  PYTHONPATH=/tmp/site:src PYTHONUNBUFFERED=1 python3 bench/gpu.py --shape 7b"
