#!/usr/bin/env bash
# Makes the committed seed corpus of the fuzz targets (fuzz/corpus/TARGET/): small images
# written by mtd-utils (mkfs.jffs2, sumtool) in every layout the tools meet, broken variants
# of them, and compressor samples. Needs mtd-utils; run from anywhere:
#
#   fuzz/make-seeds.sh
#
# The images are tiny (8 KiB erase blocks, a few files) so that the fuzzers mutate
# structure, not megabytes of data. Output is deterministic (fixed times, no randomness).
set -euo pipefail
cd "$(dirname "$0")"
C=corpus
rm -rf "$C"
for t in nodes decompress scan fs dump extract sumtool convert; do mkdir -p "$C/$t"; done
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
T=$W/tree
mkdir -p "$T/dir/sub" "$T/empty"
printf 'hello, jffs2\n' > "$T/hello"
seq 1 700 > "$T/dir/numbers"           # ~2.6 KiB, compresses well
awk 'BEGIN { s = 7; for (i = 0; i < 5000; i++) { s = (s * 1103515245 + 12345) % 2147483648; printf "%c", 32 + s % 90 } }' > "$T/dir/sub/noise"
ln -s ../hello "$T/dir/link"
ln "$T/hello" "$T/dir/hardlink"
mkfifo "$T/fifo"
truncate -s 20000 "$T/sparse"
printf 'tail' >> "$T/sparse"
find "$T" -exec touch -h -d '2024-01-02 03:04:05' {} +
cat > "$W/devtable" <<'DEV'
/dev	d	755	0	0	-	-	-	-	-
/dev/null	c	666	0	0	1	3	-	-	-
/dev/sda	b	640	0	6	8	0	-	-	-
DEV
img() { # NAME, mkfs.jffs2 options...
  local n=$1; shift
  mkfs.jffs2 -r "$T" -D "$W/devtable" -q -e 8KiB "$@" -o "$W/$n.img"
}
img le-cm -l
img le-nocm -l -n
img be-cm -b
img le-lzo -l -X lzo -x zlib
img le-rtime -l -x zlib -x lzo
img le-none -l -x zlib -x rtime -x lzo
img le-pad -l -p
img le-page -l -s 8192
sumtool -i "$W/le-cm.img" -o "$W/le-sum.img" -e 8KiB -l
sumtool -i "$W/be-cm.img" -o "$W/be-sum.img" -e 8KiB -b
sumtool -i "$W/le-nocm.img" -o "$W/le-sum-nocm.img" -e 8KiB -l -n
# Broken variants of one image: cut short, a flipped bit in a header, in a payload, in a
# summary; zeroed CRC fields.
cp "$W/le-sum.img" "$W/base.img"
len=$(stat -c %s "$W/base.img")
head -c $((len / 2 + 13)) "$W/base.img" > "$W/cut.img"
flip() { # NAME OFFSET XOR
  cp "$W/base.img" "$W/$1.img"
  local b
  b=$(od -An -tu1 -j "$2" -N1 "$W/base.img" | tr -d ' ')
  printf "$(printf '\\%03o' $(( b ^ $3 )))" | dd of="$W/$1.img" bs=1 seek="$2" conv=notrunc status=none
}
flip flip-hdr 16 1
flip flip-data 200 128
flip flip-sum $((8192 - 20)) 4
flip flip-totlen 5 255
for f in "$W"/*.img; do
  n=$(basename "$f" .img)
  for t in scan fs dump extract sumtool convert; do cp "$f" "$C/$t/$n"; done
  head -c 512 "$f" > "$C/nodes/$n"
done
# Crafted hostile images (fuzz/hostile/README.md): cycles, second parents, self-links, an
# image-chosen owner and mode for the root, terminal escapes in names, decompression bombs.
for f in hostile/*; do
  [ "$(basename "$f")" = README.md ] && continue
  for t in scan fs dump extract sumtool convert; do cp "$f" "$C/$t/hostile-$(basename "$f")"; done
done
# Compressor samples: id byte, 2-byte little-endian size - 1, then data as each compressor
# of mkfs.jffs2 stores it (taken from the images' first data nodes by the test itself is
# not possible here, so raw inputs are used: the target compresses them too).
i=0
for f in "$T/hello" "$T/dir/numbers" "$T/dir/sub/noise"; do
  for id in 0 2 3 5 6 7; do
    { printf "\\$(printf '%03o' $id)\\377\\017"; head -c 4096 "$f"; } > "$C/decompress/raw-$id-$i"
  done
  i=$((i + 1))
done
echo "seeds: $(find "$C" -type f | wc -l) files, $(du -sh "$C" | cut -f1)"
