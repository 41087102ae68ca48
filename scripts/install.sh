#!/usr/bin/env bash
# Idempotent installer used by the README commands, the pipelines' wrappers and scripts/test.sh.
#
#   bash scripts/install.sh                          # the plugin + translation (no extras)
#   bash scripts/install.sh --extras pretrain,glue   # + extras: pretrain corpus glue hf (dev)
#   bash scripts/install.sh --dev                    # every extra + the test/lint tools (= --extras dev)
#
# The same as 'pip install -e ".[EXTRAS]"' after torch and the fairseq fork (docs/installation.md), but:
# * Python: CPython 3.11 or 3.12 on x86-64 Linux only (the fork has wheels for nothing else): others are
#   refused with one line (exit 2).
# * torch: never replaced. An importable torch at or above requirements.txt's floor (e.g. your cluster's
#   CUDA build) is kept as is; an older one stops the installer with one line. Without torch: where
#   nvidia-smi sees NVIDIA GPUs, the CUDA build torch==2.13.0 (PyPI's Linux wheel, or the index in
#   MACARON_TORCH_CUDA_INDEX), or one line naming the command if that fails — never the CPU build in its
#   place; elsewhere the CPU build torch==${MACARON_TORCH_VERSION:-2.13.0+cpu} (from the PyTorch CPU index
#   if the configured ones lack it). Every later pip call is constrained to the torch that is installed, so
#   no dependency can swap it for another build.
# * fairseq: ve-fairseq==0.12.3 (upstream main + the Python 3.11 fix, prebuilt wheels) with --no-deps:
#   PyPI's fairseq does not import on 3.11, and the fork's declared pins need torchaudio (another torch).
#   Its real runtime dependencies are in requirements.txt.
# * --user-dir macaron_fairseq resolves from any directory: fairseq looks for it next to its own package,
#   where the editable install gets a link (scripts/user_dir_link.py; pip uninstall removes it).
# * Dependencies: requirements.txt and requirements-X.txt per extra X (what pyproject.toml declares);
#   only the unsatisfied ones go to pip, so a provisioned machine never calls pip's resolver.
# * Versions: every pip call but torch's is constrained by the lock constraints.txt (-c: the versions the
#   tests ran with, torch's excepted; python scripts/lock.py --write regenerates it), the fork's included.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
FAIRSEQ_DIST="ve-fairseq"
LOCK="$here/constraints.txt"  # the lock: every version but torch's (scripts/lock.py)
TORCH_VERSION="${MACARON_TORCH_VERSION:-2.13.0+cpu}"
TORCH_CPU_INDEX="https://download.pytorch.org/whl/cpu"
SUPPORTED="CPython 3.11 or 3.12 on x86-64 Linux"
usage_error() { echo "install.sh: $* (try --help)" >&2; exit 2; }
extras=()
add_extras() { local list; IFS=',' read -r -a list <<< "$1"; extras+=("${list[@]}"); }
while [ "$#" -gt 0 ]; do
  case "$1" in
    --dev) extras+=(dev) ;;
    --extras) [ "$#" -ge 2 ] || usage_error "--extras needs a list, e.g. --extras pretrain,glue"
              add_extras "$2"; shift ;;
    --extras=*) add_extras "${1#--extras=}" ;;
    -h|--help) sed -n '2,27p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) usage_error "unknown option '$1'" ;;
  esac
  shift
done
say() { echo "[install] $*"; }
pip_install() { PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --disable-pip-version-check -q "$@"; }
# every pip install but torch's is constrained by the lock (torch's: the build for this machine, from an index
# that may hold no other package)
pipi() { pip_install -c "$LOCK" "$@"; }

# 0. the interpreter: the fairseq fork ships wheels for CPython 3.11/3.12 on x86-64 Linux only
found="$("$PY" -c 'import platform as p
print(" ".join([p.python_implementation(), p.python_version(), p.system(), p.machine()]))' 2>/dev/null </dev/null || true)"
case "$found" in
  "CPython 3.11."*" Linux x86_64" | "CPython 3.12."*" Linux x86_64") ;;
  "") echo "[install] cannot run Python '$PY'; supported: $SUPPORTED (set PYTHON=...)" >&2; exit 2 ;;
  *) echo "[install] unsupported Python: found $found ($PY); supported: $SUPPORTED (the fairseq fork" \
       "$FAIRSEQ_DIST ships wheels only for those)" >&2; exit 2 ;;
esac

# the lock (and the fairseq fork's version in it)
[ -r "$LOCK" ] || { echo "[install] the lock $LOCK is missing or unreadable (python scripts/lock.py" \
  "--write makes it from an environment the tests passed in)" >&2; exit 2; }
FAIRSEQ_VERSION="$(sed -n "s/^$FAIRSEQ_DIST==\([^[:space:]#]*\).*/\1/p" "$LOCK" | head -n 1)"
[ -n "$FAIRSEQ_VERSION" ] || { echo "[install] the lock $LOCK pins no $FAIRSEQ_DIST version" >&2; exit 2; }

# the requirements files of the extras asked for (dev: every extra + the tools)
reqs=("$here/requirements.txt")
for extra in ${extras[@]+"${extras[@]}"}; do
  if [ "$extra" = dev ]; then
    reqs+=("$here/requirements-dev.txt")
    for file in "$here"/requirements-*.txt; do
      [ -e "$file" ] && [ "$file" != "$here/requirements-dev.txt" ] && reqs+=("$file")
    done
  elif [[ "$extra" =~ ^[a-z0-9]+$ ]] && [ -e "$here/requirements-$extra.txt" ]; then
    reqs+=("$here/requirements-$extra.txt")
  else
    known="$(cd "$here" && ls requirements-*.txt 2>/dev/null | sed 's/^requirements-//; s/\.txt$//' | tr '\n' ' ')"
    usage_error "unknown extra '$extra' (extras: ${known% })"
  fi
done
mapfile -t reqs < <(printf '%s\n' "${reqs[@]}" | awk '!seen[$0]++')  # each file once

# 1. the installer's own helper dependency (a bare virtualenv has no 'packaging')
"$PY" -c 'import packaging.requirements, packaging.version' 2>/dev/null || { say "installing packaging"; pipi packaging; }

# 2. torch: never replaced; without one, the build for this machine's hardware
# the floor is requirements.txt's 'torch>=X' line (the one place it is written)
torch_floor="$(sed -n 's/^torch[[:space:]]*>=[[:space:]]*\([0-9][0-9.]*\).*/\1/p' "$here/requirements.txt" | head -n 1)"
torch_floor="${torch_floor:-0}"
# one interpreter answers for torch and for step 4's fork (importing fairseq imports torch: on a provisioned
# machine torch is imported once, not twice); step 4 asks again if anything was installed in between
probe() {
  "$PY" -W ignore - "$FAIRSEQ_DIST" "$FAIRSEQ_VERSION" 2>/dev/null <<'PYEOF' || true
import contextlib
import io
import sys
from importlib.metadata import PackageNotFoundError, version

try:
    import torch
except Exception:
    print("\nno")  # no torch: no version, and the fork cannot import
    sys.exit()
print(torch.__version__, flush=True)  # first: an interpreter that dies importing fairseq still tells torch's
try:
    ok = version(sys.argv[1]) == sys.argv[2]
except PackageNotFoundError:
    ok = False
if ok:
    try:
        # with deepspeed installed, importing fairseq prints DeepSpeed's accelerator notice on stdout
        with contextlib.redirect_stdout(io.StringIO()):
            import fairseq  # noqa: F401
    except Exception:
        ok = False
print("yes" if ok else "no")
PYEOF
}
probed="$(probe)"
torch_version="$(sed -n 1p <<< "$probed")"
fs_ok="$(sed -n 2p <<< "$probed")"
installed_since_probe=no
if [ -n "$torch_version" ]; then
  if ! "$PY" -c "
import sys; from packaging.version import Version
sys.exit(0 if Version('$torch_version'.split('+')[0]).release >= Version('$torch_floor').release else 1)" 2>/dev/null; then
    echo "[install] torch $torch_version is older than this project's floor torch>=$torch_floor" \
      "(requirements.txt); the installer never replaces a torch: upgrade it yourself (your cluster's" \
      "module, or $PY -m pip install 'torch>=$torch_floor' from the index of your CUDA build)" >&2
    exit 2
  fi
  say "torch $torch_version present: kept"
else
  gpus=0
  if command -v nvidia-smi >/dev/null 2>&1; then
    gpus="$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)"
  fi
  if [ "${gpus:-0}" -gt 0 ]; then
    # NVIDIA GPUs: the CUDA build (PyPI's Linux torch wheel is a CUDA build; MACARON_TORCH_CUDA_INDEX picks
    # another index, e.g. https://download.pytorch.org/whl/cu126)
    cuda_version="${TORCH_VERSION%+cpu}"
    cuda_index=(); [ -n "${MACARON_TORCH_CUDA_INDEX:-}" ] && cuda_index=(--index-url "$MACARON_TORCH_CUDA_INDEX")
    say "no torch; nvidia-smi sees $gpus GPU(s): installing the CUDA build torch==$cuda_version" \
      "${MACARON_TORCH_CUDA_INDEX:+from $MACARON_TORCH_CUDA_INDEX}"
    if ! pip_install ${cuda_index[@]+"${cuda_index[@]}"} "torch==$cuda_version" \
        || ! "$PY" -W ignore -c 'import sys, torch; sys.exit(0 if torch.version.cuda else 1)' 2>/dev/null; then
      echo "[install] could not install a CUDA build of torch for the $gpus GPU(s) nvidia-smi sees (never the" \
        "CPU build in its place): install it yourself, e.g. $PY -m pip install torch==$cuda_version" \
        "--index-url https://download.pytorch.org/whl/cu126 (MACARON_TORCH_CUDA_INDEX=... for this" \
        "installer), then rerun" >&2
      exit 2
    fi
  else
    say "no torch, no NVIDIA GPU (nvidia-smi): installing the CPU build torch==$TORCH_VERSION"
    if ! pip_install "torch==$TORCH_VERSION"; then
      # a +cpu build is not on PyPI: the PyTorch CPU index has it (and only CPU builds)
      [[ "$TORCH_VERSION" == *+cpu ]] || exit 1
      say "torch==$TORCH_VERSION is not on the configured indexes: trying $TORCH_CPU_INDEX"
      pip_install --index-url "$TORCH_CPU_INDEX" "torch==$TORCH_VERSION"
    fi
  fi
  torch_version="$("$PY" -W ignore -c 'import torch; print(torch.__version__)')"
  installed_since_probe=yes
fi
constraints="$(mktemp)"; trap 'rm -f "$constraints"' EXIT
echo "torch==${torch_version}" > "$constraints"

# 3. requirements (only the unsatisfied ones go to pip)
missing_list="$("$PY" "$here/scripts/missing_requirements.py" "${reqs[@]}")" \
  || { echo "[install] could not check the requirements in ${reqs[*]} (the error is above)" >&2; exit 1; }
missing=()
[ -n "$missing_list" ] && mapfile -t missing <<< "$missing_list"
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing: ${missing[*]}"
  pipi -c "$constraints" "${missing[@]}"
  installed_since_probe=yes
else
  say "requirements satisfied"
fi

# 4. fairseq fork, without its declared deps
[ "$installed_since_probe" = no ] || fs_ok="$(probe | sed -n 2p)"
if [ "$fs_ok" = yes ]; then
  say "$FAIRSEQ_DIST $FAIRSEQ_VERSION present"
else
  if "$PY" -m pip show -q fairseq >/dev/null 2>&1; then
    say "removing the PyPI 'fairseq' distribution (does not import on Python >= 3.11; replaced by $FAIRSEQ_DIST)"
    "$PY" -m pip uninstall -y -q fairseq
  fi
  say "installing $FAIRSEQ_DIST==$FAIRSEQ_VERSION (--no-deps)"
  pipi --no-deps "$FAIRSEQ_DIST==$FAIRSEQ_VERSION"
fi

# 5. this package (editable), without touching dependencies (step 3 installed them)
# Asked from / (not from this checkout, where the packages would be found in the current directory): every
# top-level package of pyproject.toml must resolve to this checkout's folder (found without importing it,
# which would import fairseq) -- an editable install of another clone, or of a clone since moved, is
# replaced (macaron_fairseq alone would not tell: step 6's link finds it here whatever the install maps).
# An install from here whose console scripts are not pyproject.toml's (installed before they were added or
# renamed) is refreshed too, and so is one this environment merely sees (a virtualenv made with
# --system-site-packages over an install of this checkout gets its own: its console scripts, its link)
install_ok="$(cd / && "$PY" - "$here/pyproject.toml" 2>/dev/null <<'PYEOF'
import importlib.util
import os
import sys
import tomllib
from importlib.metadata import PackageNotFoundError, distribution

with open(sys.argv[1], "rb") as f:
    project = tomllib.load(f)
here = os.path.dirname(os.path.realpath(sys.argv[1]))
tool = project["tool"]["setuptools"]
folders = tool.get("package-dir", {})
for name in sorted({package.split(".")[0] for package in tool["packages"]}):
    spec = importlib.util.find_spec(name)
    found = os.path.dirname(os.path.realpath(spec.origin)) if spec and spec.origin else None
    if found != os.path.join(here, folders.get(name, name)):
        print(f"no: {name} is {found}")
        sys.exit()
try:
    dist = distribution("macaron-fairseq")
    installed = {ep.name for ep in dist.entry_points if ep.group == "console_scripts"}
    info = os.path.realpath(str(getattr(dist, "_path", "")))
    own = info.startswith(os.path.realpath(sys.prefix) + os.sep)
except PackageNotFoundError:
    installed, own = set(), False
declared = set(project["project"].get("scripts", {}))
print("yes" if own and installed == declared else "no: console scripts or dist-info")
PYEOF
)" || install_ok=no
if [ "$install_ok" = yes ]; then
  say "macaron_fairseq installed from $here"
else
  # --no-build-isolation (the build would otherwise fetch a build environment): needs setuptools >= 77
  "$PY" -c "
import sys; from importlib.metadata import version; from packaging.version import Version
sys.exit(0 if Version(version('setuptools')) >= Version('77') else 1)" 2>/dev/null \
    || { say "installing setuptools>=77 (to build this package)"; pipi -c "$constraints" "setuptools>=77"; }
  say "installing macaron_fairseq (editable) from $here"
  pipi --no-deps --no-build-isolation -e "$here"
fi

# 6. '--user-dir macaron_fairseq' from any directory: fairseq looks for it next to its own package, where an
# editable install leaves nothing (a link, recorded so that pip uninstall removes it; scripts/user_dir_link.py)
# (when it cannot be made, the one line on stderr says so and gives the path to type; the install stands)
(cd / && "$PY" "$here/scripts/user_dir_link.py" "$here/macaron_fairseq" | sed 's/^/[install] /') || true
say "done (torch $torch_version)"
