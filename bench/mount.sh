#!/usr/bin/env bash
# Benchmark of jffs2-mount on a ~128 MB image, side by side with the tools that read the same
# image without FUSE, on the same machine, in one run:
#
#   * time from start to mount ready (`jffs2-mount IMG DIR` returns once the scan is done)
#     against a scan without reading file data: `jffs2-dump --list` (jffs2-fsck has no
#     scan-only mode: it decompresses every node);
#   * `ls -lR` of the mount (against `ls -lR` of the extracted tree, on tmpfs);
#   * reading every file through the mount (`tar -cf - . | cat >/dev/null`: GNU tar does not
#     read the files at all when its archive is /dev/null) against
#     `jffs2-dump --extract` of the image to a tmpfs;
#   * the mount server's peak RSS during that read (its VmHWM, reset with clear_refs after
#     the scan and the ls -lR, read before unmounting), and its peak over the whole run.
#
# Each run mounts afresh (cold FUSE and page caches for the mount; the image itself stays in
# the host's page cache, as for the other tools). The runs alternate which side goes first;
# medians are printed, with the ratios the issue bounds (ready <= 1.2x the scan, read <= 2x
# the extraction, peak RSS during the read <= 1/4 of the image).
#
#   bench/mount.sh [TREE] [RUNS]      (defaults: /usr/bin, 5)
#
# The image is `mkfs.jffs2 -r TREE -e 0x20000 -n -l` at $BENCH_SHM/bench.img (default
# /dev/shm). Needs fuse3 (fusermount3) unless run as root, and GNU tar.
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=${1:-/usr/bin}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
SHM=${BENCH_SHM:-/dev/shm}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-mount --bin jffs2-dump
MOUNT=$PWD/target/release/jffs2-mount
DUMP=$PWD/target/release/jffs2-dump
IMG=$SHM/bench.img
MNT=$SHM/mount-bench-mnt
XDIR=$SHM/mount-bench-x
mkfs.jffs2 -r "$TREE" -e 0x20000 -n -l -o "$IMG"
mkdir -p "$MNT"
cleanup() {
  grep -qF " $MNT " /proc/self/mountinfo && "$MOUNT" -u "$MNT" 2>/dev/null
  rm -rf "$XDIR"
  rmdir "$MNT" 2>/dev/null || true
}
trap cleanup EXIT

# secs CMD...: runs CMD (output discarded), prints its wall time in seconds (ms precision).
secs() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }
  t1=$(date +%s%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f\n", (b - a) / 1e9}'
}
# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }
# kib FIELD PID: a field of /proc/PID/status (VmHWM, VmRSS), in KiB.
kib() { awk -v f="$1:" '$1 == f {print $2}' "/proc/$2/status"; }
read_all() { (cd "$1" && tar -cf - . | cat >/dev/null); }
ls_all() { ls -lR "$1"; }

# One run of the mount side: appends to the ready/ls/read/hwm lists.
mount_side() {
  local t pid
  t=$(secs "$MOUNT" "$IMG" "$MNT")
  echo "$t" >>"$OUT/m-ready"
  pid=$(pgrep -n -f -x "$MOUNT $IMG $MNT")
  secs ls_all "$MNT" >>"$OUT/m-ls"
  kib VmHWM "$pid" >>"$OUT/m-hwm-scan"
  echo 5 >"/proc/$pid/clear_refs" # resets VmHWM to the current RSS
  secs read_all "$MNT" >>"$OUT/m-read"
  kib VmHWM "$pid" >>"$OUT/m-hwm-read"
  "$MOUNT" -u "$MNT"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.01; done
}

# One run of the other side: jffs2-dump --list, --extract, ls -lR of the extraction.
dump_side() {
  secs "$DUMP" --list "$IMG" >>"$OUT/d-list"
  rm -rf "$XDIR"
  secs "$DUMP" --extract "$XDIR" "$IMG" >>"$OUT/d-extract"
  secs ls_all "$XDIR" >>"$OUT/d-ls"
  rm -rf "$XDIR"
}

rm -f "$OUT"/m-ready "$OUT"/m-hwm-scan "$OUT"/m-ls "$OUT"/m-read "$OUT"/m-hwm-read \
  "$OUT"/d-list "$OUT"/d-extract "$OUT"/d-ls
for k in $(seq "$RUNS"); do
  if [ $((k % 2)) = 1 ]; then mount_side; dump_side; else dump_side; mount_side; fi
done

med() { median <"$OUT/$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }
SIZE=$(stat -c %s "$IMG")
FILES=$(find "$TREE" -type f 2>/dev/null | wc -l)
READY=$(med m-ready); LIST=$(med d-list)
MREAD=$(med m-read); EXTRACT=$(med d-extract)
MLS=$(med m-ls); DLS=$(med d-ls)
HWM_READ=$(sort -n "$OUT/m-hwm-read" | tail -1)
HWM_SCAN=$(sort -n "$OUT/m-hwm-scan" | tail -1)
echo "Machine: $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GiB, $(uname -sr); load before: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS (median, alternating)"
echo "Input: mkfs.jffs2 -r $TREE -e 0x20000 -n -l ($SIZE bytes, $FILES files)"
echo
echo "| task | jffs2-mount | without FUSE | ratio | bound |"
echo "|---|---|---|---|---|"
printf '| start to ready / scan | %s s | %s s (`jffs2-dump --list`) | %s | <= 1.2 |\n' "$READY" "$LIST" "$(ratio "$READY" "$LIST")"
printf '| `ls -lR` | %s s | %s s (of the extracted tree, tmpfs) | %s | |\n' "$MLS" "$DLS" "$(ratio "$MLS" "$DLS")"
printf '| read every file | %s s (`tar -cf - . \\| cat`) | %s s (`jffs2-dump --extract` to tmpfs) | %s | <= 2 |\n' "$MREAD" "$EXTRACT" "$(ratio "$MREAD" "$EXTRACT")"
printf '| peak RSS of the server during the read | %d MiB | image %d MiB | %s | <= 0.25 |\n' \
  $((HWM_READ / 1024)) $((SIZE >> 20)) "$(ratio $((HWM_READ * 1024)) "$SIZE")"
printf '| peak RSS of the server, whole run (scan, ls -lR, read) | %d MiB | | %s | |\n' \
  $((HWM_SCAN > HWM_READ ? HWM_SCAN / 1024 : HWM_READ / 1024)) \
  "$(ratio $(((HWM_SCAN > HWM_READ ? HWM_SCAN : HWM_READ) * 1024)) "$SIZE")"
