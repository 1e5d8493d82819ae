#!/usr/bin/env bash
# Bring up a throw-away single-node SLURM cluster on this machine (CI only).
#
#   bash .ci/slurm/up.sh            # then: source "$SLURM_TEST_DIR/env"
#
# - Installs slurm-wlm + munge from Debian packages if missing (apt-get update
#   once, then apt-get install -y; skipped when the binaries are present).
# - Writes $SLURM_TEST_DIR/slurm.conf (this host = controller and the single
#   compute node $SLURM_CI_NODE), state/spool/log dirs under $SLURM_TEST_DIR.
#   /etc/slurm/slurm.conf is made a symlink to it (needed: see below);
#   $SLURM_TEST_DIR/env also exports SLURM_CONF.
# - Starts munged (as user munge), slurmctld and slurmd -N $SLURM_CI_NODE by
#   hand (no systemd), records "name pid" lines in $SLURM_TEST_DIR/pids
#   (down.sh kills exactly those PIDs) and waits until the node is idle.
# - Idempotent: if the daemons recorded in the pids file are alive and the node
#   answers, it does nothing; stale state is torn down first.
#
# Environment knobs (all optional):
#   SLURM_TEST_DIR   state dir            (default /tmp/slurm-ci)
#   SLURM_CI_NODE    node name            (default ci-node)
#   SLURM_CI_CLUSTER cluster name         (default snakeci)
#   SLURM_CI_CPUS    CPUs to advertise    (default: what `slurmd -C` reports;
#                    a larger value over-subscribes the cores via
#                    SlurmdParameters=config_overrides so rules with more
#                    threads than the CI box has cores can still be scheduled)
#   SLURM_CI_MEM_MB  RealMemory           (default: `slurmd -C` value minus 5%,
#                    capped at the reported value)
#   SLURM_CI_DEF_MEM_PER_CPU  DefMemPerCPU in MB (default 1024)
#   SLURM_CI_UP_TIMEOUT  seconds to wait for the node to become idle (60)
#   SLURM_CI_CTLD_PORT / SLURM_CI_SLURMD_PORT  (6817 / 6818)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export SLURM_TEST_DIR="${SLURM_TEST_DIR:-/tmp/slurm-ci}"
NODE="${SLURM_CI_NODE:-ci-node}"
CLUSTER="${SLURM_CI_CLUSTER:-snakeci}"
UP_TIMEOUT="${SLURM_CI_UP_TIMEOUT:-60}"
CTLD_PORT="${SLURM_CI_CTLD_PORT:-6817}"
SLURMD_PORT="${SLURM_CI_SLURMD_PORT:-6818}"
CONF="$SLURM_TEST_DIR/slurm.conf"
PIDS="$SLURM_TEST_DIR/pids"
LOGDIR="$SLURM_TEST_DIR/log"

log() { echo "[slurm-up $(date +%T)] $*" >&2; }

dump_logs() {
  for f in "$LOGDIR"/*.log; do
    [ -f "$f" ] || continue
    echo "----- $f (last 60 lines) -----" >&2
    tail -n 60 "$f" >&2 || true
  done
}

fail() {
  log "ERROR: $*"
  dump_logs
  exit 1
}

pid_alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

if [ "$(id -u)" != 0 ]; then
  echo "up.sh must run as root (it installs packages and starts daemons)" >&2
  exit 1
fi

# ---------------------------------------------------------------- install --
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null \
   || ! command -v sbatch >/dev/null || ! command -v munged >/dev/null; then
  log "installing slurm-wlm and munge from Debian packages"
  export DEBIAN_FRONTEND=noninteractive
  timeout 600 apt-get update -qq
  timeout 900 apt-get install -y -qq slurm-wlm munge >/dev/null
else
  log "slurm-wlm and munge already installed; skipping apt-get"
fi

# ------------------------------------------------------- already running? --
if [ -f "$PIDS" ]; then
  all_alive=1
  while read -r _name pid; do pid_alive "$pid" || all_alive=0; done <"$PIDS"
  if [ "$all_alive" = 1 ] && [ -f "$CONF" ] \
     && SLURM_CONF="$CONF" timeout 5 sinfo -h -n "$NODE" -o %t 2>/dev/null \
        | grep -Eq '^(idle|mix|alloc)'; then
    log "cluster already up (pids in $PIDS); nothing to do"
    exit 0
  fi
  log "stale state in $SLURM_TEST_DIR; tearing it down first"
  bash "$HERE/down.sh" || true
fi

rm -rf "$SLURM_TEST_DIR/state" "$SLURM_TEST_DIR/spool" "$LOGDIR"
mkdir -p "$SLURM_TEST_DIR/state" "$SLURM_TEST_DIR/spool" "$LOGDIR"
chmod 755 "$SLURM_TEST_DIR"
: >"$PIDS"

# start_daemon NAME CMD... : start CMD in the background (own session, no
# controlling tty, stdio to $LOGDIR/NAME.out) and record its PID.  The command
# must exec the daemon itself (setpriv/slurmctld -D/slurmd -D do) so that $!
# is the daemon's PID.
start_daemon() {
  local name="$1"; shift
  setsid "$@" </dev/null >"$LOGDIR/$name.out" 2>&1 &
  local pid=$!
  echo "$name $pid" >>"$PIDS"
  log "started $name (pid $pid): $*"
}

# ------------------------------------------------------------------ munge --
mkdir -p /run/munge /var/lib/munge /var/log/munge /etc/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge /etc/munge
chmod 0755 /run/munge
chmod 0700 /var/lib/munge /var/log/munge /etc/munge
if [ ! -s /etc/munge/munge.key ]; then
  log "creating munge key"
  if command -v mungekey >/dev/null; then
    mungekey --create --keyfile=/etc/munge/munge.key --force
  else
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
  fi
fi
chown munge:munge /etc/munge/munge.key
chmod 0400 /etc/munge/munge.key

if timeout 5 munge -n 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; then
  log "a working munged is already running (not ours); reusing it"
else
  rm -f /run/munge/munge.socket.2 /run/munge/munge.socket.2.lock /run/munge/munged.pid
  touch "$LOGDIR/munged.log"; chown munge:munge "$LOGDIR/munged.log"
  start_daemon munged setpriv --reuid=munge --regid=munge --init-groups \
    munged --foreground --log-file="$LOGDIR/munged.log" \
    --pid-file=/run/munge/munged.pid
  ok=0
  for _ in $(seq 1 50); do
    if timeout 5 munge -n 2>/dev/null | timeout 5 unmunge >/dev/null 2>&1; then ok=1; break; fi
    sleep 0.2
  done
  [ "$ok" = 1 ] || fail "munged did not come up"
fi

# ------------------------------------------------------------- slurm.conf --
HW="$(timeout 20 slurmd -C | head -n1)" || fail "slurmd -C failed"
hwval() { sed -n "s/.*\b$1=\([0-9]*\).*/\1/p" <<<"$HW"; }
HW_CPUS="$(hwval CPUs)"; HW_MEM="$(hwval RealMemory)"
HW_SOCKETS="$(hwval SocketsPerBoard)"; HW_CORES="$(hwval CoresPerSocket)"
HW_THREADS="$(hwval ThreadsPerCore)"
[ -n "$HW_CPUS" ] && [ -n "$HW_MEM" ] || fail "cannot parse slurmd -C output: $HW"

CPUS="${SLURM_CI_CPUS:-$HW_CPUS}"
MEM="${SLURM_CI_MEM_MB:-$(( HW_MEM * 95 / 100 ))}"
[ "$MEM" -le "$HW_MEM" ] || MEM="$HW_MEM"           # never above slurmd -C
DEF_MEM="${SLURM_CI_DEF_MEM_PER_CPU:-1024}"
[ "$DEF_MEM" -le "$(( MEM / CPUS ))" ] || DEF_MEM="$(( MEM / CPUS ))"
if [ "$CPUS" = "$HW_CPUS" ]; then
  NODE_TOPO="CPUs=$CPUS Boards=1 SocketsPerBoard=$HW_SOCKETS CoresPerSocket=$HW_CORES ThreadsPerCore=$HW_THREADS"
  SLURMD_PARAMS=""
else
  NODE_TOPO="CPUs=$CPUS"
  SLURMD_PARAMS="SlurmdParameters=config_overrides"
fi
CTL_HOST="$(hostname -s)"

cat >"$CONF" <<EOF
# generated by .ci/slurm/up.sh -- single-node CI cluster
ClusterName=$CLUSTER
SlurmctldHost=$CTL_HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
DefMemPerCPU=$DEF_MEM
# the snakemake slurm plugin only trusts squeue-based status when finished
# jobs stay visible long enough
MinJobAge=300
ReturnToService=2
InactiveLimit=0
KillWait=5
SlurmctldTimeout=30
SlurmdTimeout=30
StateSaveLocation=$SLURM_TEST_DIR/state
SlurmdSpoolDir=$SLURM_TEST_DIR/spool
SlurmctldPidFile=$SLURM_TEST_DIR/slurmctld.pid
SlurmdPidFile=$SLURM_TEST_DIR/slurmd.pid
SlurmctldLogFile=$LOGDIR/slurmctld.log
SlurmdLogFile=$LOGDIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
$SLURMD_PARAMS
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$CTL_HOST $NODE_TOPO RealMemory=$MEM State=UNKNOWN
PartitionName=ci Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF

# The config must ALSO be at the default path /etc/slurm/slurm.conf: the
# snakemake slurm-jobstep plugin strips every SLURM_* variable (SLURM_CONF
# included) from the environment of the `srun` it runs inside each job, and
# that srun then only finds the default path.  A foreign file there is kept as
# slurm.conf.pre-ci (down.sh removes the link and restores it).
mkdir -p /etc/slurm
if [ -e /etc/slurm/slurm.conf ] && [ "$(readlink -f /etc/slurm/slurm.conf)" != "$(readlink -f "$CONF")" ] \
   && ! grep -q 'generated by .ci/slurm/up.sh' /etc/slurm/slurm.conf 2>/dev/null; then
  log "moving existing /etc/slurm/slurm.conf to /etc/slurm/slurm.conf.pre-ci"
  mv -f /etc/slurm/slurm.conf /etc/slurm/slurm.conf.pre-ci
fi
ln -sfn "$CONF" /etc/slurm/slurm.conf

cat >"$SLURM_TEST_DIR/env" <<EOF
export SLURM_CONF=$CONF
export SLURM_TEST_DIR=$SLURM_TEST_DIR
export SLURM_CI_NODE=$NODE
EOF
export SLURM_CONF="$CONF"
log "wrote $CONF (node $NODE: CPUs=$CPUS RealMemory=$MEM DefMemPerCPU=$DEF_MEM)"

# ---------------------------------------------------------- slurm daemons --
start_daemon slurmctld slurmctld -D -i -f "$CONF"
# wait for the controller to answer before starting slurmd
ok=0
for _ in $(seq 1 "$UP_TIMEOUT"); do
  pid_alive "$(awk '$1=="slurmctld"{print $2}' "$PIDS")" || fail "slurmctld exited"
  if timeout 5 scontrol ping 2>/dev/null | grep -q 'is UP'; then ok=1; break; fi
  sleep 1
done
[ "$ok" = 1 ] || fail "slurmctld did not answer within ${UP_TIMEOUT}s"

start_daemon slurmd slurmd -D -N "$NODE" -f "$CONF"

deadline=$(( $(date +%s) + UP_TIMEOUT ))
state=""
while :; do
  while read -r name pid; do
    pid_alive "$pid" || fail "$name (pid $pid) exited"
  done <"$PIDS"
  state="$(timeout 5 sinfo -h -n "$NODE" -o %t 2>/dev/null || true)"
  case "$state" in
    idle) break ;;
    down*|drain*|fail*)
      # e.g. left down from a previous incarnation: resume it
      timeout 5 scontrol update nodename="$NODE" state=resume >/dev/null 2>&1 || true ;;
  esac
  [ "$(date +%s)" -lt "$deadline" ] || fail "node $NODE not idle after ${UP_TIMEOUT}s (state: '${state}')"
  sleep 1
done

log "cluster up: node $NODE idle; pids: $(tr '\n' ' ' <"$PIDS")"
log "use it with: source $SLURM_TEST_DIR/env"
timeout 5 sinfo >&2 || true
