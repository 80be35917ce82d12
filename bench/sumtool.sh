#!/usr/bin/env bash
# Side-by-side benchmark of jffs2-sumtool against mtd-utils' sumtool and a plain copy of the
# image (`cp`, the floor: summarising writes about as much), on the same machine, in one
# run. Prints a Markdown table.
#
#   bench/sumtool.sh [IMAGE] [RUNS]     (defaults: /tmp/usrbin.img, 5)
#
# IMAGE is made when missing with `mkfs.jffs2 -r /usr/bin -e 0x20000 -n -l` (~128 MB). Both
# tools summarise it with `-e 0x20000 -n -l`; the output goes to a tmpfs (/dev/shm, so the
# figures are the tools' work, not the disk's) and, in a second row, next to the input on
# disk (neither tool syncs its output; jffs2-sumtool writes a temporary file and renames it).
# The three commands run in turn, RUNS rounds (machine drift hits all alike; the output is
# removed before each run). Reported: median wall time, median user+system CPU time, peak
# RSS, output size, the ratios jffs2-sumtool / cp and jffs2-sumtool / sumtool, and whether
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
RATIOS=()

echo "input: $IMG ($(stat -c %s "$IMG") bytes); $RUNS alternating runs each (medians); $(nproc) cores; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| output on | program | wall (median) | CPU user+sys (median) | peak RSS | output bytes | erase blocks |"
echo "|---|---|---|---|---|---|---|"
med() { printf '%s\n' "$@" | median; }
for where in "$SHM" "$DISK"; do
  cw=() cc=() rw=() rc=() ow=() oc=() cr=0 rr=0 orr=0
  for _ in $(seq "$RUNS"); do
    rm -f "$where/bench-sumtool-cp.img"
    read -r w c r < <(time_one cp "$IMG" "$where/bench-sumtool-cp.img"); cw+=("$w"); cc+=("$c"); cr=$((r > cr ? r : cr))
    rm -f "$where/bench-sumtool-ref.img"
    read -r w c r < <(time_one "$REF" -i "$IMG" -o "$where/bench-sumtool-ref.img" -e 0x20000 -n -l)
    rw+=("$w"); rc+=("$c"); rr=$((r > rr ? r : rr))
    rm -f "$where/bench-sumtool-ours.img"
    read -r w c r < <(time_one "$OURS" -i "$IMG" -o "$where/bench-sumtool-ours.img" -e 0x20000 -n -l)
    ow+=("$w"); oc+=("$c"); orr=$((r > orr ? r : orr))
  done
  CW=$(med "${cw[@]}"); CC=$(med "${cc[@]}"); RW=$(med "${rw[@]}"); RC=$(med "${rc[@]}")
  OW=$(med "${ow[@]}"); OC=$(med "${oc[@]}")
  for row in "cp IN OUT|$CW|$CC|$cr|cp" "mtd-utils sumtool|$RW|$RC|$rr|ref" "jffs2-sumtool|$OW|$OC|$orr|ours"; do
    IFS='|' read -r name w c r f <<< "$row"
    size=$(stat -c %s "$where/bench-sumtool-$f.img")
    printf '| %s | %s | %s s | %s s | %d MiB | %s | %s |\n' "$where" "$name" "$w" "$c" \
      $((r / 1024)) "$size" $(((size + 131071) / 131072))
  done
  RATIOS+=("$where: jffs2-sumtool / cp: wall **$(ratio "$OW" "$CW")**, CPU $(ratio "$OC" "$CC"); jffs2-sumtool / mtd-utils sumtool: wall $(ratio "$OW" "$RW"), CPU $(ratio "$OC" "$RC")")
done
echo
printf '%s\n\n' "${RATIOS[@]}"
wrong=$(jffs2dump -c -l "$SHM/bench-sumtool-ours.img" | grep -c Wrong || true)
echo "jffs2dump -c on our output: $wrong \"Wrong\" lines"
rm -f "$SHM"/bench-sumtool-*.img "$DISK"/bench-sumtool-*.img
