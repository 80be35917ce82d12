#!/usr/bin/env bash
# Side-by-side benchmark of jffs2-mkfs against mtd-utils' mkfs.jffs2 on the same machine,
# in one run. Prints a Markdown table for docs/BENCHMARKS.md.
#
#   bench/mkfs.sh [TREE] [RUNS]      (defaults: /usr/bin, 5)
#
# For each case both tools build the image with identical options, the outputs are
# checked to be byte-identical, and the median wall time and the peak RSS are reported.
# The "zlib floor" is the CPU time real zlib (level 3, mkfs.jffs2's call sequence) needs
# for every page of the tree, divided by the number of cores: no tool producing the same
# bytes can be faster than that.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
TREE=${1:-/usr/bin}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-mkfs
cargo build --release --quiet -p jffs2 --example zlib_floor
OURS=$PWD/target/release/jffs2-mkfs
REF=$(command -v mkfs.jffs2 || echo /usr/sbin/mkfs.jffs2)
CORES=$(nproc)


# time_cmd NAME CMD... : runs RUNS times, prints "median_seconds peak_rss_kib"
time_cmd() {
  local t rss times=() peak=0
  for _ in $(seq "$RUNS"); do
    /usr/bin/time -f "%e %M" -o "$OUT/time.txt" "$@" >/dev/null 2>"$OUT/stderr.txt"
    read -r t rss < "$OUT/time.txt"
    times+=("$t")
    [ "$rss" -gt "$peak" ] && peak=$rss
  done
  printf '%s\n' "${times[@]}" | median | tr '\n' ' '
  echo "$peak"
}

row() { # label ref_args...
  local label=$1; shift
  read -r rt rr < <(time_cmd "$REF" "$@" -o "$OUT/ref.img")
  read -r ot orr < <(time_cmd "$OURS" "$@" -o "$OUT/ours.img")
  if cmp -s "$OUT/ref.img" "$OUT/ours.img"; then same=yes; else same=NO; fi
  local size
  size=$(stat -c %s "$OUT/ours.img")
  printf '| %s | %s | %.2f s | %.2f s | **%.2fx** | %d MiB | %d MiB | %s | %s |\n' \
    "$label" "$*" "$rt" "$ot" "$(echo "$rt / $ot" | bc -l)" $((rr / 1024)) $((orr / 1024)) "$size" "$same"
}

echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); mkfs.jffs2: $($REF -V 2>&1 | head -1); runs per cell: $RUNS (median)"
echo "Tree: $TREE ($(du -sh "$TREE" | cut -f1), $(find "$TREE" -type f | wc -l) files)"
echo
echo "| case | options | mkfs.jffs2 | jffs2-mkfs | speed-up | RSS mkfs.jffs2 | RSS jffs2-mkfs | image bytes | identical |"
echo "|---|---|---|---|---|---|---|---|---|"
row "large tree" -r "$TREE" -e 0x20000 -n -l
row "large tree, cleanmarkers, BE" -r "$TREE" -e 0x10000 -b
EMPTY=$(mktemp -d)
row "256 MiB pad" -r "$EMPTY" -e 0x20000 -l --pad=0x10000000
rmdir "$EMPTY"
echo
FLOOR=$(target/release/examples/zlib_floor "$TREE" 2>/dev/null)
echo "zlib floor: $FLOOR CPU seconds for all pages at level 3 -> $(echo "$FLOOR / $CORES" | bc -l | xargs printf '%.2f') s on $CORES cores"
rm -f "$OUT/ref.img" "$OUT/ours.img"
