# Sourced by the pipelines/*.sh wrappers: what each does before the pipeline's Python runs. The options and
# their environment variables are not listed here: each pipeline's option table (python -m pipelines.NAME
# --help shows every option with its [env NAME]) maps them, through `python -m pipelines.NAME --from-env`.
#
#   source "$(dirname "${BASH_SOURCE[0]}")/wrapper.sh"
#   install_unless_skipped "$@"      # scripts/install.sh, unless SKIP_INSTALL=1, --skip-install or --help
#   exec "$PY" -m pipelines.NAME --from-env "$@"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
# the checkout's packages, without changing directory (relative paths stay relative to where you are)
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"

# Runs scripts/install.sh (before any Python of the project, so that a fresh clone works) unless
# SKIP_INSTALL=1 or the arguments (before a --) hold --skip-install, -h or --help. $INSTALL_MESSAGE, if
# set, is printed first.
install_unless_skipped() {
  [ "${SKIP_INSTALL:-0}" = 1 ] && return 0
  local arg
  for arg in "$@"; do
    case "$arg" in
      --) break ;;
      --skip-install | -h | --help) return 0 ;;
    esac
  done
  [ -z "${INSTALL_MESSAGE:-}" ] || echo "$INSTALL_MESSAGE"
  bash "$here/scripts/install.sh"
}

# given FLAG ARGS...: whether ARGS (before a --) hold FLAG or FLAG=VALUE.
given() {
  local flag="$1" arg
  shift
  for arg in "$@"; do
    case "$arg" in
      --) return 1 ;;
      "$flag" | "$flag"=*) return 0 ;;
    esac
  done
  return 1
}
