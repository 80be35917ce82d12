#!/usr/bin/env python3
"""Independent check of the LZMA nodes of a JFFS2 image (tests/openwrt.rs).

usage: openwrt_lzma.py IMAGE little|big SOURCE_DIR

Walks the image node by node (its own parser: magic 0x1985, header CRC), maps inode
numbers to paths through the directory entries (an mkfs image: one version of each), and
decodes every LZMA node (compressor id 8) with Python's lzma module, the way OpenWrt's
patch defines the payload: a raw LZMA1 stream with lc=0 lp=0 pb=0 and an 8 KiB
dictionary, no header, no end marker. Each node must decode to exactly its dsize bytes,
which must equal the bytes of SOURCE_DIR/<path> at the node's file offset; the stream
decoded as an `.lzma` file with the size in its header (jefferson's way: the decoder then
knows where the stream ends and checks that it ends cleanly there) must agree.
Prints "lzma nodes: N verified" and exits 0, or prints what failed and exits 1.
"""

import lzma
import os
import struct
import sys
import zlib

FILTERS = [{"id": lzma.FILTER_LZMA1, "lc": 0, "lp": 0, "pb": 0, "dict_size": 0x2000}]


def jffs2_crc(data):
    """The JFFS2 CRC: CRC-32 seeded with 0 and not inverted."""
    return zlib.crc32(data, 0xFFFFFFFF) ^ 0xFFFFFFFF


def decode_raw(payload, dsize):
    # No end marker: a raw decoder does not know where the stream ends (it may decode a few
    # bytes more from the range coder's flush), so it is asked for dsize bytes, as the
    # kernel asks LzmaDecode for them.
    d = lzma.LZMADecompressor(format=lzma.FORMAT_RAW, filters=FILTERS)
    return d.decompress(payload, max_length=dsize)


def decode_alone(payload, dsize):
    header = struct.pack("<BIQ", 0, 0x2000, dsize)
    d = lzma.LZMADecompressor(format=lzma.FORMAT_ALONE)
    return d.decompress(header + payload)


def main():
    image_path, order, src = sys.argv[1], sys.argv[2], sys.argv[3]
    e = "<" if order == "little" else ">"
    img = open(image_path, "rb").read()
    inodes = []  # (offset, ino, file offset, csize, dsize, compr, payload)
    names = {}  # ino -> (pino, name)
    p = 0
    while p + 12 <= len(img):
        magic, ntype, totlen, hcrc = struct.unpack_from(e + "HHII", img, p)
        if magic != 0x1985 or totlen < 12 or jffs2_crc(img[p:p + 8]) != hcrc:
            p += 4
            continue
        node = img[p:p + totlen]
        if ntype == 0xE002 and len(node) >= 68:
            (ino, _ver, _mode, _uid, _gid, _isize, _at, _mt, _ct, ofs, csize, dsize,
             compr, _ucompr, _flags, dcrc, ncrc) = struct.unpack_from(
                 e + "IIIHHIIIIIIIBBHII", node, 12)
            if jffs2_crc(node[:60]) == ncrc:
                payload = node[68:68 + csize]
                if jffs2_crc(payload) != dcrc:
                    print(f"node at 0x{p:08x}: data CRC fails")
                    return 1
                inodes.append((p, ino, ofs, csize, dsize, compr, payload))
        elif ntype == 0xE001 and len(node) >= 40:
            pino, _ver, ino, _mct, nsize = struct.unpack_from(e + "IIIIB", node, 12)
            if ino:
                names[ino] = (pino, node[40:40 + nsize].decode("utf-8", "surrogateescape"))
        p += (totlen + 3) & ~3

    def path_of(ino):
        parts = []
        while ino != 1:
            if ino not in names or len(parts) > 64:
                return None
            ino, name = names[ino]
            parts.append(name)
        return os.path.join(src, *reversed(parts))

    checked = 0
    for off, ino, fofs, csize, dsize, compr, payload in inodes:
        if compr != 8:
            continue
        out = decode_raw(payload, dsize)
        if len(out) != dsize:
            print(f"lzma node at 0x{off:08x}: {len(out)} bytes decoded, dsize {dsize}")
            return 1
        alone = decode_alone(payload, dsize)
        if alone != out:
            print(f"lzma node at 0x{off:08x}: the .lzma-header decode differs")
            return 1
        path = path_of(ino)
        if path is None:
            print(f"lzma node at 0x{off:08x}: no path for inode {ino}")
            return 1
        with open(path, "rb") as f:
            f.seek(fofs)
            want = f.read(dsize)
        if out != want:
            print(f"lzma node at 0x{off:08x}: {path}@{fofs} differs from the source")
            return 1
        checked += 1
    print(f"lzma nodes: {checked} verified")
    return 0


if __name__ == "__main__":
    sys.exit(main())
