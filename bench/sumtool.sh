#!/usr/bin/env bash
# Side-by-side benchmark of jffs2-sumtool against mtd-utils' sumtool on the same machine, in
# one run. Prints a Markdown table.
#
#   bench/sumtool.sh [IMAGE] [RUNS]     (defaults: /tmp/usrbin.img, 5)
#
# IMAGE is made when missing with `mkfs.jffs2 -r /usr/bin -e 0x20000 -n -l` (~128 MB). Both
# tools summarise it with `-e 0x20000 -n -l`; the output goes to a tmpfs (/dev/shm, so the
# figures are the tools' work, not the disk's) and, in a second row, next to the input on
# disk (neither tool syncs its output; jffs2-sumtool writes a temporary file and renames it).
# Reported: median wall time, median user+system CPU time, peak RSS, output size, and whether
# jffs2dump finds anything "Wrong" in our output.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
IMG=${1:-/tmp/usrbin.img}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-sumtool
OURS=$PWD/target/release/jffs2-sumtool
REF=$(command -v sumtool || echo /usr/sbin/sumtool)
if [ ! -f "$IMG" ]; then
  mkfs.jffs2 -r /usr/bin -e 0x20000 -n -l -o "$IMG"
fi
SHM=${BENCH_SHM:-/dev/shm}
DISK=$(dirname "$IMG")



echo "input: $IMG ($(stat -c %s "$IMG") bytes); $RUNS runs each; load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| output on | tool | wall (median) | CPU user+sys (median) | peak RSS | output bytes | erase blocks |"
echo "|---|---|---|---|---|---|---|"
for where in "$SHM" "$DISK"; do
  for tool in ref ours; do
    out="$where/bench-sumtool-$tool.img"
    if [ $tool = ref ]; then
      r=$(time_runs "$out" "$REF" -i "$IMG" -o "$out" -e 0x20000 -n -l)
      name="mtd-utils sumtool"
    else
      r=$(time_runs "$out" "$OURS" -i "$IMG" -o "$out" -e 0x20000 -n -l)
      name="jffs2-sumtool"
    fi
    read -r wall cpu rss <<< "$r"
    size=$(stat -c %s "$out")
    printf '| %s | %s | %s s | %s s | %d MiB | %s | %s |\n' "$where" "$name" "$wall" "$cpu" \
      $((rss / 1024)) "$size" $(((size + 131071) / 131072))
  done
done
wrong=$(jffs2dump -c -l "$SHM/bench-sumtool-ours.img" | grep -c Wrong || true)
echo
echo "jffs2dump -c on our output: $wrong \"Wrong\" lines"
rm -f "$SHM"/bench-sumtool-*.img "$DISK"/bench-sumtool-*.img
