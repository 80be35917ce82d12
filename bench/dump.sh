#!/usr/bin/env bash
# Side-by-side benchmark of jffs2-dump against jefferson (extraction) and mtd-utils' jffs2dump
# (`-c`), on the same machine, in one run. Prints a Markdown table for docs/BENCHMARKS.md.
#
#   bench/dump.sh [TREE] [RUNS]     (defaults: /usr/bin, 5)
#
# The image is made from TREE at the start with `mkfs.jffs2 -r TREE -e 0x20000 -n -l`, so each
# extraction can be compared with TREE (`diff -r`, which for jefferson shows what it gets
# wrong). jefferson is taken from $JEFFERSON, from PATH, or
# installed into bench/out/venv with `pip install jefferson` (PyPI). Extraction goes to a
# tmpfs (/dev/shm) so that the figures are the tools' work, not the disk's. The inflate floor
# is the CPU time needed only to decompress every data node (one thread), divided by cores.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
TREE=${1:-/usr/bin}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
SHM=${BENCH_SHM:-/dev/shm}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-dump
cargo build --release --quiet -p jffs2 --example inflate_floor
OURS=$PWD/target/release/jffs2-dump
FLOOR_BIN=$PWD/target/release/examples/inflate_floor
CORES=$(nproc)
IMG=$OUT/dump-bench.img
mkfs.jffs2 -r "$TREE" -e 0x20000 -n -l -o "$IMG"
JEFFERSON=${JEFFERSON:-$(command -v jefferson || true)}
if [ -z "$JEFFERSON" ]; then
  if [ ! -x "$OUT/venv/bin/jefferson" ]; then
    python3 -m venv "$OUT/venv" >&2
    "$OUT/venv/bin/pip" install --quiet jefferson >&2
  fi
  JEFFERSON=$OUT/venv/bin/jefferson
fi

JVER=$("$(dirname "$JEFFERSON")/python3" -m pip show jefferson 2>/dev/null | awk '/^Version/{print $2}' || true)



zf=() ff=()
for _ in $(seq "$RUNS"); do
  read -r z f < <("$FLOOR_BIN" "$IMG" 2>"$OUT/floor.txt")
  zf+=("$z"); ff+=("$f")
done
# The floor: inflating with the system zlib (the kernel's and every other tool's inflater),
# per core. FAST: the same with our own decompressor (libdeflate when linked), shown too.
FLOOR=$(printf '%s\n' "${zf[@]}" | median)
FLOOR2=$(awk -v f="$FLOOR" -v c="$CORES" 'BEGIN {printf "%.3f", f / c}')
FAST=$(printf '%s\n' "${ff[@]}" | median)
FAST2=$(awk -v f="$FAST" -v c="$CORES" 'BEGIN {printf "%.3f", f / c}')

echo "Machine: $CORES cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); load before: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS (median)"
echo "Tree: $TREE; image: mkfs.jffs2 -r TREE -e 0x20000 -n -l ($(stat -c %s "$IMG") bytes; $(cat "$OUT/floor.txt")); jefferson $JVER"
echo
echo "| task | tool | wall | CPU user+sys | peak RSS | tree equals TREE |"
echo "|---|---|---|---|---|---|"
J=$SHM/bench-jefferson
O=$SHM/bench-ours
read -r jw jc jr < <(time_runs "$J" "$JEFFERSON" -d "$J" "$IMG")
jdiff=$( (diff -r --no-dereference "$TREE" "$J" 2>&1 || true) | wc -l)
printf '| extract | jefferson | %s s | %s s | %d MiB | %s |\n' "$jw" "$jc" $((jr / 1024)) \
  "$([ "$jdiff" -eq 0 ] && echo yes || echo "no ($jdiff diff lines)")"
diff -r --no-dereference "$TREE" "$J" > "$OUT/jefferson.diff" 2>&1 || true
meta() { (cd "$1" && find . -printf '%P %y %m %U:%G %s %TY-%Tm-%Td/%TH:%TM %l\n' | sort); }
meta "$TREE" > "$OUT/tree.meta"
meta "$J" > "$OUT/jefferson.meta"
diff "$OUT/tree.meta" "$OUT/jefferson.meta" > "$OUT/jefferson.meta.diff" || true
read -r ow oc or < <(time_runs "$O" "$OURS" --extract="$O" "$IMG")
meta "$O" > "$OUT/ours.meta"
diff "$OUT/tree.meta" "$OUT/ours.meta" > "$OUT/ours.meta.diff" || true
odiff=$( (diff -r --no-dereference "$TREE" "$O" 2>&1 || true) | wc -l)
printf '| extract | jffs2-dump --extract | %s s | %s s | %d MiB | %s |\n' "$ow" "$oc" $((or / 1024)) \
  "$([ "$odiff" -eq 0 ] && echo yes || echo "no ($odiff diff lines)")"
read -r cw cc cr < <(time_runs /nonexistent jffs2dump -c "$IMG")
jffs2dump -c "$IMG" > "$OUT/ref-c.txt" 2>&1 || true
printf '| `-c` | mtd-utils jffs2dump | %s s | %s s | %d MiB | |\n' "$cw" "$cc" $((cr / 1024))
read -r dw dc dr < <(time_runs /nonexistent "$OURS" -c "$IMG")
"$OURS" -c "$IMG" > "$OUT/ours-c.txt" 2>&1 || true
same=$(cmp -s "$OUT/ref-c.txt" "$OUT/ours-c.txt" && echo "identical text" || echo "TEXT DIFFERS")
printf '| `-c` | jffs2-dump | %s s | %s s | %d MiB | %s |\n' "$dw" "$dc" $((dr / 1024)) "$same"
echo
awk -v jw="$jw" -v ow="$ow" -v jr="$jr" -v or="$or" -v f2="$FLOOR2" -v f="$FLOOR" -v q="$FAST" -v q2="$FAST2" -v c="$CORES" 'BEGIN {
  printf "extraction: %.1fx faster than jefferson, %.1f%% of its peak memory\n", jw / ow, 100 * or / jr
  printf "inflate floor: system zlib %s CPU s -> %s s on %d cores: extraction at %.2fx; our inflater %s CPU s -> %s s: %.2fx\n",
    f, f2, c, ow / f2, q, q2, ow / q2 }'
echo "jefferson's differences from $TREE: $OUT/jefferson.diff ($jdiff lines of diff -r);" \
  "metadata (type, mode, owner, size, mtime, link target): $OUT/jefferson.meta.diff ($(grep -c '^>' "$OUT/jefferson.meta.diff" || true) entries differ)"
echo "jffs2-dump's metadata differences: $OUT/ours.meta.diff ($(grep -c '^>' "$OUT/ours.meta.diff" || true) entries differ)"
rm -rf "$J" "$O"
