#!/usr/bin/env bash
# Stop the single-node CI SLURM cluster started by up.sh.
#
#   bash .ci/slurm/down.sh
#
# Kills exactly the PIDs recorded in $SLURM_TEST_DIR/pids (never by name),
# newest first (slurmd, slurmctld, munged): SIGTERM, wait up to
# $SLURM_CI_DOWN_TIMEOUT s (default 20), then SIGKILL.  A PID is only signalled
# if its command name still matches what up.sh started (guards against PID
# reuse).  Jobs still in the private cluster are scancel'ed first so no
# slurmstepd is left behind.  Safe to call twice (second call is a no-op).
set -uo pipefail

SLURM_TEST_DIR="${SLURM_TEST_DIR:-/tmp/slurm-ci}"
PIDS="$SLURM_TEST_DIR/pids"
DOWN_TIMEOUT="${SLURM_CI_DOWN_TIMEOUT:-20}"
log() { echo "[slurm-down $(date +%T)] $*" >&2; }

if [ ! -s "$PIDS" ]; then
  log "no pids file ($PIDS): nothing to stop"
  exit 0
fi

# Cancel whatever is left in this private cluster (ignore errors: the
# controller may already be gone).
if [ -f "$SLURM_TEST_DIR/slurm.conf" ]; then
  export SLURM_CONF="$SLURM_TEST_DIR/slurm.conf"
  if timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; then
    jobs="$(timeout 5 squeue -h -o %i 2>/dev/null | tr '\n' ' ')"
    if [ -n "${jobs// /}" ]; then
      log "cancelling leftover jobs: $jobs"
      # shellcheck disable=SC2086
      timeout 10 scancel $jobs 2>/dev/null || true
      for _ in $(seq 1 10); do
        [ -z "$(timeout 5 squeue -h -t R,CG -o %i 2>/dev/null)" ] && break
        sleep 1
      done
    fi
  fi
fi

# comm of a live pid, or empty
comm_of() { cat "/proc/$1/comm" 2>/dev/null || true; }

mapfile -t entries < <(tac "$PIDS")
for e in "${entries[@]}"; do
  read -r name pid <<<"$e"
  [ -n "${pid:-}" ] || continue
  c="$(comm_of "$pid")"
  if [ -z "$c" ]; then
    log "$name (pid $pid) already gone"
  elif [ "$c" != "$name" ]; then
    log "pid $pid is now '$c', not $name: leaving it alone"
  else
    log "stopping $name (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
  fi
done

deadline=$(( $(date +%s) + DOWN_TIMEOUT ))
for e in "${entries[@]}"; do
  read -r name pid <<<"$e"
  [ -n "${pid:-}" ] || continue
  while [ "$(comm_of "$pid")" = "$name" ]; do
    # a zombie (parent has not reaped it yet) counts as stopped
    st="$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null || true)"
    [ "$st" = Z ] && break
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "$name (pid $pid) ignored SIGTERM for ${DOWN_TIMEOUT}s: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.2
  done
done

left=""
for e in "${entries[@]}"; do
  read -r name pid <<<"$e"
  st="$(awk '/^State:/{print $2}' "/proc/$pid/status" 2>/dev/null || true)"
  if [ "$(comm_of "$pid")" = "$name" ] && [ "$st" != Z ]; then left="$left $name:$pid"; fi
done
if [ -n "$left" ]; then
  log "ERROR: still running:$left"
  exit 1
fi
mv -f "$PIDS" "$PIDS.stopped"
# Undo up.sh's /etc/slurm/slurm.conf link (restoring a config it moved aside): with the link
# left behind, every later `snakemake` start has the SLURM plugin ask a dead slurmctld
# (`scontrol show config`), which costs about 10 s.
if [ -L /etc/slurm/slurm.conf ] && [ "$(readlink -f /etc/slurm/slurm.conf)" = "$(readlink -f "$SLURM_TEST_DIR/slurm.conf")" ]; then
  rm -f /etc/slurm/slurm.conf
  [ -e /etc/slurm/slurm.conf.pre-ci ] && mv -f /etc/slurm/slurm.conf.pre-ci /etc/slurm/slurm.conf
  log "removed the /etc/slurm/slurm.conf link"
fi
log "all daemons stopped"
