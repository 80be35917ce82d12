#!/usr/bin/env bash
# Side-by-side benchmark of jffs2-dump against jefferson (extraction) and mtd-utils' jffs2dump
# (`-c`), on the same machine, in one run. Prints Markdown tables for docs/BENCHMARKS.md.
#
#   bench/dump.sh [TREE] [RUNS]     (defaults: /usr/bin, 5)
#
# Single image: made from TREE at the start with `mkfs.jffs2 -r TREE -e 0x20000 -n -l`, so each
# extraction can be compared with TREE (`diff -r`, which for jefferson shows what it gets
# wrong). jefferson is taken from $JEFFERSON, from PATH, or
# installed with `pip install jefferson` (PyPI) into $BENCH_VENV (default
# ~/.cache/jffs2-tools-bench/venv: outside the work tree, whose .py files the repository's
# tests scan). Extraction goes to a
# tmpfs (/dev/shm) so that the figures are the tools' work, not the disk's. The inflate floor
# is the CPU time needed only to decompress every data node (one thread), divided by cores.
#
# Multi-image run (after it): every image of fixtures/thirdparty/MANIFEST.tsv (images made by
# others), those of fixtures/thirdparty/EXTERNAL.tsv found in $BENCH_EXTERNAL (default
# bench/out/thirdparty-external; see fixtures/thirdparty/README.md for how to fetch them), and
# the TREE image above. Per image, jefferson and `jffs2-dump --extract` run RUNS times each,
# alternating; the medians of wall time and peak RSS are shown, and the number of entries of
# each tool's tree that differ from Linux's view of the image (tests/kernel/harness.py, one boot
# for all images; big-endian images through their little-endian `jffs2-convert -l`; compared as
# tests/thirdparty.rs does). Without qemu/the kernel, or with BENCH_LINUX=0, the reference is
# jffs2-dump's own tree, said so in the table.
#
# Floor run (after the single-image part): `jffs2-dump --extract` against its floor, the
# inflate floor on all cores plus the write floor (bench/floors/write_floor.rs),
# alternated RUNS times; prints extraction / floor.
#
# BENCH_SINGLE=0 skips the single-image part, BENCH_FLOOR=0 the floor run, BENCH_MULTI=0 the
# multi-image run;
# BENCH_PROFILE=debug uses debug builds (to try the script quickly, not for figures).
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/lib.sh
. bench/lib.sh
TREE=${1:-/usr/bin}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
SHM=${BENCH_SHM:-/dev/shm}
mkdir -p "$OUT"
if [ "${BENCH_PROFILE:-release}" = debug ]; then
  cargo build --quiet --bin jffs2-dump --bin jffs2-convert
  cargo build --quiet -p jffs2 --example inflate_floor --example write_floor
  BIN=$PWD/target/debug
else
  cargo build --release --quiet --bin jffs2-dump --bin jffs2-convert
  cargo build --release --quiet -p jffs2 --example inflate_floor --example write_floor
  BIN=$PWD/target/release
fi
OURS=$BIN/jffs2-dump
CONVERT=$BIN/jffs2-convert
FLOOR_BIN=$BIN/examples/inflate_floor
WRITE_FLOOR=$BIN/examples/write_floor
CORES=$(nproc)
IMG=$OUT/dump-bench.img
mkfs.jffs2 -r "$TREE" -e 0x20000 -n -l -o "$IMG"
JEFFERSON=${JEFFERSON:-$(command -v jefferson || true)}
if [ -z "$JEFFERSON" ]; then
  VENV=${BENCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/jffs2-tools-bench/venv}
  if [ ! -x "$VENV/bin/jefferson" ]; then
    python3 -m venv "$VENV" >&2
    "$VENV/bin/pip" install --quiet jefferson >&2
  fi
  JEFFERSON=$VENV/bin/jefferson
fi

JVER=$("$(dirname "$JEFFERSON")/python3" -m pip show jefferson 2>/dev/null | awk '/^Version/{print $2}' || true)



meta() { (cd "$1" && find . -printf '%P %y %m %U:%G %s %TY-%Tm-%Td/%TH:%TM %l\n' | sort); }

# The single-image part: extraction of the TREE image by both tools, and `-c` by both dumpers.
single_image_run() {
  zf=() ff=()
  for _ in $(seq "$RUNS"); do
    # `$(...)` waits for the floor to exit (bench/fsck.sh says why).
    read -r z f <<<"$("$FLOOR_BIN" "$IMG" 2>"$OUT/floor.txt")"
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
  meta "$TREE" > "$OUT/tree.meta"
  meta "$J" > "$OUT/jefferson.meta"
  diff "$OUT/tree.meta" "$OUT/jefferson.meta" > "$OUT/jefferson.meta.diff" || true
  read -r ow oc or < <(time_runs "$O" "$OURS" --extract="$O" "$IMG")
  meta "$O" > "$OUT/ours.meta"
  diff "$OUT/tree.meta" "$OUT/ours.meta" > "$OUT/ours.meta.diff" || true
  odiff=$( (diff -r --no-dereference "$TREE" "$O" 2>&1 || true) | wc -l)
  printf '| extract | jffs2-dump --extract | %s s | %s s | %d MiB | %s |\n' "$ow" "$oc" $((or / 1024)) \
    "$([ "$odiff" -eq 0 ] && echo yes || echo "no ($odiff diff lines)")"
  # The `jefferson` name (a link to jffs2-dump, as scripts/install.sh makes it) with the command
  # line binwalk 3 runs: what an analysis pipeline gets after switching, on the same image.
  mkdir -p "$OUT/names"
  ln -sf "$OURS" "$OUT/names/jefferson"
  N=$SHM/bench-ours-jefferson
  read -r nw nc nr < <(time_runs "$N" "$OUT/names/jefferson" -f -d "$N" "$IMG")
  ndiff=$( (diff -r --no-dereference "$TREE" "$N" 2>&1 || true) | wc -l)
  printf '| extract | jffs2-dump as `jefferson -f -d DIR` | %s s | %s s | %d MiB | %s |\n' "$nw" "$nc" $((nr / 1024)) \
    "$([ "$ndiff" -eq 0 ] && echo yes || echo "no ($ndiff diff lines)")"
  read -r cw cc cr < <(time_runs /nonexistent jffs2dump -c "$IMG")
  jffs2dump -c "$IMG" > "$OUT/ref-c.txt" 2>&1 || true
  printf '| `-c` | mtd-utils jffs2dump | %s s | %s s | %d MiB | |\n' "$cw" "$cc" $((cr / 1024))
  read -r dw dc dr < <(time_runs /nonexistent "$OURS" -c "$IMG")
  "$OURS" -c "$IMG" > "$OUT/ours-c.txt" 2>&1 || true
  same=$(cmp -s "$OUT/ref-c.txt" "$OUT/ours-c.txt" && echo "identical text" || echo "TEXT DIFFERS")
  printf '| `-c` | jffs2-dump | %s s | %s s | %d MiB | %s |\n' "$dw" "$dc" $((dr / 1024)) "$same"
  echo
  awk -v jw="$jw" -v ow="$ow" -v jr="$jr" -v or="$or" -v nw="$nw" -v nr="$nr" -v f2="$FLOOR2" -v f="$FLOOR" -v q="$FAST" -v q2="$FAST2" -v c="$CORES" 'BEGIN {
    printf "extraction: %.1fx faster than jefferson, %.1f%% of its peak memory\n", jw / ow, 100 * or / jr
    printf "the jefferson name: %.1fx faster than jefferson, %.1f%% of its peak memory\n", jw / nw, 100 * nr / jr
    printf "inflate floor: system zlib %s CPU s -> %s s on %d cores: extraction at %.2fx; our inflater %s CPU s -> %s s: %.2fx\n",
      f, f2, c, ow / f2, q, q2, ow / q2 }'
  echo "jefferson's differences from $TREE: $OUT/jefferson.diff ($jdiff lines of diff -r);" \
    "metadata (type, mode, owner, size, mtime, link target): $OUT/jefferson.meta.diff ($(grep -c '^>' "$OUT/jefferson.meta.diff" || true) entries differ)"
  echo "jffs2-dump's metadata differences: $OUT/ours.meta.diff ($(grep -c '^>' "$OUT/ours.meta.diff" || true) entries differ)"
  rm -rf "$J" "$O" "$N"
}

# Extraction against its floor: our inflater's floor on all cores plus the write floor
# (bench/floors/write_floor.rs: the extracted tree, read into memory first, created
# again on the same filesystem on one thread, as the extraction writes), run alternately
# with the extraction RUNS times; the ratio of the medians: extraction / (inflate + write).
floor_run() {
  local T=$SHM/bench-floor-tree O=$SHM/bench-floor-ours W=$SHM/bench-floor-write
  rm -rf "$T" "$O" "$W"
  "$OURS" --extract="$T" "$IMG"
  local iw=() ww=() wc=() ow=() oc=() f w c _
  for _ in $(seq "$RUNS"); do
    # `$(...)` waits for each floor to exit (bench/fsck.sh says why).
    f=$("$FLOOR_BIN" "$IMG" --ours 2>/dev/null)
    iw+=("$f")
    read -r w c <<<"$("$WRITE_FLOOR" "$T" "$W" 2>"$OUT/write-floor.txt")"
    ww+=("$w"); wc+=("$c")
    rm -rf "$O"
    read -r w c _ < <(time_one "$OURS" --extract="$O" "$IMG")
    ow+=("$w"); oc+=("$c")
  done
  rm -rf "$T" "$O" "$W"
  local med IW WW WC OW OC FL
  med() { printf '%s\n' "$@" | median; }
  IW=$(med "${iw[@]}"); WW=$(med "${ww[@]}"); WC=$(med "${wc[@]}")
  OW=$(med "${ow[@]}"); OC=$(med "${oc[@]}")
  FL=$(awk -v i="$IW" -v c="$CORES" -v w="$WW" 'BEGIN {printf "%.3f", i / c + w}')
  echo
  echo "Extraction against its floor: $CORES cores, load before: $(cut -d' ' -f1-3 /proc/loadavg); $RUNS alternating runs (medians); write floor: $(cat "$OUT/write-floor.txt")"
  echo
  echo "| program | wall | CPU user+sys |"
  echo "|---|---|---|"
  echo "| inflate floor, one thread (our inflater) | $IW s | $IW s |"
  echo "| write floor, one thread | $WW s | $WC s |"
  echo "| floor: inflate / $CORES cores + write | $FL s | |"
  echo "| jffs2-dump --extract | $OW s | $OC s |"
  echo
  echo "jffs2-dump --extract / floor: wall $OW s / $FL s = $(ratio "$OW" "$FL") (target <= 1.3);" \
    "CPU $OC s / $(awk -v i="$IW" -v w="$WC" 'BEGIN {printf "%.3f", i + w}') s = $(ratio "$OC" "$(awk -v i="$IW" -v w="$WC" 'BEGIN {print i + w}')")"
  echo "all runs (wall): extract ${ow[*]}; inflate floor ${iw[*]}; write floor ${ww[*]}"
}

if [ "${BENCH_SINGLE:-1}" != 0 ]; then
  single_image_run
fi
if [ "${BENCH_FLOOR:-1}" != 0 ]; then
  floor_run
fi

# ---------------------------------------------------------------------------------------------
# Multi-image run

# one_run DEST CMD...: one run of CMD under /usr/bin/time, DEST removed first; prints
# "wall_seconds peak_rss_kib" (the wall time taken to the millisecond around the run).
one_run() {
  local dest=$1; shift
  local t0 t1 w u s rss
  rm -rf "$dest"
  t0=$(date +%s%N)
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" || true
  t1=$(date +%s%N)
  # a failing command makes time(1) write a "Command exited" line first
  read -r w u s rss < <(tail -n 1 "$OUT/time.txt")
  printf '%s %s\n' "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')" "$rss"
}

# The images: "name path erase_size endian made_by" lines.
multi_images() {
  local f e en mb rest
  while IFS=$'\t' read -r f e en mb rest; do
    case $f in '#'*|'') continue ;; esac
    printf '%s %s %s %s %s\n' "$f" "$PWD/fixtures/thirdparty/$f" "$e" "$en" "$mb"
  done < fixtures/thirdparty/MANIFEST.tsv
  local ext=${BENCH_EXTERNAL:-$OUT/thirdparty-external}
  while IFS=$'\t' read -r f e en mb rest; do
    case $f in '#'*|'') continue ;; esac
    [ -f "$ext/$f" ] && printf '%s %s %s %s %s\n' "$f" "$(realpath "$ext/$f")" "$e" "$en" "$mb"
  done < fixtures/thirdparty/EXTERNAL.tsv
  printf '%s %s %s %s %s\n' "tree-image" "$(realpath "$IMG")" 131072 little mkfs
}

# linux_views LIST RESULT: Linux's view of every image of LIST (one harness run; big-endian
# images through their little-endian conversion) into RESULT; prints why not when it cannot.
linux_views() {
  local list=$1 res=$2 spec=$OUT/multi-spec.json name path erase endian mb
  if [ "${BENCH_LINUX:-1}" = 0 ]; then echo "BENCH_LINUX=0"; return; fi
  if ! python3 tests/kernel/harness.py setup >"$OUT/multi-setup.log" 2>&1; then
    echo "qemu or the kernel cannot be had ($(tail -n 1 "$OUT/multi-setup.log"))"; return
  fi
  : > "$OUT/multi-images.txt"
  while read -r name path erase endian mb; do
    if [ "$endian" = big ]; then
      "$CONVERT" -i "$path" --input-eraseblock="$erase" -o "$OUT/$name.le" -l >&2
      path=$OUT/$name.le
    fi
    printf '%s\t%s\t%s\n' "$name" "$path" "$erase" >> "$OUT/multi-images.txt"
  done < "$list"
  python3 - "$OUT/multi-images.txt" "$spec" <<'PY'
import json, sys
ims = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
json.dump({"timeout": 1200, "images": [{"id": n, "path": p, "erase_size": int(e), "mode": "ro"}
                                      for n, p, e in ims]}, open(sys.argv[2], "w"))
PY
  if ! python3 tests/kernel/harness.py run --spec "$spec" --out "$res" >"$OUT/multi-linux.log" 2>&1 \
      && ! [ -s "$res" ]; then
    echo "the harness failed (see $OUT/multi-linux.log)"
  fi
}

# differ RESULT ID DIR REFDIR OUTJSON: the number of entries of DIR that differ from Linux's view of
# image ID (RESULT; else from the tree REFDIR), compared as tests/thirdparty.rs does; files
# Linux could not read (md5 null: e.g. LZMA, which Debian's kernel lacks) are compared without
# contents. Prints "N U" (U: such unreadable files); the differences go to OUTJSON.
differ() {
  python3 - "$@" <<'PY'
import json, os, sys
sys.path.insert(0, "tests/kernel")
import harness
res, rid, d, ref, outjson = sys.argv[1:6]
linux = None
if os.path.exists(res):
    for r in json.load(open(res))["results"]:
        if r["id"] == rid and r.get("mount_ok"):
            linux = r.get("listing")
if linux is None:
    linux = harness.list_host(ref)
unread = {e["path"] for e in linux if e["type"] == "file" and e.get("md5") is None}
host = harness.list_host(d) if os.path.isdir(d) else []
diffs = [x for x in harness.compare(linux, host)
         if not (x["what"] == "md5" and x["path"] in unread)]
json.dump(diffs, open(outjson, "w"), indent=1, ensure_ascii=False)
print(len({x["path"] for x in diffs}), len(unread))
PY
}

multi_image_run() {
  local list=$OUT/multi-list.txt res=$OUT/multi-linux.json why name path erase endian mb
  local J=$SHM/bench-multi-jefferson O=$SHM/bench-multi-ours
  multi_images > "$list"
  rm -f "$res"
  why=$(linux_views "$list" "$res")
  echo
  echo "Multi-image run: $(wc -l < "$list") images; $CORES cores, load before: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS each, alternating (median); jefferson $JVER"
  if [ -s "$res" ]; then
    local kpkg
    kpkg=$(python3 -c 'import json, os, sys; print(os.path.basename(os.path.dirname(json.load(open(sys.argv[1]))["kernel"])))' "$OUT/multi-setup.log" 2>/dev/null || echo "the harness's kernel")
    echo "Entries that differ: from Linux's view of the image ($kpkg under qemu; big-endian images through their little-endian conversion)"
  else
    echo "Entries that differ: from jffs2-dump's own tree, NOT Linux's view: $why"
  fi
  echo
  echo "| image | made by | bytes | entries | jefferson wall | jffs2-dump wall | speed-up | jefferson RSS | jffs2-dump RSS | RSS ratio | ≠ Linux: jefferson | ≠ Linux: jffs2-dump |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
  while read -r name path erase endian mb; do
    local jw=() jr=() ow=() orr=() w r
    for _ in $(seq "$RUNS"); do
      read -r w r < <(one_run "$J" "$JEFFERSON" -d "$J" "$path")
      jw+=("$w"); jr+=("$r")
      read -r w r < <(one_run "$O" "$OURS" --erase-size="$erase" --extract="$O" "$path")
      ow+=("$w"); orr+=("$r")
    done
    local mjw mjr mow mor jd od unread entries
    mjw=$(printf '%s\n' "${jw[@]}" | median); mjr=$(printf '%s\n' "${jr[@]}" | median)
    mow=$(printf '%s\n' "${ow[@]}" | median); mor=$(printf '%s\n' "${orr[@]}" | median)
    read -r od unread < <(differ "$res" "$name" "$O" "$O" "$OUT/multi-$name-jffs2-dump.diffs.json")
    read -r jd _ < <(differ "$res" "$name" "$J" "$O" "$OUT/multi-$name-jefferson.diffs.json")
    entries=$(python3 - "$res" "$name" "$O" <<'PY'
import json, os, sys
sys.path.insert(0, "tests/kernel")
import harness
res, rid, d = sys.argv[1:4]
for r in (json.load(open(res))["results"] if os.path.exists(res) else []):
    if r["id"] == rid and r.get("mount_ok"):
        print(len(r.get("listing") or [])); sys.exit()
print(len(harness.list_host(d)))
PY
)
    [ "$unread" -gt 0 ] && od="$od ($unread files Linux cannot read: contents not compared)"
    awk -v n="$name" -v m="$mb" -v b="$(stat -c %s "$path")" -v e="$entries" -v jw="$mjw" \
      -v ow="$mow" -v jr="$mjr" -v or="$mor" -v jd="$jd" -v od="$od" 'BEGIN {
      printf "| %s | %s | %d | %d | %.3f s | %.3f s | %.1fx | %d MiB | %d MiB | 1/%.1f | %s | %s |\n",
        n, m, b, e, jw, ow, jw / ow, jr / 1024, or / 1024, jr / or, jd, od }'
    rm -rf "$J" "$O"
  done < "$list" | tee "$OUT/multi-table.md"
  # columns of the table split on "|": 6, 7 walls; 8 speed-up; 11 "1/R" memory ratio
  awk -F'|' '{ jw = $6; ow = $7; s = $8; r = $11
    gsub(/[ s]/, "", jw); gsub(/[ s]/, "", ow); gsub(/[ x]/, "", s); sub(/^ *1\//, "", r)
    j += jw; o += ow
    if (n == 0 || s + 0 < ms) ms = s + 0
    if (n == 0 || r + 0 < mr) mr = r + 0
    n++ }
    END { if (n) {
      printf "\nall %d images: jefferson %.3f s, jffs2-dump %.3f s in all: %.1fx faster\n", n, j, o, j / o
      printf "per image: slowest speed-up %.1fx (target >= 12x); least memory saving 1/%.1f of jefferson'"'"'s peak RSS (target <= 1/10)\n", ms, mr } }' \
    "$OUT/multi-table.md"
  echo "the differences, entry by entry: $OUT/multi-*.diffs.json; Linux's listings: $res"
}

if [ "${BENCH_MULTI:-1}" != 0 ]; then
  multi_image_run
fi
