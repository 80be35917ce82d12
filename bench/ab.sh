#!/usr/bin/env bash
# Two builds of one tool, alternately, on the same arguments: whether a change made it faster,
# on a machine whose speed drifts (each run of A is followed by one of B, so the drift hits
# both alike). Prints the median wall and CPU time of each, and every run.
#
#   bench/ab.sh RUNS A B ARGS...
#
# A and B are the two binaries (copy the old one aside before rebuilding); ARGS follow each.
# With AB_CLEAN=PATH, PATH (a file or directory the tool writes) is removed before each run.
# Example, the extraction before and after a change:
#
#   cp target/release/jffs2-dump /tmp/dump-old; (change, cargo build --release)
#   AB_CLEAN=/dev/shm/x bench/ab.sh 11 /tmp/dump-old target/release/jffs2-dump \
#       --extract=/dev/shm/x bench/out/fsck-bench.img
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
RUNS=${1:?RUNS}
A=${2:?A} B=${3:?B}
shift 3
OUT=${BENCH_OUT:-bench/out}
mkdir -p "$OUT"
aw=() ac=() bw=() bc=()
for _ in $(seq "$RUNS"); do
  [ -n "${AB_CLEAN:-}" ] && rm -rf "$AB_CLEAN"
  read -r w c _ < <(time_one "$A" "$@")
  aw+=("$w"); ac+=("$c")
  [ -n "${AB_CLEAN:-}" ] && rm -rf "$AB_CLEAN"
  read -r w c _ < <(time_one "$B" "$@")
  bw+=("$w"); bc+=("$c")
done
[ -n "${AB_CLEAN:-}" ] && rm -rf "$AB_CLEAN"
echo "Machine: $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg); $RUNS alternating runs"
echo "A $A: wall $(printf '%s\n' "${aw[@]}" | median) s, CPU $(printf '%s\n' "${ac[@]}" | median) s (runs: ${aw[*]})"
echo "B $B: wall $(printf '%s\n' "${bw[@]}" | median) s, CPU $(printf '%s\n' "${bc[@]}" | median) s (runs: ${bw[*]})"
