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
#     the scan and the ls -lR, read before unmounting), and its peak over the whole run;
#   * last, the kernel's own path: the image mounted read-only by Linux's jffs2 in the test
#     harness (tests/kernel/harness.py: Debian's kernel under qemu TCG, block2mtd) and every
#     file read in the guest (`tar -cf - . | wc -c`), timed by the guest's clock (0.01 s);
#     skipped with a message when qemu or the kernel cannot be had. Emulation makes it several
#     times slower than hardware: it is the yardstick a user without FUSE would otherwise use.
#
# Each run mounts afresh (cold FUSE and page caches for the mount; the image itself stays in
# the host's page cache, as for the other tools). The runs alternate which side goes first;
# medians are printed, with the ratios the issue bounds (ready <= 1.2x the scan, read <= 2x
# the extraction, peak RSS during the read <= 1/4 of the image).
#
#   bench/mount.sh [TREE] [RUNS]      (defaults: /usr/bin, 5)
#
# The image is `mkfs.jffs2 -r TREE -e 0x20000 -n -l` at $BENCH_SHM/bench.img (default
# /dev/shm). Needs fuse3 (fusermount3) unless run as root, and GNU tar. BENCH_KERNEL_RUNS
# (default 1; 0 skips) boots of the kernel path, the median taken; BENCH_PROFILE=debug uses
# debug binaries (to try the script quickly on a small tree; figures need the release build).
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=${1:-/usr/bin}
RUNS=${2:-5}
OUT=${BENCH_OUT:-bench/out}
SHM=${BENCH_SHM:-/dev/shm}
mkdir -p "$OUT"
KRUNS=${BENCH_KERNEL_RUNS:-1}
if [ "${BENCH_PROFILE:-release}" = debug ]; then
  cargo build --quiet --bin jffs2-mount --bin jffs2-dump
  BIN=$PWD/target/debug
else
  cargo build --release --quiet --bin jffs2-mount --bin jffs2-dump
  BIN=$PWD/target/release
fi
MOUNT=$BIN/jffs2-mount
DUMP=$BIN/jffs2-dump
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

# One boot of the kernel path: appends the guest's mount and read times to k-mount/k-read,
# the boot's wall time to k-wall and the bytes tar wrote to k-bytes; returns non-zero (with
# $KSKIP set) when the harness cannot run or the guest failed. The harness pads the image to
# whole erase blocks in place ("output" is the image: no 128 MB copy), hence this runs last.
kernel_side() {
  local spec=$OUT/mount-kernel-spec.json res=$OUT/mount-kernel-result.json line
  printf '{"timeout": 1800, "images": [{"id": "read", "path": "%s", "output": "%s", "erase_size": 131072, "mode": "ro", "list": false, "workload": "tar -cf - . | wc -c"}]}\n' \
    "$IMG" "$IMG" >"$spec"
  rm -f "$res"
  python3 tests/kernel/harness.py run --spec "$spec" --out "$res" >"$OUT/mount-kernel.log" 2>&1 || true
  line=$(python3 - "$res" <<'PY' 2>&1
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
out = (r.get("workload_output") or "").split()
if not r.get("mount_ok") or r.get("workload_rc") != 0 or not out:
    print("FAIL", r.get("error") or r.get("status"), "mount_ok", r.get("mount_ok"),
          "workload_rc", r.get("workload_rc"), (r.get("workload_output") or "")[-200:])
else:
    print(r["mount_seconds"], r["workload_seconds"], r["boot_wall_seconds"], out[-1])
PY
) || line="FAIL no result ($(tail -1 "$OUT/mount-kernel.log"))"
  case $line in
  FAIL*) KSKIP="the guest run failed: ${line#FAIL } (see $OUT/mount-kernel.log)"; return 1 ;;
  esac
  set -- $line
  echo "$1" >>"$OUT/k-mount"; echo "$2" >>"$OUT/k-read"
  echo "$3" >>"$OUT/k-wall"; echo "$4" >>"$OUT/k-bytes"
}

SIZE=$(stat -c %s "$IMG") # before the kernel path pads it
rm -f "$OUT"/k-mount "$OUT"/k-read "$OUT"/k-wall "$OUT"/k-bytes
KSKIP=
if [ "$KRUNS" = 0 ]; then
  KSKIP="BENCH_KERNEL_RUNS=0"
elif ! python3 tests/kernel/harness.py setup >"$OUT/mount-kernel-setup.log" 2>&1; then
  KSKIP="qemu or the kernel cannot be had (tests/kernel/harness.py setup: $(tail -1 "$OUT/mount-kernel-setup.log"))"
else
  for k in $(seq "$KRUNS"); do kernel_side || break; done
fi
[ -z "$KSKIP" ] || echo "kernel path skipped: $KSKIP" >&2

med() { median <"$OUT/$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.2f", a / b; else print "-"}'; }
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
if [ -z "$KSKIP" ]; then
  KMOUNT=$(med k-mount); KREAD=$(med k-read)
  KTOTAL=$(awk -v a="$KMOUNT" -v b="$KREAD" 'BEGIN {printf "%.2f", a + b}')
  MTOTAL=$(awk -v a="$READY" -v b="$MREAD" 'BEGIN {printf "%.3f", a + b}')
  printf '| mount and read every file / Linux'"'"'s jffs2 in qemu (TCG) | %s s (ready + read) | %s s: mount %s s + read %s s (guest clock, `tar -cf - . \| wc -c`: %s bytes; boot wall %s s; %s boot(s)) | %s | far below 1 |\n' \
    "$MTOTAL" "$KTOTAL" "$KMOUNT" "$KREAD" "$(tail -1 "$OUT/k-bytes")" "$(med k-wall)" "$KRUNS" "$(ratio "$MTOTAL" "$KTOTAL")"
else
  printf '| mount and read every file / Linux'"'"'s jffs2 in qemu (TCG) | | skipped: %s | | |\n' "$KSKIP"
fi
