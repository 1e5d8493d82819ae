#!/bin/bash
# Wall time of the whole of C1 and C2 (`snakemake --cores 2 c1 c2`) from empty results/c1 and
# results/c2, for two working copies side by side, interleaved (old, new, old, new, ...) so that a
# shared machine's load falls on both alike; not a test. The C3 tasks and trajectories of seeds
# 777 + 13 i, i < 5, of both Gaussian settings (what C2's trajectory rule of an older copy reads: at
# stop 39 the tasks alone, before it the trajectories of seed 777; from stop 40 nothing, C2e draws its
# own tasks) are built first, untimed (C3's cost is not C1's or C2's).
#
#   bash bench/bench_c1c2_claims.sh OLD_COPY NEW_COPY [ROUNDS]
#
# Each copy is a working tree with its own .venv (or a link to one); e.g. OLD_COPY a
# `git worktree add /tmp/old 54c5f67` with `ln -s $PWD/.venv /tmp/old/.venv`.
set -u
OLD=$1 NEW=$2 ROUNDS=${3:-2}
W=$(for s in isotropic anisotropic; do for seed in 777 790 803 816 829; do echo "results/c3/trajectories/${s}_s${seed}.npz"; done; done)
for d in "$OLD" "$NEW"; do
  (cd "$d" && PYTHONPATH=$PWD .venv/bin/snakemake --cores 2 $W > /dev/null 2>&1) || { echo "warm-up failed in $d"; exit 1; }
done
run() {  # copy label
  (cd "$1" && rm -rf results/c1 results/c2 figures/c1* figures/c2*
   s=$(date +%s.%N)
   PYTHONPATH=$PWD .venv/bin/snakemake --cores 2 c1 c2 > /dev/null 2>&1 || echo "$2: snakemake failed"
   e=$(date +%s.%N)
   printf '| %s | %s | %.1f | %s |\n' "$2" "$1" "$(echo "$e - $s" | bc)" "$(cut -d' ' -f1-3 /proc/loadavg)")
}
echo "| run | copy | wall s | load average after |"
echo "|---|---|---|---|"
for r in $(seq "$ROUNDS"); do run "$OLD" "old $r"; run "$NEW" "new $r"; done
