#!/usr/bin/env bash
# End-to-end check of the SLURM workflow profile on a throw-away single-node
# SLURM cluster (see up.sh / down.sh next to this file).  Needs root.
#
# Usage:
#   bash .ci/slurm/test_slurm.sh WORKFLOW_DIR [SNAKEMAKE_ARG...] [-- TARGET...]
#
#   WORKFLOW_DIR    directory snakemake is normally run from (contains
#                   workflow/Snakefile or Snakefile); it is COPIED twice, to
#                   $SLURM_CI_WORK/A and $SLURM_CI_WORK/B, the original is
#                   never written to.
#   SNAKEMAKE_ARG   passed unchanged to both runs (e.g. --config preset=smoke).
#   --              everything after it is a target (rule name or file).  The
#                   separator is needed because options such as --config take
#                   any number of values and would swallow the targets.
#
#   Example (from the repo root, e.g. in .ci/run):
#     bash .ci/slurm/test_slurm.sh . --config preset=smoke -- c3 c1
#
# Phases (each one timed; summary printed at the end, also on failure):
#   up       bash up.sh (installs slurm-wlm/munge if needed, starts daemons)
#   slurm    in copy A: snakemake --workflow-profile <profile> [ARGS] [TARGETS]
#            plus --cores <node CPUs> (caps the size of group jobs to what
#            the node can run) and a short first status check; global timeout
#   local    in copy B: snakemake --workflow-profile none --cores 2 [ARGS] [TARGETS]
#   jobs     every rule job of run A went through sbatch: each
#            .snakemake/slurm_logs/**/<jobid>.log is a SLURM job id that the
#            main log reports as submitted, the jobs' --target-jobs cover every
#            executed job (except SLURM_CI_LOCAL_RULES), no SLURM job ended
#            in a state other than COMPLETED, and A and B ran the same
#            jobs per rule
#   compare  the files listed by SLURM_CI_COMPARE / SLURM_CI_COMPARE_FILE are
#            byte-identical between A and B (images are skipped)
#   down     bash down.sh (always, via trap, also on failure / Ctrl-C)
# Exit status: 0 on success, non-zero on any failure (daemon logs and the tail
# of the snakemake logs are printed on failure).
#
# Environment (all optional):
#   SLURM_CI_COMPARE       whitespace-separated globs, relative to the
#                          workflow dir (bash globstar: results/**/*.csv)
#   SLURM_CI_COMPARE_FILE  file with one glob per line (# comments allowed)
#                          Default if neither is set: every *.csv *.json *.npz
#                          that run B created (outside .snakemake/).
#                          A glob matching nothing in B is an error.
#   SLURM_CI_LOCAL_RULES   rules allowed to run outside SLURM (default: all)
#   SLURM_CI_PROFILE       profile dir (default: <copy>/workflow/profiles/slurm
#                          if present, else this repo's workflow/profiles/slurm)
#   SLURM_CI_TIMEOUT       seconds for the SLURM run (default 1800)
#   SLURM_CI_LOCAL_TIMEOUT seconds for the local run (default 1800)
#   SLURM_CI_LOCAL_CORES   --cores of the local run (default 2)
#   SLURM_CI_CORES         --cores of the SLURM run (default: node CPUs)
#   SLURM_CI_STATUS_INIT   --slurm-init-seconds-before-status-checks (default 2)
#   SLURM_CI_SLURM_ARGS    extra args for the SLURM run only
#   SLURM_CI_WORK          work dir (default /tmp/slurm-ci-work; wiped first)
#   SLURM_CI_COPY_EXCLUDE  top-level/relative paths not copied
#                          (default ".git .venv .snakemake results")
#   SLURM_CI_STUCK_S       fail if a job stays pending for an unsatisfiable
#                          reason (PartitionConfig, ...) this long (default 30)
#   SLURM_CI_VENV          venv whose bin/ is put first on PATH (default:
#                          <repo>/.venv if it exists); jobs inherit PATH
#   plus the knobs of up.sh (SLURM_TEST_DIR, SLURM_CI_CPUS, ...).
set -euo pipefail
shopt -s globstar nullglob

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }
[ $# -ge 1 ] || usage
case "$1" in -h|--help) usage ;; esac
SRC="$(cd "$1" && pwd)" || { echo "no such dir: $1" >&2; exit 2; }
shift
SMK_ARGS=(); TARGETS=(); seen_sep=0
for a in "$@"; do
  if [ "$seen_sep" = 0 ] && [ "$a" = "--" ]; then seen_sep=1; continue; fi
  if [ "$seen_sep" = 0 ]; then SMK_ARGS+=("$a"); else TARGETS+=("$a"); fi
done

export SLURM_TEST_DIR="${SLURM_TEST_DIR:-/tmp/slurm-ci}"
WORK="${SLURM_CI_WORK:-/tmp/slurm-ci-work}"
T_SLURM="${SLURM_CI_TIMEOUT:-1800}"
T_LOCAL="${SLURM_CI_LOCAL_TIMEOUT:-1800}"
LOCAL_CORES="${SLURM_CI_LOCAL_CORES:-2}"
STATUS_INIT="${SLURM_CI_STATUS_INIT:-2}"
LOCAL_RULES="${SLURM_CI_LOCAL_RULES:-all}"
EXCLUDES="${SLURM_CI_COPY_EXCLUDE:-.git .venv .snakemake results}"
STUCK_S="${SLURM_CI_STUCK_S:-30}"
VENV="${SLURM_CI_VENV:-$REPO/.venv}"
if [ -x "$VENV/bin/python" ]; then
  export VIRTUAL_ENV="$VENV"
  export PATH="$VENV/bin:$PATH"   # sbatch --export=ALL hands it to the jobs
fi
command -v snakemake >/dev/null || { echo "snakemake not on PATH (set SLURM_CI_VENV)" >&2; exit 2; }
python -c "import snakemake_executor_plugin_slurm" 2>/dev/null || {
  echo "the SLURM executor plugin is not installed: it is the optional extra \`slurm\`" \
       "(pip install -e \".[slurm]\", or \`make slurm\`; .ci/slurm_smoke.sh installs it itself)" >&2; exit 2; }

log() { echo "[test_slurm $(date +%T)] $*" >&2; }
now() { date +%s.%N; }
PHASES=()
phase_start() { PHASE="$1"; PHASE_T0="$(now)"; log "=== phase $PHASE ==="; }
phase_end() {
  local d; d="$(awk -v a="$PHASE_T0" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')"
  PHASES+=("$(printf '%-8s %8ss  %s' "$PHASE" "$d" "$1")")
  log "=== phase $PHASE: $1 (${d}s) ==="
  PHASE=""
}
print_summary() {
  echo "---------------- test_slurm phase summary ----------------" >&2
  for p in "${PHASES[@]}"; do echo "  $p" >&2; done
  [ -z "${PHASE:-}" ] || echo "  $(printf '%-8s %8s   %s' "$PHASE" "-" "FAILED/INTERRUPTED")" >&2
}

SMK_PID=""
FAILED_MSG=""
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  set +e
  if [ -n "$SMK_PID" ] && kill -0 "$SMK_PID" 2>/dev/null; then
    log "stopping snakemake (pid $SMK_PID)"
    kill -TERM "$SMK_PID" 2>/dev/null   # timeout(1) forwards it to snakemake
    for _ in $(seq 1 30); do kill -0 "$SMK_PID" 2>/dev/null || break; sleep 0.5; done
    if kill -0 "$SMK_PID" 2>/dev/null; then
      log "snakemake still running after 15s: SIGKILL"
      kill -KILL $(ps -o pid= --ppid "$SMK_PID") "$SMK_PID" 2>/dev/null
    fi
    wait "$SMK_PID" 2>/dev/null
  fi
  if [ "$rc" != 0 ]; then
    [ -z "$FAILED_MSG" ] || log "FAILED: $FAILED_MSG"
    for f in "$SLURM_TEST_DIR"/log/*.log "$SLURM_TEST_DIR"/log/*.out; do
      [ -s "$f" ] || continue
      echo "----- daemon log $f (last 40 lines) -----" >&2; tail -n 40 "$f" >&2
    done
    for d in A B; do
      [ -f "$WORK/$d.snakemake.out" ] || continue
      echo "----- snakemake output of run $d (last 60 lines) -----" >&2
      tail -n 60 "$WORK/$d.snakemake.out" >&2
    done
    if [ -d "$WORK/A/.snakemake/slurm_logs" ]; then
      for f in "$WORK"/A/.snakemake/slurm_logs/**/*.log; do
        grep -qiE 'error|exception|traceback' "$f" || continue
        echo "----- SLURM job log $f (last 30 lines) -----" >&2; tail -n 30 "$f" >&2
      done
    fi
  fi
  [ -z "${PHASE:-}" ] || PHASES+=("$(printf '%-8s %8s   %s' "$PHASE" "-" "FAILED/INTERRUPTED")")
  PHASE=""
  local t0; t0="$(now)"
  bash "$HERE/down.sh" || rc=1
  PHASES+=("$(printf '%-8s %8ss  %s' down "$(awk -v a="$t0" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}')" "daemons stopped")")
  print_summary
  if [ "$rc" = 0 ]; then log "OK"; else log "FAILED (exit $rc)"; fi
  exit "$rc"
}
trap cleanup EXIT
trap 'FAILED_MSG="interrupted"; exit 130' INT
trap 'FAILED_MSG="terminated"; exit 143' TERM
die() { FAILED_MSG="$*"; exit 1; }

# copy_tree DEST: copy $SRC without the excluded paths
copy_tree() {
  local dest="$1" ex=()
  for e in $EXCLUDES; do ex+=("--exclude=./$e"); done
  mkdir -p "$dest"
  (cd "$SRC" && tar -cf - "${ex[@]}" .) | (cd "$dest" && tar -xf -)
}

# run_smk NAME TIMEOUT ARGS... : run snakemake in $WORK/NAME in the
# background (so traps fire at once), watch for stuck SLURM jobs, return rc.
run_smk() {
  local name="$1" t="$2"; shift 2
  log "run $name: (cd $WORK/$name && timeout $t snakemake $*)"
  ( cd "$WORK/$name" && exec timeout --kill-after=30 "$t" snakemake "$@" ) \
    >"$WORK/$name.snakemake.out" 2>&1 &
  SMK_PID=$!
  local stuck_since="" rc=0
  while kill -0 "$SMK_PID" 2>/dev/null; do
    sleep 2
    [ "$name" = A ] || continue
    # jobs the scheduler can never start would hang the run until the timeout
    local bad
    bad="$(timeout 5 squeue -h -t PD -o '%i %r' 2>/dev/null \
      | grep -E ' (PartitionConfig|BadConstraints|PartitionNodeLimit|PartitionTimeLimit|ReqNodeNotAvail|InvalidAccount|InvalidQOS|Nodes_required_for_job_are_DOWN)' || true)"
    if [ -n "$bad" ]; then
      stuck_since="${stuck_since:-$(date +%s)}"
      if [ $(( $(date +%s) - stuck_since )) -ge "$STUCK_S" ]; then
        for j in $(awk '{print $1}' <<<"$bad"); do timeout 5 scontrol show job "$j" >&2; done
        timeout 5 scontrol show node >&2 || true
        die "SLURM job(s) pending for an unsatisfiable reason for ${STUCK_S}s: $(tr '\n' ';' <<<"$bad") (more CPUs/memory/time requested than the CI node has? see SLURM_CI_CPUS / --set-resources / --set-threads)"
      fi
    else
      stuck_since=""
    fi
  done
  wait "$SMK_PID" || rc=$?
  SMK_PID=""
  return "$rc"
}

# ------------------------------------------------------------------ up ------
phase_start up
bash "$HERE/up.sh" || die "up.sh failed"
# shellcheck disable=SC1091
source "$SLURM_TEST_DIR/env"
NODE_CPUS="$(timeout 5 sinfo -h -n "$SLURM_CI_NODE" -o %c | head -n1)"
phase_end "node $SLURM_CI_NODE up, $NODE_CPUS CPUs"

# ---------------------------------------------------------------- copies ----
rm -rf "$WORK"; mkdir -p "$WORK"
copy_tree "$WORK/A"; copy_tree "$WORK/B"
PROFILE="${SLURM_CI_PROFILE:-}"
if [ -z "$PROFILE" ]; then
  if [ -d "$WORK/A/workflow/profiles/slurm" ]; then PROFILE="workflow/profiles/slurm"
  else PROFILE="$REPO/workflow/profiles/slurm"; fi
fi
log "workflow $SRC copied to $WORK/{A,B}; profile: $PROFILE"
log "snakemake: $(command -v snakemake) ($(snakemake --version)); python: $(command -v python)"

# ---------------------------------------------------------------- slurm -----
phase_start slurm
read -r -a EXTRA <<<"${SLURM_CI_SLURM_ARGS:-}"
# targets go first: options like --config take every following word
rc=0
run_smk A "$T_SLURM" "${TARGETS[@]}" --workflow-profile "$PROFILE" \
  --cores "${SLURM_CI_CORES:-$NODE_CPUS}" \
  --slurm-init-seconds-before-status-checks "$STATUS_INIT" \
  --slurm-keep-successful-logs "${EXTRA[@]}" "${SMK_ARGS[@]}" || rc=$?
[ "$rc" = 0 ] || die "snakemake via SLURM failed (exit $rc$([ "$rc" = 124 ] && echo ", timeout ${T_SLURM}s")); output in $WORK/A.snakemake.out"
phase_end "snakemake via SLURM ok"

# ---------------------------------------------------------------- local -----
phase_start local
touch "$WORK/B.stamp"; sleep 1   # outputs of run B are newer than this
rc=0
run_smk B "$T_LOCAL" "${TARGETS[@]}" --workflow-profile none --cores "$LOCAL_CORES" \
  "${SMK_ARGS[@]}" || rc=$?
[ "$rc" = 0 ] || die "local snakemake failed (exit $rc); output in $WORK/B.snakemake.out"
phase_end "local snakemake ok"

# ----------------------------------------------------------------- jobs -----
phase_start jobs
main_log() { ls -t "$1"/.snakemake/log/*.snakemake.log 2>/dev/null | head -n1; }
LOG_A="$(main_log "$WORK/A")"; LOG_B="$(main_log "$WORK/B")"
[ -n "$LOG_A" ] && [ -n "$LOG_B" ] || die "snakemake main log missing"
mapfile -t SLURM_LOGS < <(find "$WORK/A/.snakemake/slurm_logs" -type f -name '*.log' 2>/dev/null | sort)
JOBIDS=()
for f in "${SLURM_LOGS[@]}"; do
  b="$(basename "$f" .log)"; b="${b%%_*}"   # array jobs: <jobid>_<task>.log
  [[ "$b" =~ ^[0-9]+$ ]] || die "unexpected SLURM log name $f"
  JOBIDS+=("$b")
done
states=""
if [ "${#JOBIDS[@]}" -gt 0 ]; then
  states="$(timeout 10 squeue -h -t all -j "$(IFS=,; echo "${JOBIDS[*]}")" -o '%i %T' 2>/dev/null || true)"
fi
python3 - "$LOG_A" "$LOG_B" "$LOCAL_RULES" "$states" "${SLURM_LOGS[@]}" <<'PY' || die "job accounting check failed"
import collections, re, shlex, sys
log_a, log_b, local_rules, states, *slurm_logs = sys.argv[1:]
local_rules = set(local_rules.split())
fin = re.compile(r"^Finished jobid: \S+ \(Rule: ([^)]+)\)")
def finished(path):
    c = collections.Counter()
    for line in open(path, errors="replace"):
        m = fin.match(line.strip())
        if m:
            c[m.group(1)] += 1
    return c
ran_a, ran_b = finished(log_a), finished(log_b)
main = open(log_a, errors="replace").read()
submitted = set(re.findall(r"submitted with SLURM jobid (\d+)", main))
covered = collections.Counter()
ok = True
ids = []
for f in slurm_logs:
    jid = re.match(r"(\d+)", f.rsplit("/", 1)[1]).group(1)
    ids.append(jid)
    cmd = next((l for l in open(f, errors="replace") if l.strip().startswith("Command:")), None)
    if cmd is None:
        print(f"  no snakemake Command line in {f}"); ok = False; continue
    toks = shlex.split(cmd.split("Command:", 1)[1])
    if "--target-jobs" not in toks:
        print(f"  no --target-jobs in {f}"); ok = False; continue
    i = toks.index("--target-jobs") + 1
    while i < len(toks) and not toks[i].startswith("--"):
        covered[toks[i].split(":", 1)[0]] += 1
        i += 1
missing_ids = sorted(set(ids) - submitted, key=int)
unlogged = sorted(submitted - set(ids), key=int)
if missing_ids:
    print(f"  SLURM logs without a submission in the main log: {missing_ids}"); ok = False
if unlogged:
    print(f"  submitted SLURM jobs without a log under .snakemake/slurm_logs: {unlogged}"); ok = False
bad_states = [l for l in states.splitlines() if l.split()[1:] != ["COMPLETED"]]
if bad_states:
    print(f"  SLURM jobs not COMPLETED: {bad_states}"); ok = False
print(f"  SLURM jobs: {len(ids)} (ids {', '.join(sorted(ids, key=int))})")
print(f"  {'rule':30s} {'run A':>6s} {'in SLURM':>9s} {'run B':>6s}")
for r in sorted(set(ran_a) | set(ran_b) | set(covered)):
    flag = ""
    if ran_a[r] != ran_b[r]:
        flag = "  <-- A and B ran different numbers of jobs"; ok = False
    elif r in local_rules:
        flag = "  (local rule)"
    elif covered[r] != ran_a[r]:
        flag = "  <-- not every job went through SLURM"; ok = False
    print(f"  {r:30s} {ran_a[r]:6d} {covered[r]:9d} {ran_b[r]:6d}{flag}")
n_a, n_cov = sum(ran_a.values()), sum(covered.values())
print(f"  total: {n_a} jobs in run A, {n_cov} of them inside {len(ids)} SLURM jobs, {sum(ran_b.values())} in run B")
if n_cov == 0:
    print("  no job went through SLURM (outputs already present in the copy? see SLURM_CI_COPY_EXCLUDE)"); ok = False
sys.exit(0 if ok else 1)
PY
phase_end "${#JOBIDS[@]} SLURM jobs, all rule jobs accounted for"

# -------------------------------------------------------------- compare -----
phase_start compare
PATTERNS=()
if [ -n "${SLURM_CI_COMPARE_FILE:-}" ]; then
  while IFS= read -r l; do
    l="${l%%#*}"; l="$(echo "$l" | xargs)"; [ -z "$l" ] || PATTERNS+=("$l")
  done <"$SLURM_CI_COMPARE_FILE"
fi
if [ -n "${SLURM_CI_COMPARE:-}" ]; then read -r -a more <<<"$SLURM_CI_COMPARE"; PATTERNS+=("${more[@]}"); fi
FILES=()
if [ "${#PATTERNS[@]}" -gt 0 ]; then
  for p in "${PATTERNS[@]}"; do
    # shellcheck disable=SC2206
    m=( $(cd "$WORK/B" && for x in $p; do [ -f "$x" ] && echo "$x"; done) )
    [ "${#m[@]}" -gt 0 ] || die "compare pattern '$p' matches no file in run B"
    FILES+=("${m[@]}")
  done
else
  mapfile -t FILES < <(cd "$WORK/B" && find . -path ./.snakemake -prune -o -type f \
    \( -name '*.csv' -o -name '*.json' -o -name '*.npz' \) -newer "$WORK/B.stamp" -print \
    | sed 's|^\./||' | sort)
  [ "${#FILES[@]}" -gt 0 ] || die "run B created no *.csv/*.json/*.npz to compare; set SLURM_CI_COMPARE"
fi
n_same=0; n_skip=0; n_diff=0
for f in $(printf '%s\n' "${FILES[@]}" | sort -u); do
  case "${f,,}" in
    *.png|*.jpg|*.jpeg|*.gif|*.svg|*.pdf|*.eps|*.tif|*.tiff|*.webp)
      echo "  skip (image)  $f" >&2; n_skip=$((n_skip+1)); continue ;;
  esac
  if [ ! -f "$WORK/A/$f" ]; then
    echo "  MISSING in A  $f" >&2; n_diff=$((n_diff+1))
  elif cmp -s "$WORK/A/$f" "$WORK/B/$f"; then
    echo "  identical     $f" >&2; n_same=$((n_same+1))
  else
    echo "  DIFFERENT     $f" >&2; n_diff=$((n_diff+1))
    case "$f" in
      *.npz) python -c 'import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
for k in sorted(set(a.files) | set(b.files)):
    same = k in a.files and k in b.files and a[k].shape == b[k].shape and (a[k] == b[k]).all()
    print("    array", k, "equal" if same else "DIFFERS")' "$WORK/A/$f" "$WORK/B/$f" >&2 || true ;;
      *) diff "$WORK/A/$f" "$WORK/B/$f" | head -n 10 >&2 || true ;;
    esac
  fi
done
[ "$n_diff" = 0 ] || die "$n_diff output file(s) differ between SLURM run and local run"
phase_end "$n_same identical, $n_skip images skipped"
# cleanup (trap) runs down.sh and prints the summary
