#!/usr/bin/env bash
# Benchmark of jffs2-convert on a ~128 MB image, on the same machine, in one run: copying the
# file (the yardstick of a pristine conversion), conversions that copy nodes (same layout,
# summaries added, another erase size, the other byte order), and recompression on one
# thread and on all cores. Prints a Markdown table for docs/BENCHMARKS.md.
#
#   bench/convert.sh [TREE] [RUNS]      (defaults: /usr/bin, 5)
#
# The image is `mkfs.jffs2 -r TREE -e 0x20000 -n -l`. Outputs go to a tmpfs (/dev/shm) so
# that the figures are the tool's work, not the disk's; each output is checked to show the
# input's tree (jffs2-dump --list of both, compared).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
TREE=${1:-/usr/bin}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
SHM=${BENCH_SHM:-/dev/shm}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-convert --bin jffs2-dump
CONV=$PWD/target/release/jffs2-convert
DUMP=$PWD/target/release/jffs2-dump
IMG=$OUT/convert-bench.img
mkfs.jffs2 -r "$TREE" -e 0x20000 -n -l -o "$IMG"
"$DUMP" --list "$IMG" > "$OUT/convert-in.list"



echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); load before: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS (median)"
echo "Input: mkfs.jffs2 -r $TREE -e 0x20000 -n -l ($(stat -c %s "$IMG") bytes)"
echo
echo "| task | command | wall | CPU user+sys | peak RSS | output bytes | tree kept |"
echo "|---|---|---|---|---|---|---|"
read -r cw cc cr < <(time_runs "$SHM/convert-bench-out.img" cp "$IMG" "$SHM/convert-bench-out.img")
printf '| copy the file | `cp IN OUT` | %s s | %s s | %d MiB | %s | |\n' "$cw" "$cc" $((cr / 1024)) "$(stat -c %s "$IMG")"
row() {
  local label=$1; shift
  read -r w c r < <(time_runs "$SHM/convert-bench-out.img" "$CONV" --no-progress -i "$IMG" -o "$SHM/convert-bench-out.img" "$@")
  "$CONV" --no-progress -i "$IMG" -o "$SHM/convert-bench-out.img" "$@" >/dev/null 2>&1 || true
  "$DUMP" --list "$SHM/convert-bench-out.img" > "$OUT/convert-out.list" 2>/dev/null || true
  local kept=NO
  cmp -s "$OUT/convert-in.list" "$OUT/convert-out.list" && kept=yes
  printf '| %s | `jffs2-convert %s` | %s s | %s s | %d MiB | %s | %s |\n' "$label" "$*" "$w" "$c" $((r / 1024)) \
    "$(stat -c %s "$SHM/convert-bench-out.img")" "$kept"
  echo "$w" > "$OUT/convert-last.txt"
}
row "pristine, same layout" 
PRISTINE=$(cat "$OUT/convert-last.txt")
row "pristine, summaries added" --summary
row "re-blocked to 64 KiB" -e 64KiB
row "big-endian" -b
row "recompressed with LZO, 1 thread" -X lzo -x zlib --threads 1
row "recompressed with LZO, all cores" -X lzo -x zlib
row "recompressed with zlib, all cores" -m priority
echo
awk -v p="$PRISTINE" -v c="$cw" 'BEGIN {printf "pristine conversion: %.2fx the time of copying the file\n", p / c}'
rm -f "$SHM/convert-bench-out.img"
