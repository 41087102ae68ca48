# shellcheck shell=bash
# Sourced by the slurm/*.sbatch scripts, from the checkout ($REPO/slurm/preemptible.sh: sbatch runs a copy of
# the script from Slurm's spool directory, so the scripts cannot find this file next to themselves).
#
#   require_slurm NAME HINT       exit 2 with a clear message outside a Slurm job
#   say TEXT...                   a stamped line of the job's output
#   run_forwarding_signal CMD...  run CMD in the background; on SIG$PREEMPT_SIGNAL (Slurm's --signal=B:...,
#                                 which reaches only this batch shell) send it to every step of the job with
#                                 scancel (srun steps do not get B: signals); return CMD's exit status
#                                 (3: the training saved and requeued the job, docs/slurm.md)

require_slurm() {
  if [ -z "${SLURM_JOB_ID:-}" ]; then
    echo "$1: not inside a Slurm job (no SLURM_JOB_ID): submit it with sbatch${2:+, or $2}" >&2
    exit 2
  fi
}

say() {
  echo "[${SCRIPT_NAME:-sbatch} $(date '+%F %T')] $*"
}

run_forwarding_signal() {
  "$@" &
  local step=$! status=0
  # shellcheck disable=SC2064  # expand the signal name now
  trap "say 'SIG$PREEMPT_SIGNAL: forwarding it to the training tasks'; scancel --signal=$PREEMPT_SIGNAL $SLURM_JOB_ID" \
    "$PREEMPT_SIGNAL"
  while true; do
    wait "$step" && status=0 || status=$?
    kill -0 "$step" 2>/dev/null || break  # wait returns early when the trap runs; the step goes on
  done
  trap - "$PREEMPT_SIGNAL"
  return "$status"
}
