# shellcheck shell=bash
# Sourced by the slurm/*.sbatch scripts, from the checkout ($REPO/slurm/preemptible.sh: sbatch runs a copy of
# the script from Slurm's spool directory, so the scripts cannot find this file next to themselves).
#
#   require_slurm NAME HINT  exit 2 with a clear message outside a Slurm job
#   say TEXT...              a stamped line of the job's output
#   run_preemptible CMD...   run CMD in the background and return its exit status (3: the training saved and
#                            stopped, docs/slurm.md), handling the signals on the way (below)
#
# On SIG$PREEMPT_SIGNAL (Slurm's --signal=B:...: the time limit is near, or a preemption on a cluster with
# PreemptParameters=send_user_signal; it reaches only this batch shell):
#   * a job step is running (srun): the signal goes to its tasks with `scancel --signal` (srun steps do not get
#     B: signals); if scancel fails (slurmctld is busiest at preemption time), straight to this node's tasks
#     (`scontrol listpids` asks the local slurmd): one rank is enough, the trainers all-reduce the flag; they
#     save, rank 0 requeues the job, every rank exits 3;
#   * no job step runs (preparation, collection, export, a recipe's preprocessing, or the training not started
#     yet): the job is requeued at once; those stages resume by themselves (finished ones are skipped).
# On SIGTERM (scancel, a requeue, Slurm's own preemption on clusters that signal the batch shell too): noted;
# the tasks get it from Slurm themselves. The shell never exits on a signal: it waits for its command.
# Afterwards, when the command failed while the job still runs and was to be preempted (the signal came, or
# Slurm's PreemptTime is set) and nobody requeued it, the shell requeues it; a preempted job whose requeue
# fails waits for Slurm's kill (Slurm requeues a job it killed; one that ends by itself during the grace time
# is not requeued).
#
# Every command that runs inside a trap is guarded: `set -e` applies inside traps, and a failing scancel or
# scontrol must not end the shell before the checkpoint is saved.

require_slurm() {
  if [ -z "${SLURM_JOB_ID:-}" ]; then
    echo "$1: not inside a Slurm job (no SLURM_JOB_ID): submit it with sbatch${2:+, or $2}" >&2
    exit 2
  fi
}

say() {
  echo "[${SCRIPT_NAME:-sbatch} $(date '+%F %T')] $*"
}

_PREEMPT_RECEIVED=0
_REQUEUED=0

# the job's running steps other than the batch shell's and the extern one (a failed squeue counts as "some")
_job_steps() {
  local listing
  if ! listing="$(squeue --noheader --steps --jobs "$SLURM_JOB_ID" --format %i 2>/dev/null)"; then
    echo unknown
    return 0
  fi
  printf '%s\n' "$listing" | grep -v -E '\.(batch|extern|interactive)$' || true
}

# SIG$PREEMPT_SIGNAL to the tasks of this job's steps on this node (not to the batch shell)
_signal_local_tasks() {
  local pid job step localid rest sent=0
  while read -r pid job step localid rest; do
    case "$step" in batch | extern | STEPID | "") continue ;; esac
    if [ "$localid" != "-" ] && kill -s "$PREEMPT_SIGNAL" "$pid" 2>/dev/null; then
      sent=$((sent + 1))
    fi
  done < <(scontrol listpids "$SLURM_JOB_ID" 2>/dev/null || true)
  say "sent SIG$PREEMPT_SIGNAL to $sent task(s) on $(hostname -s)"
  [ "$sent" -gt 0 ]
}

_requeue_job() {
  local out
  if out="$(scontrol requeue "$SLURM_JOB_ID" 2>&1)"; then
    _REQUEUED=1
    say "requeued job $SLURM_JOB_ID: the restart resumes"
    return 0
  fi
  say "warning: scontrol requeue $SLURM_JOB_ID failed: ${out:-no message}"
  return 1
}

_on_preempt_signal() {
  local out
  _PREEMPT_RECEIVED=1
  if [ -z "$(_job_steps)" ]; then
    say "SIG$PREEMPT_SIGNAL: no job step runs: requeueing the job (finished stages are skipped on restart)"
    _requeue_job || true
    return 0
  fi
  say "SIG$PREEMPT_SIGNAL: forwarding it to the training tasks"
  if out="$(scancel --signal="$PREEMPT_SIGNAL" "$SLURM_JOB_ID" 2>&1)"; then
    return 0
  fi
  say "warning: scancel --signal=$PREEMPT_SIGNAL failed (${out:-no message}); signalling this node's tasks"
  if ! _signal_local_tasks; then
    say "warning: no task could be signalled: requeueing the job (it resumes from its last checkpoint)"
    _requeue_job || true
  fi
}

_on_term() {
  say "SIGTERM (scancel, requeue, or Slurm's preemption): the tasks save when they got it too; waiting"
}

# after the command failed: requeue the job if it was to be preempted and is still running (see above)
_requeue_unless_done() {
  local fields state preempt_time
  [ "$_REQUEUED" = 0 ] || return 0
  fields="$(scontrol show job --oneliner "$SLURM_JOB_ID" 2>/dev/null || true)"
  state="$(printf '%s\n' "$fields" | grep -o -E '(^| )JobState=[^ ]*' | cut -d= -f2 || true)"
  preempt_time="$(printf '%s\n' "$fields" | grep -o -E '(^| )PreemptTime=[^ ]*' | cut -d= -f2 || true)"
  [ "$state" = RUNNING ] || return 0  # requeued by the trainer already, cancelled, or timed out
  if [ "$_PREEMPT_RECEIVED" = 1 ] || { [ -n "$preempt_time" ] && [ "$preempt_time" != None ]; }; then
    say "the job was to be preempted and is not requeued yet: requeueing it"
    if ! _requeue_job && [ -n "$preempt_time" ] && [ "$preempt_time" != None ]; then
      say "preempted by Slurm: waiting for its kill (Slurm then requeues the job)"
      while true; do sleep 60 || true; done
    fi
  fi
}

run_preemptible() {
  "$@" &
  local child=$! status=0 got=0
  # shellcheck disable=SC2064  # the signal's name is expanded now
  trap "_TRAPPED=1; _on_preempt_signal || true" "$PREEMPT_SIGNAL"
  [ "$PREEMPT_SIGNAL" = TERM ] || trap "_TRAPPED=1; _on_term || true" TERM
  while true; do
    _TRAPPED=0
    wait "$child" && got=0 || got=$?
    if [ "$_TRAPPED" = 1 ] && [ "$got" -gt 128 ]; then
      # a trap cut the wait short (128 + its signal), and the command goes on, or has ended meanwhile
      kill -0 "$child" 2>/dev/null && continue
      status=$got
      wait "$child" && got=0 || got=$?  # the command's own status, still unclaimed
      [ "$got" -ne 127 ] || got=$status  # 127: already claimed, the first answer was the command's
    fi
    status=$got
    break
  done
  if [ "$status" -ne 0 ]; then
    _requeue_unless_done || true
  fi
  trap - "$PREEMPT_SIGNAL" TERM
  return "$status"
}

# the name the scripts used before (kept for users' own scripts that source this file)
run_forwarding_signal() {
  run_preemptible "$@"
}
