#!/usr/bin/env bash
# Download the wheels the GPU check needs on a GPU machine without network (Python 3.12, manylinux x86-64):
#   bash scripts/gpu_wheels.sh [DEST [PIN ...]]      # DEST default wheels/gpu; PINs default: all of them
# The pins are pipelines/gpu_check/wheels.py's WHEELS (macaron-gpu-check --wheels): fairseq, DeepSpeed
# and their runtime dependencies, at the versions of the lock constraints.txt. Each is fetched as a binary
# wheel for cp312 (pip download --no-deps --only-binary=:all: --python-version 3.12 ...); a package published
# only as an sdist (DeepSpeed) is downloaded as source and built into a wheel here (pip wheel --no-deps
# --no-build-isolation: its build uses the installed torch, never downloads one). Carry DEST with the tree
# and on the GPU machine run the pip command gpu_check prints.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python}"
dest="${1:-$here/wheels/gpu}"
shift || true
if [ "$#" -gt 0 ]; then pins=("$@"); else mapfile -t pins < <(cd "$here" && "$PY" -m macaron_pipelines.gpu_check --wheels); fi
mkdir -p "$dest"
pip_() { PIP_ROOT_USER_ACTION=ignore "$PY" -m pip --disable-pip-version-check -q "$@"; }
for pin in "${pins[@]}"; do
  if pip_ download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 --abi abi3 \
       --abi none --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
       --platform manylinux_2_28_x86_64 --platform any -d "$dest" "$pin" 2>/dev/null; then
    echo "[gpu_wheels] $pin: wheel"
  else
    src="$(mktemp -d)"
    pip_ download --no-deps --no-binary=:all: -d "$src" "$pin" \
      || { echo "[gpu_wheels] $pin: neither a cp312 manylinux wheel nor an sdist could be downloaded" >&2; exit 1; }
    pip_ wheel --no-deps --no-build-isolation -w "$src/built" "$src"/*.* \
      || { echo "[gpu_wheels] $pin: building its wheel from the sdist failed (the error is above)" >&2; exit 1; }
    for wheel in "$src"/built/*.whl; do
      case "$wheel" in
        *-py3-none-any.whl|*-py2.py3-none-any.whl|*-cp312-*.whl) mv "$wheel" "$dest"/ ;;
        *) echo "[gpu_wheels] $pin: built $(basename "$wheel") with $("$PY" --version), not a wheel Python 3.12 can" \
                "install: rerun with PYTHON=python3.12" >&2; exit 1 ;;
      esac
    done
    rm -rf "$src"
    echo "[gpu_wheels] $pin: built from its sdist"
  fi
done
size="$(du -sm "$dest" | cut -f1)"
echo "[gpu_wheels] ${#pins[@]} package(s) in $dest (${size} MiB$([ "$size" -gt 64 ] && echo ', more than the 64 MiB that travel with the tree'))"
