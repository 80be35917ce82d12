#!/usr/bin/env bash
# Kernel mount time of an unsummarised image, of mtd-utils sumtool's output and of
# jffs2-sumtool's output, measured in one boot of the kernel harness (tests/kernel/harness.py,
# Debian's kernel under qemu; docs/TESTING.md). Prints a Markdown table.
#
#   bench/sumtool-mount.sh [TREE]      (default /usr/bin; image -e 0x20000 -n -l)
#
# Each image is mounted read-only, listed, unmounted and mounted again ("remount"); the guest
# times each mount command. Emulation (TCG) makes absolute times several times those of real
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
cat > "$OUT/mount-spec.json" <<JSON
{"timeout": 900, "images": [
 {"id": "unsummarised", "path": "$PLAIN", "erase_size": 131072, "pad_to": $PAD, "mode": "ro", "remount": true},
 {"id": "sumtool", "path": "$PWD/$OUT/mount-sumtool.img", "erase_size": 131072, "pad_to": $PAD, "mode": "ro", "remount": true},
 {"id": "jffs2-sumtool", "path": "$PWD/$OUT/mount-ours.img", "erase_size": 131072, "pad_to": $PAD, "mode": "ro", "remount": true}
]}
JSON
python3 tests/kernel/harness.py run --spec "$OUT/mount-spec.json" --out "$OUT/mount-result.json" >/dev/null
python3 - "$OUT/mount-result.json" "$TREE" tests/kernel <<'PY'
import json, sys
sys.path.insert(0, sys.argv[3])
import harness
out = json.load(open(sys.argv[1]))
print(f"Tree {sys.argv[2]}, mkfs.jffs2 -e 0x20000 -n -l; partition padded with 0xFF; one boot\n")
print("| image | first mount | remount | entries listed | jffs2 complaints |")
print("|---|---|---|---|---|")
for r in out["results"]:
    bad = len(harness.bad_messages(r.get("jffs2_messages", [])))
    print(f"| {r['id']} | {r.get('mount_seconds')} s | {r.get('remount', {}).get('mount_seconds')} s "
          f"| {len(r.get('listing', []))} | {bad} |")
PY
