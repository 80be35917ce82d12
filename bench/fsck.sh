#!/usr/bin/env bash
# Benchmark of jffs2-fsck on a ~128 MB image against the inflate floor, on the same machine,
# in one run. Prints a Markdown table for docs/BENCHMARKS.md.
#
#   bench/fsck.sh [IMAGE] [RUNS]     (defaults: bench/out/fsck-bench.img, 5)
#
# The default IMAGE is made when missing with `mkfs.jffs2 -r /usr/bin -e 0x20000 -n -l`. jffs2-fsck
# checks everything (every CRC, every data node decompressed, the tree built as Linux
# would); the "inflate floor" is the CPU time needed only to decompress the data of every
# inode node on one thread (bench/floors/inflate_floor.rs), shown as is and
# divided by the number of cores, and the same work run on as many threads as cores (the floor
# measured on the cores: dividing assumes they scale perfectly, which two cores of a virtual
# machine sharing memory bandwidth do not quite do). jffs2-fsck and the floors of our own
# inflater run alternately RUNS times; the ratios of their medians (tool / floor) are printed. There is no mtd-utils fsck
# to compare with; the nearest mtd-utils work, `jffs2dump -c` (CRC check of every node, no
# decompression), is shown too.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
IMG=${1:-${BENCH_OUT:-bench/out}/fsck-bench.img}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-fsck
cargo build --release --quiet -p jffs2 --example inflate_floor
OURS=$PWD/target/release/jffs2-fsck
FLOOR_BIN=$PWD/target/release/examples/inflate_floor
CORES=$(nproc)
if [ ! -f "$IMG" ]; then
  mkfs.jffs2 -r /usr/bin -e 0x20000 -n -l -o "$IMG"
fi



# The floors, once with the system zlib too (shown for reference). A floor's figures are
# taken with `$(...)`, which waits for the program to exit: `read < <(...)` goes on at its
# last line, while it is still giving back its memory (hundreds of MiB: tens of ms of one core)
# — which the next command, timed whole, then paid for.
read -r FLOOR _ <<<"$("$FLOOR_BIN" "$IMG" 2>"$OUT/floor.txt")"
FLOOR2=$(awk -v f="$FLOOR" -v c="$CORES" 'BEGIN {printf "%.3f", f / c}')
# jffs2-fsck and the floor of our own inflater (libdeflate when linked) run alternately, so
# that the machine's drift hits both alike; the ratio is of their medians.
fw=() pw=() ow=() oc=() orss=0
for _ in $(seq "$RUNS"); do
  f=$("$FLOOR_BIN" "$IMG" --ours 2>/dev/null)
  fw+=("$f")
  f=$("$FLOOR_BIN" "$IMG" --ours --threads "$CORES" 2>/dev/null)
  pw+=("$f")
  read -r w c r < <(time_one "$OURS" --no-progress "$IMG")
  ow+=("$w"); oc+=("$c"); [ "$r" -gt "$orss" ] && orss=$r
done
FAST=$(printf '%s\n' "${fw[@]}" | median)
FAST2=$(awk -v f="$FAST" -v c="$CORES" 'BEGIN {printf "%.3f", f / c}')
PAR=$(printf '%s\n' "${pw[@]}" | median)
OW=$(printf '%s\n' "${ow[@]}" | median)
OC=$(printf '%s\n' "${oc[@]}" | median)
SIZE=$(stat -c %s "$IMG")

echo "Machine: $CORES cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); load before: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS (median; jffs2-fsck alternated with the floor)"
echo "Image: $IMG ($SIZE bytes; $(cat "$OUT/floor.txt"))"
echo
echo "| command | wall | CPU user+sys | peak RSS | vs zlib floor ($FLOOR2 s) | vs our inflater's floor ($FAST2 s) | exit |"
echo "|---|---|---|---|---|---|---|"
rc=0
"$OURS" --no-progress "$IMG" >/dev/null 2>&1 || rc=$?
printf '| `%s` | %s s | %s s | %d MiB | %sx | **%sx** | %s |\n' "jffs2-fsck IMAGE" "$OW" "$OC" $((orss / 1024)) \
  "$(ratio "$OW" "$FLOOR2")" "$(ratio "$OW" "$FAST2")" "$rc"
row() {
  local label=$1; shift
  read -r wall cpu rss < <(time_runs /nonexistent "$@")
  local rc=0
  "$@" >/dev/null 2>&1 || rc=$?
  printf '| `%s` | %s s | %s s | %d MiB | %sx | %sx | %s |\n' "$label" "$wall" "$cpu" $((rss / 1024)) \
    "$(ratio "$wall" "$FLOOR2")" "$(ratio "$wall" "$FAST2")" "$rc"
}
row "RAYON_NUM_THREADS=1 jffs2-fsck IMAGE" env RAYON_NUM_THREADS=1 "$OURS" --no-progress "$IMG"
row "jffs2dump -c IMAGE (mtd-utils)" jffs2dump -c "$IMG"
echo
echo "jffs2-fsck / our inflater's floor on $CORES cores: wall $OW s / $FAST2 s (one thread's / $CORES) = $(ratio "$OW" "$FAST2");" \
  "wall $OW s / $PAR s (measured on $CORES threads) = $(ratio "$OW" "$PAR") (target <= 1.2);" \
  "CPU $OC s / $FAST s = $(ratio "$OC" "$FAST")"
echo "all runs (wall/CPU): jffs2-fsck ${ow[*]} / ${oc[*]}; floor (one thread) ${fw[*]}; floor ($CORES threads) ${pw[*]}"
echo "inflate floor: system zlib $FLOOR CPU seconds on one thread -> $FLOOR2 s on $CORES cores;" \
  "our inflater $FAST -> $FAST2 s;" \
  "memory target: image + 64 MiB = $(((SIZE >> 20) + 64)) MiB"
