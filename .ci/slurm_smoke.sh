#!/usr/bin/env bash
# CI: run the real workflow through SLURM on a throw-away single-node cluster and check it
# against a local run (called by .ci/run after `make test`; needs root and the venv of `make test`).
#
#   bash .ci/slurm_smoke.sh
#
# Runs  bash .ci/slurm/test_slurm.sh . --config preset=smoke -- c3 <second target>
# where <second target> is the first of c4, c1 that `snakemake --list-target-rules` knows,
# else `symbolic` (a note says so): new claims are picked up as soon as their target exists.
# test_slurm.sh brings the cluster up (up.sh), runs copy A through the SLURM profile and copy B
# locally, checks that every job went through sbatch and that every csv/json/npz is
# byte-identical, and tears the daemons down by PID (down.sh) on every exit path.
#
# Fails fast: every scheduler call inside test_slurm.sh/up.sh/down.sh has its own timeout, each
# snakemake run is limited to SLURM_CI_TIMEOUT / SLURM_CI_LOCAL_TIMEOUT seconds (default 420 / 300
# here), and the whole thing to SLURM_SMOKE_TIMEOUT (default 1200 s) after which it gets
# SIGTERM (its trap then stops the daemons and prints their logs).  As a last resort this
# script runs down.sh itself on exit: it only signals the PIDs that up.sh recorded.
#
# Environment: SLURM_SMOKE_TARGETS overrides the target list (e.g. "c3 c1 c4"); every
# SLURM_CI_* knob of .ci/slurm/test_slurm.sh and up.sh is passed through.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"

t_all=$(date +%s)
log() { echo "[slurm_smoke $(date +%T)] $*" >&2; }

export SLURM_TEST_DIR="${SLURM_TEST_DIR:-/tmp/slurm-ci}"
export SLURM_CI_TIMEOUT="${SLURM_CI_TIMEOUT:-420}"
export SLURM_CI_LOCAL_TIMEOUT="${SLURM_CI_LOCAL_TIMEOUT:-300}"
# the copies are a fresh clone's view: no results, figures or caches of a previous run here
export SLURM_CI_COPY_EXCLUDE="${SLURM_CI_COPY_EXCLUDE:-.git .venv .snakemake .pytest_cache results figures report.html}"
# the claims' target rules (cN: they only collect outputs) are `localrules:`, run on the submit host
export SLURM_CI_LOCAL_RULES="${SLURM_CI_LOCAL_RULES:-all c1 c2 c3 c4 c5}"
TOTAL_TIMEOUT="${SLURM_SMOKE_TIMEOUT:-1200}"
SNAKEMAKE="$REPO/.venv/bin/snakemake"
[ -x "$SNAKEMAKE" ] || { log "no $SNAKEMAKE: run \`make test\` first (it creates the venv)"; exit 2; }

on_exit() {
  local rc=$?
  # safety net: test_slurm.sh's own trap normally did this already (then it is a no-op)
  bash "$REPO/.ci/slurm/down.sh" || true
  log "total $(( $(date +%s) - t_all ))s, exit $rc"
  exit "$rc"
}
trap on_exit EXIT

# ---------------------------------------------------------------- targets --
if [ -n "${SLURM_SMOKE_TARGETS:-}" ]; then
  read -r -a TARGETS <<<"$SLURM_SMOKE_TARGETS"
else
  t0=$(date +%s)
  rules="$(timeout 120 "$SNAKEMAKE" --list-target-rules --config preset=smoke 2>&1)" \
    || { echo "$rules" >&2; log "snakemake --list-target-rules failed"; exit 1; }
  second=""
  for c in c4 c1; do
    # lines read "NAME (docstring)" or "NAME"
    if grep -Eq "^$c( |\$)" <<<"$rules"; then second="$c"; break; fi
  done
  if [ -z "$second" ]; then
    second=symbolic
    log "note: neither c4 nor c1 is a target of the workflow yet; testing c3 + symbolic instead"
  fi
  TARGETS=(c3 "$second")
  log "targets: ${TARGETS[*]} (chosen in $(( $(date +%s) - t0 ))s)"
fi

# ----------------------------------------------------------------- plugin --
# The SLURM executor plugin is the optional `slurm` extra (pyproject.toml): it probes the SLURM
# tools every time snakemake starts (`scontrol show config`, up to 10 s when no controller
# answers, i.e. on this machine once the cluster is down), so the local venv does not carry it.
# Here it goes, at the pinned versions, into a side directory that only this test puts on
# PYTHONPATH (sbatch --export=ALL hands it to the jobs): after the test, a plain snakemake from
# .venv/bin still starts without it.
PLUGIN_DIR="${SLURM_CI_PLUGIN_DIR:-$REPO/.venv/slurm-plugin}"
t0=$(date +%s)
"$REPO/.venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps \
  --target "$PLUGIN_DIR" --upgrade -c "$REPO/constraints.txt" \
  snakemake-executor-plugin-slurm snakemake-executor-plugin-slurm-jobstep \
  || { log "could not install the SLURM executor plugin into $PLUGIN_DIR"; exit 2; }
export PYTHONPATH="$PLUGIN_DIR${PYTHONPATH:+:$PYTHONPATH}"
log "SLURM executor plugin (extra \`slurm\`) in $PLUGIN_DIR ($(( $(date +%s) - t0 ))s)"

# ------------------------------------------------------------------- test --
log "bash .ci/slurm/test_slurm.sh . --config preset=smoke -- ${TARGETS[*]}  (limit ${TOTAL_TIMEOUT}s)"
rc=0
timeout --kill-after=60 "$TOTAL_TIMEOUT" \
  bash .ci/slurm/test_slurm.sh . --config preset=smoke -- "${TARGETS[@]}" || rc=$?
if [ "$rc" = 124 ]; then log "FAILED: the SLURM smoke test ran past ${TOTAL_TIMEOUT}s"; fi
[ "$rc" = 0 ] && log "SLURM smoke test passed" || log "SLURM smoke test FAILED (exit $rc)"
exit "$rc"
