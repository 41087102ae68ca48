#!/usr/bin/env bash
# Idempotent installer used by both README commands (quickstart and tests).
#
#   bash scripts/install.sh          # runtime: torch (if missing), fairseq fork, deps, this package
#   bash scripts/install.sh --dev    # + test/lint tools (pytest, ruff)
#
# * torch: an importable torch >= 2.1 (e.g. your cluster's CUDA build) is kept as is. Otherwise
#   torch==${MACARON_TORCH_VERSION:-2.13.0} is installed. Every later pip call is constrained to the
#   torch that is installed, so no dependency can swap it for another build.
# * fairseq: PyPI's fairseq 0.12.2 does not import on Python 3.11, and its declared pins need
#   torchaudio (which would pull a different torch). We install ve-fairseq==0.12.3 (upstream main +
#   the 3.11 dataclass fix, prebuilt wheels) with --no-deps, then its real runtime deps
#   (requirements.txt).
# * Everything already satisfied is skipped without calling pip's resolver.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
FAIRSEQ_DIST="ve-fairseq"
FAIRSEQ_VERSION="0.12.3"
TORCH_VERSION="${MACARON_TORCH_VERSION:-2.13.0}"
dev=0
for arg in "$@"; do
  case "$arg" in
    --dev) dev=1 ;;
    -h|--help) sed -n '2,16p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "install.sh: unknown option '$arg' (try --help)" >&2; exit 2 ;;
  esac
done
say() { echo "[install] $*"; }
pipi() { PIP_ROOT_USER_ACTION=ignore "$PY" -m pip install --disable-pip-version-check -q "$@"; }

"$PY" - <<'PYEOF' || { echo "[install] Python >= 3.10 is required (found $("$PY" --version 2>&1))" >&2; exit 1; }
import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)
PYEOF

# 0. the installer's own helper dependency (a bare virtualenv has no 'packaging')
"$PY" -c 'import packaging.requirements, packaging.version' 2>/dev/null || { say "installing packaging"; pipi packaging; }

# 1. torch
torch_version="$("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null || true)"
if [ -n "$torch_version" ] && "$PY" -c "
import sys; from packaging.version import Version
sys.exit(0 if Version('$torch_version'.split('+')[0]) >= Version('2.1') else 1)" 2>/dev/null; then
  say "torch $torch_version present: kept"
else
  say "installing torch==$TORCH_VERSION"
  pipi "torch==$TORCH_VERSION"
  torch_version="$("$PY" -c 'import torch; print(torch.__version__)')"
fi
constraints="$(mktemp)"; trap 'rm -f "$constraints"' EXIT
echo "torch==${torch_version}" > "$constraints"

# 2. requirements (only the unsatisfied ones go to pip)
reqs=("$here/requirements.txt")
[ "$dev" = 1 ] && reqs+=("$here/requirements-dev.txt")
missing_list="$("$PY" "$here/scripts/missing_requirements.py" "${reqs[@]}")" \
  || { echo "[install] could not check the requirements in ${reqs[*]} (the error is above)" >&2; exit 1; }
missing=()
[ -n "$missing_list" ] && mapfile -t missing <<< "$missing_list"
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing: ${missing[*]}"
  pipi -c "$constraints" "${missing[@]}"
else
  say "requirements satisfied"
fi

# 3. fairseq fork, without its declared deps
fs_ok="$("$PY" - "$FAIRSEQ_DIST" "$FAIRSEQ_VERSION" <<'PYEOF'
import sys
from importlib.metadata import PackageNotFoundError, version
try:
    ok = version(sys.argv[1]) == sys.argv[2]
except PackageNotFoundError:
    ok = False
if ok:
    import contextlib
    import io
    try:
        # with deepspeed installed, importing fairseq prints DeepSpeed's accelerator notice on stdout
        with contextlib.redirect_stdout(io.StringIO()):
            import fairseq  # noqa: F401
    except Exception:
        ok = False
print("yes" if ok else "no")
PYEOF
)"
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

# 4. this package (editable), without touching dependencies
# Asked from / (not from this checkout, where the package would be found in the current directory): an
# editable install of another clone must be replaced, or every test run elsewhere would import that clone.
# (find_spec: located without importing it, which would import fairseq and print whatever that prints)
pkg_dir="$(cd / && "$PY" -c 'import importlib.util as u, os; s = u.find_spec("macaron_fairseq"); print(os.path.dirname(os.path.dirname(os.path.abspath(s.origin))) if s and s.origin else "")' 2>/dev/null </dev/null || true)"
if [ "$pkg_dir" = "$here" ]; then
  say "macaron_fairseq installed from $here"
else
  say "installing macaron_fairseq (editable) from $here"
  pipi --no-deps --no-build-isolation -e "$here"
fi
say "done (torch $torch_version)"
