#!/usr/bin/env python3
"""Regenerates fixtures/kernel/: JFFS2 images written by the Linux kernel itself.

  python3 tests/kernel/make-fixtures.py [--out fixtures/kernel] [--only NAME ...]
  python3 tests/kernel/make-fixtures.py --unmountable   # fixtures/kernel/unmountable/ alone

Every fixture starts from a small image (mtd-utils' mkfs.jffs2 of a tree generated here, or
plain erased flash), is mounted read-write by Debian's kernel under qemu (block2mtd), and then
either runs a workload and is unmounted cleanly ("dirty" images: obsolete nodes, deletion
dirents, GC'd and erased blocks, kernel-written summaries), or has its power cut in the middle of
writes ("powercut" images: the flash exactly as the cut left it).  A last boot mounts every
result read-only and records what the kernel shows: <name>.json holds that listing, the jffs2
kernel messages of that mount, and how the image was made.  See fixtures/kernel/README.md.

Power cuts are not deterministic (qemu's software emulation runs at varying speed); everything
else is as deterministic as the kernel's timestamps allow.
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

KIB = 1024
MIB = 1024 * 1024
EPOCH = 1700000000  # mtimes of the generated source trees

# ------------------------------------------------------------------------------------------
# Starting trees


def text(seed, n):
    words = ["flash ", "erase ", "block ", "node ", "inode ", "dirent ", "summary ", "gc\n"]
    out, i = [], seed
    size = 0
    while size < n:
        w = words[i % len(words)] + f"{i} "
        out.append(w)
        size += len(w)
        i = (i * 31 + 7) % 1009
    return "".join(out).encode()[:n]


def noise(seed, n):
    out = bytearray()
    h = hashlib.sha256(str(seed).encode()).digest()
    while len(out) < n:
        out += h
        h = hashlib.sha256(h).digest()
    return bytes(out[:n])


def make_tree(root):
    """A small tree with something of every kind."""
    files = {
        "etc/config": text(1, 700),
        "etc/hosts": b"127.0.0.1 localhost\n",
        "bin/tool": noise(2, 9000),
        "var/log/messages": text(3, 20000),
        "data/blob": noise(4, 30000),
        "data/notes.txt": text(5, 5000),
        "home/user/readme": b"hello\n",
    }
    for rel, data in files.items():
        p = os.path.join(root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    os.chmod(os.path.join(root, "bin/tool"), 0o755)
    os.symlink("../etc/config", os.path.join(root, "bin/config-link"))
    os.link(os.path.join(root, "data/blob"), os.path.join(root, "data/blob-link"))
    os.makedirs(os.path.join(root, "dev"))
    os.mkfifo(os.path.join(root, "dev/pipe"))
    if os.geteuid() == 0:
        os.mknod(os.path.join(root, "dev/null"), 0o20666, os.makedev(1, 3))
        os.chown(os.path.join(root, "home/user"), 1000, 1000)
        os.chown(os.path.join(root, "home/user/readme"), 1000, 1000)
    for dp, dns, fns in os.walk(root, topdown=False):
        for n in dns + fns:
            os.utime(os.path.join(dp, n), (EPOCH, EPOCH), follow_symlinks=False)
    os.utime(root, (EPOCH, EPOCH))


def mkfs(tree, out, erase, summary=False, extra=()):
    raw = out + ".raw" if summary else out
    subprocess.run(["mkfs.jffs2", "-r", tree, "-o", raw, "-e", str(erase), *extra], check=True)
    if summary:
        subprocess.run(["sumtool", "-i", raw, "-o", out, "-e", str(erase)], check=True)
        os.unlink(raw)


def erased(out, size):
    with open(out, "wb") as f:
        f.write(b"\xff" * size)


# ------------------------------------------------------------------------------------------
# Workloads (busybox sh, run with the mount point as cwd)

WORKLOAD_BASIC = r"""
# rename, delete, overwrite, truncate, hard links, device nodes, chown, chmod, symlinks
mv etc/hosts etc/hosts.old
mv var/log var/oldlog
rm data/notes.txt
rm bin/config-link
echo "rewritten" > etc/config
head -c 3000 data/blob > data/blob.head
truncate -s 1000 var/oldlog/messages
truncate -s 50000 data/blob.head
ln home/user/readme home/user/readme.hard
ln bin/tool bin/tool2
rm bin/tool
mknod dev/console c 5 1
mknod dev/sda b 8 0
mknod dev/ttyS0 c 4 64
rm dev/pipe
mkfifo dev/newpipe
chown 1000:100 etc/config
chown 0:0 home/user/readme
chmod 4711 bin/tool2
mkdir -p new/dir/deep
ln -s ../../etc/config new/dir/cfg
echo appended >> var/oldlog/messages
i=0; while [ $i -lt 20 ]; do echo "line $i $(echo $i | md5sum)" >> new/dir/deep/log; i=$((i+1)); done
rmdir new/dir/deep 2>/dev/null || true
sync
"""

# Enough rewriting to fill the partition several times: the kernel garbage-collects and erases.
WORKLOAD_GC = r"""
i=0
while [ $i -lt 60 ]; do
  j=0; : > churn.$((i % 4))
  while [ $j -lt 8 ]; do echo "$i $j $(echo $i.$j | md5sum) $(echo $j.$i | sha256sum)" >> churn.$((i % 4)); j=$((j+1)); done
  dd if=/dev/zero bs=1k count=$(( (i % 7) * 8 + 4 )) 2>/dev/null | tr '\000' "$(printf '\\%03o' $((65 + i % 26)))" > big.$((i % 3))
  [ $((i % 5)) = 0 ] && rm -f big.$(((i + 1) % 3))
  i=$((i+1))
done
mv churn.0 final-churn
rm -f churn.1
sync
"""

WORKLOAD_FRESH = r"""
# the kernel formats erased flash on the first rw mount, then these files are written
mkdir -p a/b c
i=0; while [ $i -lt 40 ]; do echo "record $i $(echo $i | md5sum)" >> a/b/records; i=$((i+1)); done
dd if=/dev/zero bs=1k count=30 2>/dev/null | tr '\000' 'z' > c/zzz
ln -s ../a/b/records c/records
ln c/zzz c/zzz.hard
mknod c/null c 1 3
chown 5:6 c
sync
"""

# Power-cut writers: run in the background until the power goes.
WRITER_APPEND = r"""
i=0
while true; do
  echo "entry $i $(echo $i | md5sum) $(echo $i | sha1sum)" >> var/log/messages
  dd if=/dev/zero bs=1k count=6 2>/dev/null | tr '\000' "$(printf '\\%03o' $((65 + i % 26)))" > data/chunk.$((i % 8))
  i=$((i+1))
done
"""

WRITER_RENAME = r"""
i=0
mkdir -p spool
while true; do
  echo "message $i $(echo $i | md5sum)" > spool/tmp.$i
  mv spool/tmp.$i spool/msg.$((i % 16))
  [ $((i % 3)) = 0 ] && rm -f spool/msg.$(((i + 5) % 16))
  [ $((i % 7)) = 0 ] && ln -f spool/msg.$((i % 16)) spool/link.$((i % 4))
  i=$((i+1))
done
"""

WRITER_GC = r"""
i=0
while true; do
  dd if=/dev/zero bs=1k count=$(( (i % 5) * 12 + 8 )) 2>/dev/null | tr '\000' "$(printf '\\%03o' $((97 + i % 26)))" > fill.$((i % 6))
  echo "$i $(echo $i | md5sum)" >> fill.log
  i=$((i+1))
done
"""

WRITER_TRUNCATE = r"""
i=0
while true; do
  truncate -s $(( (i % 9) * 3000 + 100 )) data/blob
  echo "tail $i $(echo $i | md5sum)" >> data/blob
  truncate -s $(( (i % 4) * 5000 )) var/log/messages
  i=$((i+1))
done
"""


def fixtures(tmp):
    """(name, start image path, erase size, partition, how, harness image options)."""
    tree = os.path.join(tmp, "tree")
    make_tree(tree)
    starts = {}

    def start(name, maker):
        p = os.path.join(tmp, name + ".start")
        maker(p)
        starts[name] = p
        return p

    f = []
    f.append(dict(name="dirty-workload-16k", kind="dirty", erase=16 * KIB, partition=1 * MIB,
                  start=start("a", lambda p: mkfs(tree, p, 16 * KIB)),
                  start_how="mkfs.jffs2 -e 16KiB of the generated tree (make_tree), padded to "
                            "1 MiB with 0xFF",
                  workload=WORKLOAD_BASIC))
    f.append(dict(name="dirty-gc-16k", kind="dirty", erase=16 * KIB, partition=512 * KIB,
                  start=start("b", lambda p: mkfs(tree, p, 16 * KIB, extra=["-n"])),
                  start_how="mkfs.jffs2 -n -e 16KiB (no cleanmarkers) of the generated tree, "
                            "padded to 512 KiB with 0xFF",
                  workload=WORKLOAD_GC))
    f.append(dict(name="dirty-summary-64k", kind="dirty", erase=64 * KIB, partition=1 * MIB,
                  start=start("c", lambda p: mkfs(tree, p, 64 * KIB, summary=True)),
                  start_how="mkfs.jffs2 -e 64KiB of the generated tree, then sumtool -e 64KiB, "
                            "padded to 1 MiB with 0xFF",
                  workload=WORKLOAD_BASIC + WORKLOAD_GC))
    f.append(dict(name="dirty-fresh-format-32k", kind="dirty", erase=32 * KIB, partition=1 * MIB,
                  start=start("d", lambda p: erased(p, 1 * MIB)),
                  start_how="1 MiB of erased flash (0xFF): the kernel formats it at mount",
                  workload=WORKLOAD_FRESH))
    f.append(dict(name="powercut-append-16k", kind="powercut", erase=16 * KIB,
                  partition=1 * MIB, start=starts["a"],
                  start_how=f[0]["start_how"], writer=WRITER_APPEND, delay=2.5))
    f.append(dict(name="powercut-rename-32k", kind="powercut", erase=32 * KIB,
                  partition=1 * MIB,
                  start=start("e", lambda p: mkfs(tree, p, 32 * KIB)),
                  start_how="mkfs.jffs2 -e 32KiB of the generated tree, padded to 1 MiB",
                  writer=WRITER_RENAME, delay=3.0))
    f.append(dict(name="powercut-gc-16k", kind="powercut", erase=16 * KIB, partition=512 * KIB,
                  start=starts["b"], start_how=f[1]["start_how"],
                  workload=WORKLOAD_GC, writer=WRITER_GC, delay=4.0))
    f.append(dict(name="powercut-truncate-summary-64k", kind="powercut", erase=64 * KIB,
                  partition=1 * MIB, start=starts["c"], start_how=f[2]["start_how"],
                  writer=WRITER_TRUNCATE, delay=2.0))
    return f


def tear_last_data_node(src, dst, erase):
    """Copies src to dst with the last data node of a partly written block half erased (0xFF).

    A power cut through qemu's page-cache writeback almost always lands between nodes, so the
    kernel-written power-cut images hold whole nodes.  A NOR write torn inside a node leaves its
    unprogrammed tail erased (0xFF); this makes one such node, and the kernel is then asked what
    it shows.  Returns a description of the cut."""
    with open(src, "rb") as f:
        img = bytearray(f.read())
    pad = lambda n: (n + 3) & ~3
    for blk in range(0, len(img), erase):
        ofs, last = blk, None
        while ofs + 12 <= blk + erase:
            magic = int.from_bytes(img[ofs:ofs + 2], "little")
            if magic != 0x1985:
                break
            ntype = int.from_bytes(img[ofs + 2:ofs + 4], "little")
            totlen = int.from_bytes(img[ofs + 4:ofs + 8], "little")
            if totlen < 12 or ofs + totlen > blk + erase:
                break
            last = (ofs, ntype, totlen)
            ofs += pad(totlen)
        rest = img[ofs:blk + erase]
        if last and rest and rest == b"\xff" * len(rest) and last[1] == 0xE002 \
                and last[2] > 68 + 200:
            node, _t, totlen = last
            cut = node + 68 + (totlen - 68) // 2
            img[cut:node + totlen] = b"\xff" * (node + totlen - cut)
            with open(dst, "wb") as f:
                f.write(img)
            return (f"copy of {os.path.basename(src)} whose inode (data) node at 0x{node:08x} "
                    f"(totlen 0x{totlen:x}) was erased to 0xFF from 0x{cut:08x} on, as a write "
                    f"torn in the middle of its data would leave it")
    return None


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap.add_argument("--out", default=os.path.join(root, "fixtures", "kernel"))
    ap.add_argument("--only", nargs="*", help="regenerate only these fixtures")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    t_all = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="j2h-fixtures-") as tmp:
        fx = fixtures(tmp)
        if a.only:
            only = set(a.only)
            if "powercut-torn-node-16k" in only:  # derived from it
                only.add("powercut-append-16k")
            fx = [f for f in fx if f["name"] in only]
        # 1. the kernel writes: dirty workloads first, then power cuts (one boot each)
        images = []
        for f in sorted(fx, key=lambda f: f["kind"] == "powercut"):
            im = {"id": f["name"], "path": f["start"], "erase_size": f["erase"],
                  "pad_to": f["partition"], "mode": "rw",
                  "output": os.path.join(a.out, f["name"] + ".img")}
            if f.get("workload"):
                im["workload"] = f["workload"]
            if f["kind"] == "powercut":
                im["power_cut"] = {"writer": f["writer"], "delay": f["delay"]}
            else:
                im["remount"] = True
            images.append(im)
        spec = {"timeout": 600, "images": images}
        t0 = time.monotonic()
        out = harness.run(spec, os.path.join(tmp, "work"))
        write_secs = round(time.monotonic() - t0, 1)
        written = {r["id"]: r for r in out["results"]}
        for r in out["results"]:
            want = "power-cut" if r["id"].startswith("powercut") else "done"
            if r["status"] != want or not r.get("mount_ok"):
                sys.exit(f"{r['id']}: status {r['status']}, mount_ok {r.get('mount_ok')}: "
                         f"{json.dumps(out['boots'], indent=1)[-3000:]}")
            if r.get("workload_rc", 0) != 0:
                sys.exit(f"{r['id']}: workload failed:\n{r.get('workload_output')}")
        # 1b. derived: a write torn inside a node
        for f in [f for f in fx if f["name"] == "powercut-append-16k"]:
            name = "powercut-torn-node-16k"
            dst = os.path.join(a.out, name + ".img")
            how = tear_last_data_node(os.path.join(a.out, f["name"] + ".img"), dst, f["erase"])
            if how:
                fx.append(dict(f, name=name, kind="powercut-derived", start_how=how,
                               writer=None, delay=None, derived_from=f["name"]))
                written[name] = {"jffs2_messages": None}
        # 2. what the kernel shows: a fresh read-only mount of every result
        verify = {"timeout": 600, "images": [
            {"id": f["name"], "path": os.path.join(a.out, f["name"] + ".img"),
             "erase_size": f["erase"], "mode": "ro"} for f in fx]}
        t0 = time.monotonic()
        seen = harness.run(verify, os.path.join(tmp, "verify"))
        verify_secs = round(time.monotonic() - t0, 1)
        for f, r in zip(fx, seen["results"]):
            w = written[f["name"]]
            if f["kind"] == "dirty":
                same = w.get("remount", {}).get("listing") == r.get("listing")
                if not same:
                    print(f"WARNING {f['name']}: the remount in the writing boot and the fresh "
                          f"mount differ", file=sys.stderr)
            img = os.path.join(a.out, f["name"] + ".img")
            meta = {
                "image": f["name"] + ".img",
                "sha256": sha256(img),
                "size": os.path.getsize(img),
                "erase_size": f["erase"],
                "kind": f["kind"],
                "kernel": seen["kernel"],
                "made": {
                    "start": f["start_how"],
                    "derived_from": f.get("derived_from"),
                    "workload": f.get("workload"),
                    "power_cut_writer": f.get("writer"),
                    "power_cut_delay_seconds": f.get("delay"),
                    "power_cut_at_guest_uptime": w.get("power_cut_at"),
                    "writing_mount_messages": w.get("jffs2_messages"),
                    "date": time.strftime("%Y-%m-%d", time.gmtime()),
                },
                "mount": {
                    "options": "ro",
                    "mount_ok": r.get("mount_ok"),
                    "kernel_messages": r.get("jffs2_messages"),
                },
                "listing": r.get("listing"),
            }
            with open(os.path.join(a.out, f["name"] + ".json"), "w") as fh:
                json.dump(meta, fh, indent=1, ensure_ascii=False)
                fh.write("\n")
            msgs = harness.bad_messages(r.get("jffs2_messages") or [])
            print(f"{f['name']}: mount={'ok' if r.get('mount_ok') else 'FAILED'} "
                  f"entries={len(r.get('listing') or [])} messages={len(msgs)}")
    print(f"kernel writes: {write_secs}s, verification mount: {verify_secs}s, "
          f"total {round(time.monotonic() - t_all, 1)}s")


# ------------------------------------------------------------------------------------------
# An image Linux writes and then cannot mount (fixtures/kernel/unmountable/)

# Files created, rewritten and deleted: enough to fill mkfs.jffs2's last, partly written block,
# so that the kernel closes it with a summary of its own, and little enough (compressible data)
# that the garbage collector does not erase that block first (incompressible data in a 512 KiB
# partition does, and the image then mounts).
WORKLOAD_UNMOUNTABLE = r"""
i=0
while [ $i -lt 30 ]; do
  echo "record $i $(echo $i | md5sum)" > new.$((i % 5))
  dd if=/dev/zero bs=1k count=$(( (i % 4) * 3 + 1 )) 2>/dev/null > blob.$((i % 3))
  [ $((i % 4)) = 0 ] && rm -f new.$(((i + 2) % 5))
  i=$((i+1))
done
rm -f data/notes.txt
sync
"""

UNMOUNTABLE = "summary-bug-64k"


def console_messages(path):
    """The oops of a boot's console, its jffs2 lines (timestamps dropped).  The guest boots
    with loglevel=1: the BUG() shows as "invalid opcode" (ud2) with its RIP and call trace;
    "kernel BUG at fs/jffs2/nodelist.c:622" and jffs2's own error are below that level."""
    keep = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\r\n")
            text = line.split("] ", 1)[1] if line.startswith("[") and "] " in line else line
            if "jffs2" in text or "kernel BUG at" in text or text.startswith("invalid opcode"):
                keep.append(text)
    return keep


def make_unmountable(out_dir):
    """mkfs.jffs2 -n -e 64KiB of the generated tree, padded to 512 KiB; a rw mount writes and
    deletes files and is unmounted cleanly; a fresh read-only mount then hits a kernel BUG in
    jffs2_link_node_ref.  Writes <out_dir>/summary-bug-64k.img and .json (the BUG as the
    console printed it, and the boot that wrote the image)."""
    os.makedirs(out_dir, exist_ok=True)
    img = os.path.join(out_dir, UNMOUNTABLE + ".img")
    with tempfile.TemporaryDirectory(prefix="j2h-unmountable-") as tmp:
        tree = os.path.join(tmp, "tree")
        make_tree(tree)
        start = os.path.join(tmp, "start.img")
        mkfs(tree, start, 64 * KIB, extra=["-n"])
        write = {"timeout": 600, "images": [{
            "id": UNMOUNTABLE, "path": start, "erase_size": 64 * KIB, "pad_to": 512 * KIB,
            "mode": "rw", "workload": WORKLOAD_UNMOUNTABLE, "output": img}]}
        w = harness.run(write, os.path.join(tmp, "work"))["results"][0]
        if w["status"] != "done" or not w.get("mount_ok"):
            sys.exit(f"the writing boot failed: {w}")
        console = os.path.join(tmp, "console.txt")
        verify = {"timeout": 120, "keep_console": console, "images": [{
            "id": UNMOUNTABLE, "path": img, "erase_size": 64 * KIB, "mode": "ro"}]}
        seen = harness.run(verify, os.path.join(tmp, "verify"))
        r = seen["results"][0]
        printed = console_messages(console)
    if r.get("mount_ok") or not any("jffs2_link_node_ref" in m for m in printed):
        sys.exit(f"Linux mounted the image: {r}")
    meta = {
        "image": UNMOUNTABLE + ".img",
        "sha256": sha256(img),
        "size": os.path.getsize(img),
        "erase_size": 64 * KIB,
        "kind": "unmountable",
        "kernel": seen["kernel"],
        "made": {
            "start": "mkfs.jffs2 -n -e 64KiB (no cleanmarkers) of the generated tree, padded "
                     "to 512 KiB with 0xFF",
            "workload": WORKLOAD_UNMOUNTABLE,
            "writing_mount_messages": w.get("jffs2_messages"),
            "date": time.strftime("%Y-%m-%d", time.gmtime()),
        },
        "mount": {"options": "ro", "mount_ok": False, "console": printed},
    }
    with open(os.path.join(out_dir, UNMOUNTABLE + ".json"), "w") as fh:
        json.dump(meta, fh, indent=1, ensure_ascii=False)
        fh.write("\n")
    print(f"{UNMOUNTABLE}: mount FAILED as expected; {len(printed)} console lines kept")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--unmountable"]:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        make_unmountable(os.path.join(root, "fixtures", "kernel", "unmountable"))
    else:
        main()
