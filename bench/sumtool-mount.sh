#!/usr/bin/env bash
# Kernel mount time of an unsummarised image, of mtd-utils sumtool's output and of
# jffs2-sumtool's output, measured in one boot of the kernel harness (tests/kernel/harness.py,
# Debian's kernel under qemu; docs/TESTING.md). Prints a Markdown table.
#
#   bench/sumtool-mount.sh [TREE]      (default /usr/bin; image -e 0x20000 -n -l)
#
# Each image is mounted read-only, listed, unmounted and mounted again ("remount"); the guest
# times each mount command. The summarised images are mounted twice each, alternating with
# the other tool's, and the best time of each kind is the figure compared. Emulation (TCG) makes absolute times several times those of real
# hardware; the ratios are what matter.
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=${1:-/usr/bin}
OUT=${BENCH_OUT:-bench/out}
mkdir -p "$OUT"
cargo build --release --quiet --bin jffs2-sumtool
python3 tests/kernel/harness.py setup >/dev/null
PLAIN=$PWD/$OUT/mount-plain.img
mkfs.jffs2 -r "$TREE" -e 0x20000 -n -l -o "$PLAIN"
sumtool -i "$PLAIN" -o "$OUT/mount-sumtool.img" -e 0x20000 -n -l
target/release/jffs2-sumtool -i "$PLAIN" -o "$OUT/mount-ours.img" -e 0x20000 -n -l
SIZE=$(stat -c %s "$OUT/mount-sumtool.img")
PAD=$(( (SIZE / 0x100000 + 8) * 0x100000 ))
# Each summarised image twice, in alternating order (emulated timings are noisy).
spec() { printf ' {"id": "%s", "path": "%s", "erase_size": 131072, "pad_to": %s, "mode": "ro", "remount": true}' "$1" "$2" "$PAD"; }
{
  echo '{"timeout": 1800, "images": ['
  spec jffs2-sumtool.1 "$PWD/$OUT/mount-ours.img"; echo ,
  spec sumtool.1 "$PWD/$OUT/mount-sumtool.img"; echo ,
  spec unsummarised "$PLAIN"; echo ,
  spec sumtool.2 "$PWD/$OUT/mount-sumtool.img"; echo ,
  spec jffs2-sumtool.2 "$PWD/$OUT/mount-ours.img"; echo
  echo ']}'
} > "$OUT/mount-spec.json"
python3 tests/kernel/harness.py run --spec "$OUT/mount-spec.json" --out "$OUT/mount-result.json" >/dev/null
python3 - "$OUT/mount-result.json" "$TREE" tests/kernel <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import harness
out = json.load(open(sys.argv[1]))
print(f"Tree {sys.argv[2]}, mkfs.jffs2 -e 0x20000 -n -l; partition padded with 0xFF; one boot\n")
print("| image | first mount | remount | entries listed | jffs2 complaints |")
print("|---|---|---|---|---|")
best = {}
for r in out["results"]:
    bad = len(harness.bad_messages(r.get("jffs2_messages", [])))
    m, rm = r.get("mount_seconds"), r.get("remount", {}).get("mount_seconds")
    print(f"| {r['id']} | {m} s | {rm} s | {len(r.get('listing', []))} | {bad} |")
    b = best.setdefault(r["id"].split(".")[0], [1e9, 1e9])
    b[0] = min(b[0], m if m is not None else 1e9)
    b[1] = min(b[1], rm if rm is not None else 1e9)
print()
print("best (first mount / remount): " + ", ".join(f"{k} {v[0]} / {v[1]} s" for k, v in best.items()))
PY
