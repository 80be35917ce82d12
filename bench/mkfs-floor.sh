#!/usr/bin/env bash
# jffs2-mkfs against the zlib floor on N threads (and, unless REF=0, mtd-utils' mkfs.jffs2),
# run alternately RUNS times each; prints the medians and the ratios tool / floor and
# tool / reference for wall and CPU time.
#
#   bench/mkfs-floor.sh [TREE] [RUNS] [THREADS]     (defaults: /usr/bin, 5, nproc)
#   REF=0 bench/mkfs-floor.sh /usr/bin 7            (without mkfs.jffs2: 15 s a run)
#   FLOOR_ARGS=--rtime bench/mkfs-floor.sh          (the floor also tries rtime where zlib fails)
#
# The floor (bench/floors/zlib_floor2.rs) reads every file and compresses every
# page with mkfs.jffs2's zlib call sequence, one stream per thread reset between pages:
# what any tool writing the same bytes must at least do. It is checked first (--verify) to
# give the same bytes as jffs2-mkfs's compressor on every page of TREE. Images go to
# /dev/shm (OUT_IMG to change) so the disk is not measured; ours and the reference's are
# compared byte for byte.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
TREE=${1:-/usr/bin}
RUNS=${2:-5}
THREADS=${3:-$(nproc)}
OUT=${BENCH_OUT:-bench/out}
IMG=${OUT_IMG:-/dev/shm/jffs2-mkfs-floor.$$}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-mkfs
cargo build --release --quiet -p jffs2 --example zlib_floor2
OURS=$PWD/target/release/jffs2-mkfs
FLOOR=$PWD/target/release/examples/zlib_floor2
REFBIN=$(command -v mkfs.jffs2 || echo /usr/sbin/mkfs.jffs2)
[ "${REF:-1}" = 0 ] || [ -x "$REFBIN" ] || { echo "no mkfs.jffs2 (REF=0 to skip it)" >&2; exit 1; }
ARGS=(-r "$TREE" -e 0x20000 -n -l)
trap 'rm -f "$IMG" "$IMG.ref"' EXIT

"$FLOOR" --threads "$THREADS" ${FLOOR_ARGS:-} --verify "$TREE" >/dev/null 2>"$OUT/verify.txt" \
  || { cat "$OUT/verify.txt" >&2; echo "floor: bytes differ from jffs2::compress" >&2; exit 1; }
echo "Machine: $(nproc) cores, $(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "Tree: $TREE; floor: $(cat "$OUT/verify.txt")"
echo "Options: ${ARGS[*]} -o $IMG; $RUNS alternating runs each (medians); floor on $THREADS threads"

declare -a ow oc fw fc rw rc
for i in $(seq "$RUNS"); do
  read -r w c _ < <(time_one "$OURS" "${ARGS[@]}" -o "$IMG"); ow+=("$w"); oc+=("$c")
  read -r w c _ < <(time_one "$FLOOR" --threads "$THREADS" ${FLOOR_ARGS:-} "$TREE"); fw+=("$w"); fc+=("$c")
  if [ "${REF:-1}" != 0 ]; then
    read -r w c _ < <(time_one "$REFBIN" "${ARGS[@]}" -o "$IMG.ref"); rw+=("$w"); rc+=("$c")
    if [ "$i" = 1 ]; then
      cmp -s "$IMG" "$IMG.ref" && same=yes || same=NO
    fi
    rm -f "$IMG.ref"
  fi
  rm -f "$IMG"
done
med() { printf '%s\n' "$@" | median; }
OW=$(med "${ow[@]}"); OC=$(med "${oc[@]}"); FW=$(med "${fw[@]}"); FC=$(med "${fc[@]}")
echo
echo "| program | wall (median) | CPU user+sys (median) | wall / floor | CPU / floor |"
echo "|---|---|---|---|---|"
echo "| zlib floor, $THREADS threads ${FLOOR_ARGS:-} | $FW s | $FC s | 1 | 1 |"
echo "| jffs2-mkfs | $OW s | $OC s | **$(ratio "$OW" "$FW")** | **$(ratio "$OC" "$FC")** |"
if [ "${REF:-1}" != 0 ]; then
  RW=$(med "${rw[@]}"); RC=$(med "${rc[@]}")
  echo "| mkfs.jffs2 | $RW s | $RC s | $(ratio "$RW" "$FW") | $(ratio "$RC" "$FC") |"
  echo
  echo "jffs2-mkfs / mkfs.jffs2: wall $(ratio "$OW" "$RW"), CPU $(ratio "$OC" "$RC") (speed-up $(ratio "$RW" "$OW")x); images identical: $same"
fi
echo "all runs (wall/CPU): jffs2-mkfs ${ow[*]} / ${oc[*]}; floor ${fw[*]} / ${fc[*]}"
