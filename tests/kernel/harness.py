#!/usr/bin/env python3
"""Kernel conformance harness: mount JFFS2 images with the real Linux driver under qemu.

Debian's kernel (JFFS2 as a module, with summary, xattr, zlib, lzo, rtime) boots under qemu's
software emulation (TCG; KVM guests hang on these machines).  Each image becomes a virtio disk,
block2mtd turns it into an MTD device, and the guest mounts it, optionally runs a shell workload
or cuts the power in the middle of writes, lists every entry and returns the jffs2 kernel
messages.  Several images share one boot.

Only the Python standard library is used.  Sub-commands (all print JSON or a plain report):

  setup                      install/fetch qemu, busybox-static, the kernel; build the initramfs
  run   --spec S [--out R]   boot, handle every image of spec S, write results JSON
  check --spec S [--out R]   run, then compare each image having "expect_dir" with that tree
  list-host DIR              listing of a host directory (same form as the guest's)
  compare --result R --index N --dir DIR   compare one image's guest listing with DIR
  verify-fixtures --dir fixtures/kernel [--out R]   mount every fixture ro; listing/messages
                                                    as recorded (R: the boot's results)

Spec (JSON):
  {"timeout": 240,                # seconds per boot (optional)
   "images": [{
     "id": "name",               # optional, default img<N>
     "path": "in.img",           # the image; never modified unless output == path
     "output": "out.img",        # optional: keep the booted image (flash as left) here
     "erase_size": 65536,        # block2mtd erase size (bytes); required
     "pad_to": 1048576,          # optional partition size; padded with 0xFF (never zeros).
                                 # Default: rounded up to the erase size, at least 5 blocks.
     "mode": "ro" | "rw",        # default ro ("rw" if a workload or power cut is given)
     "workload": "sh script",    # optional, run with cwd = mount point, before listing
     "power_cut": {"writer": "sh script", "delay": 2.0},  # optional; ends the boot
     "remount": true,            # optional: after umount, mount ro again and list again
     "settle": true,             # rw: wait for the GC thread to go idle before list/umount
     "list": true,               # optional: list the mounted fs (default true)
     "expect_dir": "/host/dir",  # check: compare the final listing with this tree
     "compare_ignore": ["mtime"] # check: fields not to compare
   }]}

Exit codes: 0 ok; 1 a check found differences or a mount/log failure; 2 usage or harness error;
3 the kernel suite's infrastructure (qemu, kernel, busybox) is unavailable.
"""

import argparse
import contextlib
import fcntl
import hashlib
import json
import lzma
import zlib
import gzip
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time

MARK = "@@J2H@@"
MODULES = ["virtio_ring", "virtio", "virtio_pci_modern_dev", "virtio_pci_legacy_dev",
           "virtio_pci", "virtio_blk", "mtd", "jffs2", "block2mtd"]
# qemu and busybox for the guest; mtd-utils for the tests' reference images (mkfs.jffs2, sumtool)
PACKAGES = ["qemu-system-x86", "busybox-static", "mtd-utils"]
INITRAMFS_VERSION = "4"  # bump when the base initramfs layout changes
MAX_IMAGES_PER_BOOT = 16
DEFAULT_TIMEOUT = 300


class Unavailable(Exception):
    """The infrastructure (qemu, kernel, busybox) cannot be obtained."""


def log(msg):
    print(f"[kernel-harness] {msg}", file=sys.stderr, flush=True)


def cache_dir():
    d = os.environ.get("JFFS2_KERNEL_CACHE")
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "jffs2-tools-kernel")
    os.makedirs(d, exist_ok=True)
    return d


@contextlib.contextmanager
def cache_lock():
    with open(os.path.join(cache_dir(), ".lock"), "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


# --------------------------------------------------------------------------------------------
# Setup: packages, kernel, initramfs

def dpkg_installed(pkg):
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", pkg], capture_output=True, text=True)
    return r.returncode == 0 and "install ok installed" in r.stdout


def ensure_packages():
    missing = [p for p in PACKAGES if not dpkg_installed(p)]
    if not missing:
        return
    if os.geteuid() != 0:
        raise Unavailable(f"packages missing and not root: {' '.join(missing)}")
    log(f"installing {' '.join(missing)}")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + missing
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        # the package lists may be missing on a fresh machine
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True,
                       stdin=subprocess.DEVNULL)
        r = subprocess.run(cmd, env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        raise Unavailable(f"apt-get install {' '.join(missing)} failed: {r.stderr.strip()[-500:]}")


def kernel_package_name():
    """The image package that linux-image-amd64 depends on (e.g. linux-image-6.1.0-57-amd64)."""
    r = subprocess.run(["apt-cache", "depends", "linux-image-amd64"], capture_output=True,
                       text=True)
    for line in r.stdout.splitlines():
        m = re.match(r"\s*Depends:\s*(linux-image-\S+)", line)
        if m:
            return m.group(1)
    return None


def ensure_kernel():
    """Returns (kernel dir, vmlinuz path, modules dir)."""
    kroot = os.path.join(cache_dir(), "kernels")
    os.makedirs(kroot, exist_ok=True)
    pkg = os.environ.get("JFFS2_KERNEL_PACKAGE") or kernel_package_name()
    if pkg is None:
        have = sorted(d for d in os.listdir(kroot) if os.path.exists(os.path.join(kroot, d, ".done")))
        if not have:
            raise Unavailable("cannot resolve linux-image-amd64's kernel package (apt-cache) "
                              "and no kernel is cached")
        pkg = have[-1]
    kdir = os.path.join(kroot, pkg)
    if not os.path.exists(os.path.join(kdir, ".done")):
        shutil.rmtree(kdir, ignore_errors=True)
        tmp = tempfile.mkdtemp(dir=kroot, prefix=".dl-")
        try:
            log(f"downloading {pkg}")
            r = subprocess.run(["apt-get", "download", "-q", pkg], cwd=tmp, capture_output=True,
                               text=True, stdin=subprocess.DEVNULL)
            debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
            if r.returncode != 0 or not debs:
                subprocess.run(["apt-get", "update", "-q"], capture_output=True,
                               stdin=subprocess.DEVNULL)
                r = subprocess.run(["apt-get", "download", "-q", pkg], cwd=tmp,
                                   capture_output=True, text=True, stdin=subprocess.DEVNULL)
                debs = [f for f in os.listdir(tmp) if f.endswith(".deb")]
            if r.returncode != 0 or not debs:
                raise Unavailable(f"apt-get download {pkg} failed: {r.stderr.strip()[-500:]}")
            os.makedirs(kdir)
            r = subprocess.run(["dpkg-deb", "-x", os.path.join(tmp, debs[0]), kdir],
                               capture_output=True, text=True)
            if r.returncode != 0:
                raise Unavailable(f"dpkg -x {debs[0]} failed: {r.stderr.strip()}")
            prune_modules(kdir)
            with open(os.path.join(kdir, ".done"), "w") as f:
                f.write(debs[0] + "\n")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    vml = [f for f in os.listdir(os.path.join(kdir, "boot")) if f.startswith("vmlinuz-")]
    if not vml:
        raise Unavailable(f"no vmlinuz in {kdir}/boot")
    mods = os.path.join(kdir, "lib", "modules")
    ver = sorted(os.listdir(mods))[-1]
    return kdir, boot_kernel(kdir, os.path.join(kdir, "boot", vml[0])), os.path.join(mods, ver)


def boot_kernel(kdir, vmlinuz):
    """The file to give qemu's -kernel.

    Decompressing an xz bzImage under TCG takes about 6 of a boot's 12 seconds.  A kernel built
    with CONFIG_PVH can be booted as the uncompressed ELF vmlinux instead (qemu uses the PVH entry
    point), so the ELF is extracted once from the bzImage's payload and cached."""
    if os.environ.get("JFFS2_KERNEL_NO_PVH"):
        return vmlinuz
    out = os.path.join(kdir, "vmlinux.pvh")
    if os.path.exists(out):
        return out
    cfg = [f for f in os.listdir(os.path.join(kdir, "boot")) if f.startswith("config-")]
    try:
        with open(os.path.join(kdir, "boot", cfg[0])) as f:
            if "CONFIG_PVH=y" not in f.read().split("\n"):
                return vmlinuz
        with open(vmlinuz, "rb") as f:
            data = f.read()
        elf = None
        i = data.find(b"\xfd7zXZ\x00")
        if i >= 0:
            elf = lzma.LZMADecompressor().decompress(data[i:])
        else:
            i = data.find(b"\x1f\x8b\x08\x00")
            if i >= 0:
                elf = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[i:])
        if not elf or elf[:4] != b"\x7fELF":
            return vmlinuz
    except (OSError, IndexError, lzma.LZMAError, zlib.error):
        return vmlinuz
    with open(out + ".tmp", "wb") as f:
        f.write(elf)
    os.rename(out + ".tmp", out)
    return out


def prune_modules(kdir):
    """Keeps only the modules the initramfs needs (the package unpacks to ~400 MB)."""
    keep = set(MODULES)
    for dp, _dn, fns in os.walk(os.path.join(kdir, "lib", "modules")):
        for fn in fns:
            m = re.match(r"(.+)\.ko(\.xz|\.gz|\.zst)?$", fn)
            if m and m.group(1).replace("-", "_") not in keep:
                os.unlink(os.path.join(dp, fn))
    shutil.rmtree(os.path.join(kdir, "usr"), ignore_errors=True)


def find_modules(moddir):
    """Returns [(name, bytes)] in insertion order; built-in modules are skipped."""
    index = {}
    for dp, _dn, fns in os.walk(os.path.join(moddir, "kernel")):
        for fn in fns:
            m = re.match(r"(.+)\.ko(\.xz|\.gz|\.zst)?$", fn)
            if m:
                index[m.group(1).replace("-", "_")] = os.path.join(dp, fn)
    builtin = set()
    bpath = os.path.join(moddir, "modules.builtin")
    if os.path.exists(bpath):
        with open(bpath) as f:
            for line in f:
                builtin.add(os.path.basename(line.strip()).split(".ko")[0].replace("-", "_"))
    out = []
    for name in MODULES:
        path = index.get(name)
        if path is None:
            if name in builtin:
                log(f"module {name} is built in: skipped")
                continue
            raise Unavailable(f"module {name} neither in {moddir} nor built in")
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".xz"):
            data = lzma.decompress(data)
        elif path.endswith(".gz"):
            data = gzip.decompress(data)
        elif path.endswith(".zst"):
            r = subprocess.run(["zstd", "-dc", path], capture_output=True)
            if r.returncode != 0:
                raise Unavailable(f"cannot decompress {path} (zstd missing?)")
            data = r.stdout
        out.append((name, data))
    return out


class Cpio:
    """Writer of the newc cpio format (what the kernel unpacks as an initramfs)."""

    def __init__(self):
        self.buf = bytearray()
        self.ino = 1000

    def _entry(self, name, mode, data=b"", nlink=1):
        self.ino += 1
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            self.ino, mode, 0, 0, nlink, 0, len(data), 0, 0, 0, 0, len(nb), 0))
        self.buf += hdr.encode() + nb
        self.buf += b"\0" * (-len(self.buf) % 4)
        self.buf += data
        self.buf += b"\0" * (-len(self.buf) % 4)

    def dir(self, name, perm=0o755):
        self._entry(name, stat.S_IFDIR | perm, nlink=2)

    def file(self, name, data, perm=0o644):
        self._entry(name, stat.S_IFREG | perm, data)

    def symlink(self, name, target):
        self._entry(name, stat.S_IFLNK | 0o777, target.encode())

    def finish(self):
        self._entry("TRAILER!!!", 0)
        self.buf += b"\0" * (-len(self.buf) % 512)
        return bytes(self.buf)


INIT = r"""#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
for m in MODLIST; do
  insmod /lib/modules/$m.ko || echo "@@J2H@@ INSMOD-FAIL $m"
done
echo "@@J2H@@ READY $(cut -d' ' -f1 /proc/uptime)"
if [ -f /job.sh ]; then sh /job.sh; else echo "@@J2H@@ NOJOB"; fi
echo "@@J2H@@ DONE $(cut -d' ' -f1 /proc/uptime)"
sync
poweroff -f
"""


def busybox_path():
    for p in ("/bin/busybox", "/usr/bin/busybox"):
        if os.path.exists(p):
            with open(p, "rb") as f:
                head = f.read(4096)
            if b"ld-linux" not in head and b"/lib64/ld" not in head:
                return p
    raise Unavailable("no static busybox (install busybox-static)")


def ensure_initramfs(kdir, moddir):
    out = os.path.join(kdir, f"initramfs-v{INITRAMFS_VERSION}.cpio")
    if os.path.exists(out):
        return out
    bb = busybox_path()
    applets = subprocess.run([bb, "--list"], capture_output=True, text=True).stdout.split()
    mods = find_modules(moddir)
    xattrs = build_xattr_helper()
    c = Cpio()
    for d in ("bin", "sbin", "dev", "proc", "sys", "mnt", "tmp", "lib", "lib/modules", "w"):
        c.dir(d)
    with open(bb, "rb") as f:
        c.file("bin/busybox", f.read(), 0o755)
    for a in applets:
        if a in ("busybox", "[[") or "/" in a:
            continue
        c.symlink(f"bin/{a}", "busybox")
    c.symlink("bin/[[", "busybox")
    for name, data in mods:
        c.file(f"lib/modules/{name}.ko", data)
    if xattrs:
        c.file("bin/j2h-xattrs", xattrs, 0o755)
    init = INIT.replace("MODLIST", " ".join(n for n, _ in mods))
    c.file("init", init.encode(), 0o755)
    tmp = out + ".tmp"
    with open(tmp, "wb") as f:
        f.write(c.finish())
    os.rename(tmp, out)
    return out


def build_xattr_helper():
    """Static build of xattrs.c (busybox has no getfattr); None without a C compiler."""
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "xattrs.c")
    cc = shutil.which("gcc") or shutil.which("cc")
    if not cc or not os.path.exists(src):
        log("no C compiler: guest listings will not include extended attributes")
        return None
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "xattrs")
        r = subprocess.run([cc, "-static", "-O2", "-o", out, src], capture_output=True, text=True)
        if r.returncode != 0:
            log(f"static build of xattrs.c failed, no xattrs in listings: {r.stderr[-300:]}")
            return None
        with open(out, "rb") as f:
            return f.read()


def setup():
    """Returns dict(kernel, initramfs, qemu)."""
    with cache_lock():
        ensure_packages()
        qemu = shutil.which("qemu-system-x86_64")
        if not qemu:
            raise Unavailable("qemu-system-x86_64 not found")
        kdir, vmlinuz, moddir = ensure_kernel()
        initrd = ensure_initramfs(kdir, moddir)
    return {"qemu": qemu, "kernel": vmlinuz, "initramfs": initrd, "modules": moddir}


# --------------------------------------------------------------------------------------------
# Guest job script

def shq(s):
    return "'" + s.replace("'", "'\\''") + "'"


LIST_FN = r"""
j2h_list() { # $1 = tag; lists the cwd
  echo "@@J2H@@ LIST-BEGIN $1"
  find . -exec stat -c '@@J2H@@E %f %u %g %s %h %i %t %T %Y %n' {} +
  echo "@@J2H@@ LINKS $1"
  find . -type l -exec stat -c '@@J2H@@L %N' {} +
  echo "@@J2H@@ MD5 $1"
  find . -type f -exec md5sum {} +
  if [ -x /bin/j2h-xattrs ]; then
    echo "@@J2H@@ XATTRS $1"
    find . -exec j2h-xattrs {} +
  fi
  echo "@@J2H@@ LIST-END $1"
}
j2h_log() { # $1 = tag
  echo "@@J2H@@ LOG-BEGIN $1"
  dmesg -r -c
  echo "@@J2H@@ LOG-END $1"
}
j2h_now() { cut -d' ' -f1 /proc/uptime; }
j2h_settle() { # $1 = mtdN: wait until its GC thread stops running passes (max ~60 s)
  gp=""
  for p in /proc/[0-9]*; do
    [ "$(cat $p/comm 2>/dev/null)" = "jffs2_gcd_$1" ] && gp=$p
  done
  [ -n "$gp" ] || return 0
  last=""; same=0; n=0
  while [ $same -lt 2 ] && [ $n -lt 200 ]; do
    cur=$(grep ctxt_switches $gp/status 2>/dev/null | tr -d ' \t\n')
    if [ "$cur" = "$last" ]; then same=$((same+1)); else same=0; fi
    last=$cur; n=$((n+1)); usleep 300000
  done
}
j2h_dev() { # $1 = serial -> /dev/vdX
  n=0
  while [ $n -lt 200 ]; do
    for b in /sys/block/vd*; do
      if [ -f $b/serial ] && [ "$(cat $b/serial)" = "$1" ] && [ -e /dev/${b##*/} ]; then
        echo /dev/${b##*/}; return 0
      fi
    done
    n=$((n+1)); usleep 50000
  done
  return 1
}
"""


def job_script(images, cpio):
    """Shell script for one boot; workload and writer scripts go into cpio as /w/<i>.*.sh"""
    s = [LIST_FN]
    for i, im in enumerate(images):
        tag = str(i)
        mnt = f"/mnt/{i}"
        opts = im["mode"]
        s.append(f"""
echo "@@J2H@@ IMAGE-BEGIN {tag}"
dmesg -c >/dev/null
dev=$(j2h_dev j2h{i})
if [ -z "$dev" ]; then echo "@@J2H@@ NODEV {tag}"; else
echo "$dev,{im['erase_size']}" > /sys/module/block2mtd/parameters/block2mtd
mtd=$(grep "\\"block2mtd: $dev\\"" /proc/mtd | cut -d: -f1)
echo "@@J2H@@ MTD {tag} $mtd"
mkdir -p {mnt}
t0=$(j2h_now)
mount -t jffs2 -o {opts} $mtd {mnt}
rc=$?
t1=$(j2h_now)
echo "@@J2H@@ MOUNT {tag} $rc $t0 $t1"
if [ $rc = 0 ]; then
  cd {mnt}""")
        if im.get("power_cut"):
            s.append("  echo 1 > /proc/sys/vm/dirty_writeback_centisecs")
            s.append("  echo 1 > /proc/sys/vm/dirty_expire_centisecs")
        if im.get("workload"):
            cpio.file(f"w/{i}.work.sh", im["workload"].encode(), 0o755)
            s.append(f"""  echo "@@J2H@@ WORK-BEGIN {tag} $(j2h_now)"
  sh -e /w/{i}.work.sh 2>&1
  wrc=$?
  cd {mnt}
  echo "@@J2H@@ WORK-END {tag} $wrc $(j2h_now)\"""")
        if im.get("power_cut"):
            pc = im["power_cut"]
            cpio.file(f"w/{i}.writer.sh", pc["writer"].encode(), 0o755)
            s.append(f"""  j2h_log {tag}
  sh /w/{i}.writer.sh > /dev/null 2>&1 &
  sleep {float(pc.get('delay', 2.0))}
  echo "@@J2H@@ POWERCUT {tag} $(j2h_now)"
  echo b > /proc/sysrq-trigger
  sleep 30
fi; fi""")
            # nothing after a power cut runs
            return "\n".join(s) + "\n"
        if im["mode"] == "rw" and im.get("settle", True):
            # Let the GC thread finish its pending erases first: umount SIGKILLs it, and an
            # erase in progress then fails on block2mtd with -EINTR ("Erase at … failed
            # immediately: errno -4"), leaving blocks unerased.
            s.append(f"  t0=$(j2h_now); j2h_settle $mtd\n"
                     f"  echo \"@@J2H@@ SETTLE {tag} $t0 $(j2h_now)\"")
        if im.get("list", True):
            s.append(f"  j2h_list {tag}")
        s.append(f"""  cd /
  t0=$(j2h_now); umount {mnt}; urc=$?
  echo "@@J2H@@ UMOUNT {tag} $urc $t0 $(j2h_now)\"""")
        if im.get("remount"):
            s.append(f"""  j2h_log {tag}
  t0=$(j2h_now)
  mount -t jffs2 -o ro $mtd {mnt}
  rc=$?
  echo "@@J2H@@ REMOUNT {tag} $rc $t0 $(j2h_now)"
  if [ $rc = 0 ]; then
    cd {mnt}; j2h_list {tag}r; cd /; umount {mnt}
  fi
  j2h_log {tag}r""")
        s.append(f"""fi
fi
sync
j2h_log {tag}
echo "@@J2H@@ IMAGE-END {tag}\"""")
    return "\n".join(s) + "\n"


# --------------------------------------------------------------------------------------------
# Parsing the console

TYPE_BY_FMT = {stat.S_IFREG: "file", stat.S_IFDIR: "dir", stat.S_IFLNK: "symlink",
               stat.S_IFIFO: "fifo", stat.S_IFCHR: "char", stat.S_IFBLK: "block",
               stat.S_IFSOCK: "socket"}


def norm_path(p):
    if p == ".":
        return "."
    return p[2:] if p.startswith("./") else p


def parse_listing(lines):
    """lines between LIST-BEGIN and LIST-END -> list of entry dicts."""
    entries, links, md5s = {}, {}, {}
    xattrs_listed = False
    section = "E"
    last = None  # (kind, key) for continuation lines (names with newlines)
    for raw in lines:
        if raw.startswith(MARK + " LINKS"):
            section = "L"; last = None; continue
        if raw.startswith(MARK + " MD5"):
            section = "M"; last = None; continue
        if raw.startswith(MARK + " XATTRS"):
            section = "X"; last = None; xattrs_listed = True; continue
        if section == "X":
            if raw.startswith(MARK + "X "):
                _, hp, name, hv = raw.split(" ")
                p = norm_path(bytes.fromhex(hp).decode("utf-8", "surrogateescape"))
                if p in entries:
                    entries[p].setdefault("xattrs", {})[name] = "" if hv == "-" else hv
            continue
        if section == "E":
            if raw.startswith(MARK + "E "):
                f = raw[len(MARK) + 2:].split(" ", 9)
                mode = int(f[0], 16)
                e = {"path": norm_path(f[9]),
                     "type": TYPE_BY_FMT.get(stat.S_IFMT(mode), "unknown"),
                     "mode": f"{stat.S_IMODE(mode):04o}",
                     "uid": int(f[1]), "gid": int(f[2]), "size": int(f[3]),
                     "nlink": int(f[4]), "ino": int(f[5]),
                     "mtime": int(f[8])}
                if e["type"] in ("char", "block"):
                    e["rdev"] = f"{int(f[6], 16)}:{int(f[7], 16)}"
                entries[e["path"]] = e
                last = e
            elif last is not None:  # a name containing a newline
                del entries[last["path"]]
                last["path"] += "\n" + raw
                entries[last["path"]] = last
        elif section == "L":
            if raw.startswith(MARK + "L "):
                links_raw = raw[len(MARK) + 2:]
                last = [links_raw]
                links[id(last)] = last
            elif last is not None:
                last[0] += "\n" + raw
        elif section == "M":
            m = re.match(r"^([0-9a-f]{32})  (.*)$", raw)
            if m:
                last = [m.group(1), m.group(2)]
                md5s[id(last)] = last
            elif last is not None:
                last[1] += "\n" + raw
    for hsh, p in md5s.values():
        p = norm_path(p)
        if p in entries:
            entries[p]["md5"] = hsh
    # busybox: 'NAME' -> 'TARGET' (no escaping): match against the known symlink names
    for (txt,) in links.values():
        for e in entries.values():
            if e["type"] != "symlink" or "target" in e:
                continue
            for cand in ("./" + e["path"], e["path"]):
                pre = "'" + cand + "' -> '"
                if txt.startswith(pre) and txt.endswith("'"):
                    e["target"] = txt[len(pre):-1]
                    break
            if "target" in e:
                break
    if xattrs_listed:
        for e in entries.values():
            e.setdefault("xattrs", {})
    return finish_listing(list(entries.values()))


def finish_listing(entries):
    """Hard-link groups from inode numbers; drop the inode numbers; sort."""
    by_ino = {}
    for e in entries:
        if e["type"] != "dir":
            by_ino.setdefault(e["ino"], []).append(e["path"])
    for e in entries:
        if e["type"] != "dir":
            grp = sorted(by_ino[e["ino"]])
            if len(grp) > 1:
                e["links"] = grp
        del e["ino"]
    entries.sort(key=lambda e: e["path"])
    return entries


LEVELS = ["emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"]


def parse_log(lines):
    out = []
    for l in lines:
        m = re.match(r"^<(\d+)>(?:\[\s*[\d.]+\]\s*)?(.*)$", l)
        if m:
            lvl = int(m.group(1)) & 7
            out.append({"level": LEVELS[lvl], "msg": m.group(2)})
        elif out:
            out[-1]["msg"] += "\n" + l
    return out


def jffs2_messages(log_entries):
    return [e for e in log_entries
            if re.search(r"jffs2|block2mtd", e["msg"], re.I)]


def parse_console(text, images):
    """Splits the console text into per-image results."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    # a marker may follow terminal escapes or firmware text on the same console line
    lines = [l[l.find(MARK):] if MARK in l else l for l in lines]
    res = [{"id": im["id"], "status": "not-reached", "mount_ok": False} for im in images]
    boot = {"ready": None, "done": None, "insmod_failures": []}
    i = 0
    cur = None

    def collect(end_prefix):
        nonlocal i
        got = []
        i += 1
        while i < len(lines) and not lines[i].startswith(end_prefix):
            got.append(lines[i])
            i += 1
        return got

    while i < len(lines):
        line = lines[i]
        if not line.startswith(MARK + " "):
            i += 1
            continue
        f = line[len(MARK) + 1:].split(" ")
        kind = f[0]
        if kind == "READY":
            boot["ready"] = float(f[1])
        elif kind == "DONE":
            boot["done"] = float(f[1])
        elif kind == "INSMOD-FAIL":
            boot["insmod_failures"].append(f[1])
        elif kind == "IMAGE-BEGIN":
            cur = res[int(f[1])]
            cur["status"] = "started"
            cur["kernel_log"] = []
        elif kind == "NODEV":
            res[int(f[1])]["status"] = "no-device"
        elif kind == "MTD":
            res[int(f[1])]["mtd"] = f[2] if len(f) > 2 else ""
        elif kind in ("MOUNT", "REMOUNT"):
            r = res[int(f[1])]
            d = {"rc": int(f[2]), "seconds": round(float(f[4]) - float(f[3]), 2)}
            if kind == "MOUNT":
                r["mount_ok"] = d["rc"] == 0
                r["mount_seconds"] = d["seconds"]
            else:
                r.setdefault("remount", {}).update(
                    {"mount_ok": d["rc"] == 0, "mount_seconds": d["seconds"]})
        elif kind == "WORK-BEGIN":
            r = res[int(f[1])]
            r["workload_output"] = "\n".join(collect(MARK + " WORK-END"))
            if i < len(lines):
                g = lines[i][len(MARK) + 1:].split(" ")
                r["workload_rc"] = int(g[2])
                r["workload_seconds"] = round(float(g[3]) - float(f[2]), 2)
            continue
        elif kind == "LIST-BEGIN":
            tag = f[1]
            listing = parse_listing(collect(MARK + " LIST-END"))
            if tag.endswith("r"):
                res[int(tag[:-1])].setdefault("remount", {})["listing"] = listing
            else:
                res[int(tag)]["listing"] = listing
        elif kind == "LOG-BEGIN":
            tag = f[1]
            entries = parse_log(collect(MARK + " LOG-END"))
            if tag.endswith("r"):
                res[int(tag[:-1])].setdefault("remount", {})["kernel_log"] = entries
            else:
                res[int(tag)].setdefault("kernel_log", []).extend(entries)
        elif kind == "SETTLE":
            res[int(f[1])]["settle_seconds"] = round(float(f[3]) - float(f[2]), 2)
        elif kind == "UMOUNT":
            res[int(f[1])]["umount_ok"] = f[2] == "0"
        elif kind == "POWERCUT":
            r = res[int(f[1])]
            r["status"] = "power-cut"
            r["power_cut_at"] = float(f[2])
        elif kind == "IMAGE-END":
            r = res[int(f[1])]
            if r["status"] == "started":
                r["status"] = "done"
        i += 1
    for r in res:
        if "kernel_log" in r:
            r["jffs2_messages"] = jffs2_messages(r["kernel_log"])
        if "remount" in r and "kernel_log" in r["remount"]:
            r["remount"]["jffs2_messages"] = jffs2_messages(r["remount"]["kernel_log"])
    return boot, res


# --------------------------------------------------------------------------------------------
# Running

def prepare_image(im, workdir, n):
    src = im["path"]
    es = int(im["erase_size"])
    dst = im.get("output") or os.path.join(workdir, f"img{n}.bin")
    if os.path.abspath(dst) != os.path.abspath(src):
        shutil.copyfile(src, dst)
    size = os.path.getsize(dst)
    want = im.get("pad_to")
    if want is None:
        want = max(-(-size // es) * es, 5 * es)
    want = int(want)
    if want < size:
        raise ValueError(f"{src}: {size} bytes is larger than pad_to {want}")
    if want % es:
        raise ValueError(f"{src}: partition size {want} is not a multiple of erase size {es}")
    if want > size:
        with open(dst, "ab") as f:  # erased flash is 0xFF, never zeros
            left = want - size
            chunk = b"\xff" * min(left, 1 << 20)
            while left:
                f.write(chunk[:left])
                left -= min(left, len(chunk))
    return dst


def normalise_spec(spec):
    images = spec["images"]
    for n, im in enumerate(images):
        im.setdefault("id", f"img{n}")
        if "mode" not in im:
            im["mode"] = "rw" if (im.get("workload") or im.get("power_cut")) else "ro"
        if im["mode"] not in ("ro", "rw"):
            raise ValueError(f"{im['id']}: mode must be ro or rw")
        if "erase_size" not in im:
            raise ValueError(f"{im['id']}: erase_size is required")
    return images


def batches(images):
    out, cur = [], []
    for im in images:
        cur.append(im)
        if im.get("power_cut") or len(cur) >= MAX_IMAGES_PER_BOOT:
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


def boot(env, images, workdir, timeout, keep_console=None):
    """One qemu boot with these images (already prepared: im['_disk'])."""
    c = Cpio()
    c.dir("w")
    job = job_script(images, c)
    c.file("job.sh", job.encode(), 0o755)
    initrd = os.path.join(workdir, "initrd.cpio")
    with open(env["initramfs"], "rb") as f:
        base = f.read()
    with open(initrd, "wb") as f:
        f.write(base)   # concatenated newc archives: the kernel unpacks both
        f.write(c.finish())
    cmd = [env["qemu"], "-accel", "tcg", "-cpu", "max", "-m", "512", "-nographic",
           "-no-reboot", "-nic", "none", "-kernel", env["kernel"], "-initrd", initrd,
           "-append", "console=ttyS0 loglevel=1 panic=-1 oops=panic rdinit=/init"]
    for n, im in enumerate(images):
        cmd += ["-drive", f"if=none,id=d{n},format=raw,cache=writeback,file={im['_disk']}",
                "-device", f"virtio-blk-pci,drive=d{n},serial=j2h{n}"]
    console = os.path.join(workdir, "console.txt")
    t0 = time.monotonic()
    with open(console, "wb") as out:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            p.wait(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            timed_out = True
    wall = round(time.monotonic() - t0, 2)
    with open(console, "rb") as f:
        text = f.read().decode("utf-8", "surrogateescape")
    if keep_console:
        shutil.copyfile(console, keep_console)
    info, res = parse_console(text, images)
    info.update({"wall_seconds": wall, "timed_out": timed_out, "qemu_rc": p.returncode,
                 "images": [im["id"] for im in images]})
    expect_cut = bool(images[-1].get("power_cut"))
    if info["done"] is None and not (expect_cut and res[-1]["status"] == "power-cut"):
        info["error"] = "guest did not finish (timeout, crash or panic)"
        info["console_tail"] = text[-4000:]
    for r in res:
        r["boot_wall_seconds"] = wall
    return info, res


def run(spec, workdir=None):
    env = setup()
    images = normalise_spec(spec)
    timeout = float(spec.get("timeout", DEFAULT_TIMEOUT))
    own = workdir is None
    workdir = workdir or tempfile.mkdtemp(prefix="j2h-")
    os.makedirs(workdir, exist_ok=True)
    try:
        for n, im in enumerate(images):
            im["_disk"] = prepare_image(im, workdir, n)
        results, boots = [], []
        for b in batches(images):
            info, res = boot(env, b, workdir, timeout, spec.get("keep_console"))
            boots.append(info)
            for im, r in zip(b, res):
                r["image"] = im.get("output")
                if "error" in info and r["status"] not in ("done", "power-cut"):
                    r["error"] = info["error"]
                results.append(r)
        return {"kernel": os.path.basename(env["kernel"]), "boots": boots, "results": results}
    finally:
        for im in images:
            im.pop("_disk", None)
        if own:
            shutil.rmtree(workdir, ignore_errors=True)


# --------------------------------------------------------------------------------------------
# Host listing and comparison

def md5_file(path):
    h = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def host_xattrs(path):
    out = {}
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        return out
    for n in names:
        try:
            out[n] = os.getxattr(path, n, follow_symlinks=False).hex()
        except OSError:
            out[n] = "ERROR"
    return out


def list_host(root):
    entries = []
    root = os.path.abspath(root)

    def add(path, rel):
        st = os.lstat(path)
        e = {"path": rel, "type": TYPE_BY_FMT.get(stat.S_IFMT(st.st_mode), "unknown"),
             "mode": f"{stat.S_IMODE(st.st_mode):04o}", "uid": st.st_uid, "gid": st.st_gid,
             "size": st.st_size, "nlink": st.st_nlink, "ino": (st.st_dev, st.st_ino),
             # whole seconds as JFFS2 stores them: truncated, from the integer nanoseconds
             # (the float st_mtime rounds x.9999999 up to the next second)
             "mtime": st.st_mtime_ns // 1_000_000_000}
        if e["type"] == "file":
            e["md5"] = md5_file(path)
        elif e["type"] == "symlink":
            e["target"] = os.readlink(path)
        elif e["type"] in ("char", "block"):
            e["rdev"] = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
        e["xattrs"] = host_xattrs(path)
        entries.append(e)

    add(root, ".")
    for dp, dns, fns in os.walk(root):
        for n in dns + fns:
            p = os.path.join(dp, n)
            add(p, os.path.relpath(p, root))
    return finish_listing(entries)


COMPARED = ["type", "mode", "uid", "gid", "size", "nlink", "md5", "target", "rdev", "links",
            "mtime", "xattrs"]


def compare(expected, actual, ignore=(), exact=False):
    """Entry-by-entry differences between two listings (expected = host tree).

    The root is compared by type only: the kernel synthesises JFFS2's root inode (040755, 0:0).
    Directory sizes and link counts are not compared (they are filesystem-specific).
    exact=True compares every field of every entry (kernel listing against kernel listing)."""
    ex = {e["path"]: e for e in expected}
    ac = {e["path"]: e for e in actual}
    diffs = []
    for p in sorted(set(ex) | set(ac)):
        a, b = ex.get(p), ac.get(p)
        if a is None:
            diffs.append({"path": p, "what": "unexpected entry", "actual": b.get("type")})
            continue
        if b is None:
            diffs.append({"path": p, "what": "missing entry", "expected": a.get("type")})
            continue
        fields = ["type"] if p == "." and not exact else COMPARED
        for k in fields:
            if k in ignore:
                continue
            if a["type"] == "dir" and k in ("size", "nlink") and not exact:
                continue
            if k == "xattrs" and "xattrs" not in b:
                continue  # the guest could not list them (no helper)
            if a.get(k) != b.get(k):
                diffs.append({"path": p, "what": k, "expected": a.get(k), "actual": b.get(k)})
    return diffs


# Messages a clean mount prints; anything else from jffs2 at notice level or above is a problem
# (many verdicts of the scan, e.g. CRC failures or misplaced cleanmarkers, are notices).
BENIGN = [
    # "unchecked" xdatums are normal after a summary mount (their CRCs are checked on first use)
    r"jffs2_build_xattr_subsystem: complete building xattr subsystem, \d+ of xdatum "
    r"\(\d+ unchecked, 0 orphan\) and \d+ of xref \(0 dead, 0 orphan\) found\.",
    r"^block2mtd: ",
]


def bad_messages(msgs):
    return [m for m in msgs
            if m["level"] in ("emerg", "alert", "crit", "err", "warning", "notice")
            and not any(re.search(b, m["msg"]) for b in BENIGN)]


def check_results(spec, out):
    """Adds 'diffs' and 'ok' to each result of an image having expect_dir. Returns all ok."""
    all_ok = True
    for im, r in zip(spec["images"], out["results"]):
        problems = []
        if r["status"] != "done":
            problems.append(f"status {r['status']}" + (f": {r['error']}" if "error" in r else ""))
        if not r.get("mount_ok"):
            problems.append("mount failed")
        bad = bad_messages(r.get("jffs2_messages", []))
        if bad:
            problems.append("kernel messages: " + "; ".join(f"<{m['level']}> {m['msg']}"
                                                          for m in bad))
        listing = r.get("listing")
        if im.get("remount") and "remount" in r:
            listing = r["remount"].get("listing")
        if im.get("expect_dir"):
            if listing is None:
                problems.append("no listing")
            else:
                r["diffs"] = compare(list_host(im["expect_dir"]), listing,
                                     im.get("compare_ignore", ()))
                if r["diffs"]:
                    problems.append(f"{len(r['diffs'])} differences from {im['expect_dir']}")
        r["problems"] = problems
        r["ok"] = not problems
        all_ok &= r["ok"]
    return all_ok


def norm_msg(m):
    """A kernel message without what changes from boot to boot (pids, mtd numbers)."""
    msg = re.sub(r"\(\d+\)", "(N)", m["msg"])
    msg = re.sub(r"mtd\d+", "mtdN", msg)
    msg = re.sub(r"/dev/vd[a-z]+", "/dev/vdX", msg)
    return f"<{m['level']}> {msg}"


def verify_fixtures(d, out_path=None):
    """Mounts every fixtures/kernel image read-only; its listing and jffs2 messages must be
    those recorded in its .json.  Returns (ok, report lines).  out_path: where to write the
    boot's results (as `run --out` does; each result's id is the image's file name)."""
    metas = []
    lines = []
    ok = True
    for fn in sorted(os.listdir(d)):
        if not fn.endswith(".json"):
            continue
        with open(os.path.join(d, fn)) as f:
            meta = json.load(f)
        img = os.path.join(d, meta["image"])
        if hashlib.sha256(open(img, "rb").read()).hexdigest() != meta["sha256"]:
            lines.append(f"FIXTURE {meta['image']} FAIL sha256 differs from {fn}")
            ok = False
            continue
        metas.append(meta)
    spec = {"images": [{"id": m["image"], "path": os.path.join(d, m["image"]),
                        "erase_size": m["erase_size"], "mode": "ro"} for m in metas]}
    out = run(spec)
    if out_path:
        with open(out_path, "w") as f:
            json.dump(out, f, indent=1, ensure_ascii=False)
    for b in out["boots"]:
        if "error" in b:
            ok = False
            lines.append(f"BOOT ERROR {b['error']}")
    for m, r in zip(metas, out["results"]):
        problems = []
        if bool(r.get("mount_ok")) != bool(m["mount"]["mount_ok"]):
            problems.append(f"mount_ok {r.get('mount_ok')} != recorded {m['mount']['mount_ok']}")
        diffs = compare(m["listing"] or [], r.get("listing") or [], exact=True)
        problems += [f"DIFF {json.dumps(x)}" for x in diffs]
        want = [norm_msg(x) for x in m["mount"]["kernel_messages"] or []]
        got = [norm_msg(x) for x in r.get("jffs2_messages") or []]
        if want != got:
            problems.append(f"kernel messages differ: recorded {want}, now {got}")
        ok &= not problems
        lines.append(f"FIXTURE {m['image']} {'OK' if not problems else 'FAIL'}")
        lines += [f"  {p}" for p in problems]
    return ok, lines


def report(out):
    for b in out["boots"]:
        ready = b.get("ready")
        print(f"BOOT images={','.join(b['images'])} wall={b['wall_seconds']}s "
              f"guest_ready={ready}s" + (f" ERROR {b['error']}" if "error" in b else ""))
        if "error" in b:
            for l in b.get("console_tail", "").splitlines()[-40:]:
                print(f"  | {l}")
    for r in out["results"]:
        ok = r.get("ok")
        state = "OK" if ok else ("FAIL" if ok is False else r["status"].upper())
        print(f"RESULT {r['id']} {state} mount={'ok' if r.get('mount_ok') else 'FAILED'} "
              f"mount_seconds={r.get('mount_seconds')} entries={len(r.get('listing') or [])}")
        for p in r.get("problems", []):
            print(f"PROBLEM {r['id']} {p}")
        for d in r.get("diffs", [])[:200]:
            print(f"DIFF {r['id']} {json.dumps(d)}")
        for m in r.get("jffs2_messages", []):
            print(f"KMSG {r['id']} <{m['level']}> {m['msg']}")


def load_spec(path):
    with open(path) as f:
        return json.load(f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("setup")
    for name in ("run", "check"):
        p = sub.add_parser(name)
        p.add_argument("--spec", required=True)
        p.add_argument("--out")
        p.add_argument("--workdir")
    p = sub.add_parser("verify-fixtures")
    p.add_argument("--dir", required=True)
    p.add_argument("--out")
    p = sub.add_parser("list-host")
    p.add_argument("dir")
    p = sub.add_parser("compare")
    p.add_argument("--result", required=True)
    p.add_argument("--index", type=int, default=0)
    p.add_argument("--dir", required=True)
    p.add_argument("--ignore", action="append", default=[])
    a = ap.parse_args(argv)
    try:
        if a.cmd == "setup":
            t0 = time.monotonic()
            env = setup()
            env["seconds"] = round(time.monotonic() - t0, 2)
            print(json.dumps(env, indent=1))
            return 0
        if a.cmd in ("run", "check"):
            spec = load_spec(a.spec)
            out = run(spec, a.workdir)
            ok = True
            if a.cmd == "check":
                ok = check_results(spec, out)
            ok &= all("error" not in b for b in out["boots"])
            if a.out:
                with open(a.out, "w") as f:
                    json.dump(out, f, indent=1, ensure_ascii=False)
            report(out)
            print(f"SUMMARY {'OK' if ok else 'FAIL'}")
            return 0 if ok else 1
        if a.cmd == "verify-fixtures":
            ok, lines = verify_fixtures(a.dir, a.out)
            print("\n".join(lines))
            print(f"SUMMARY {'OK' if ok else 'FAIL'}")
            return 0 if ok else 1
        if a.cmd == "list-host":
            print(json.dumps(list_host(a.dir), indent=1, ensure_ascii=False))
            return 0
        if a.cmd == "compare":
            with open(a.result) as f:
                r = json.load(f)["results"][a.index]
            diffs = compare(list_host(a.dir), r.get("listing") or [], a.ignore)
            for d in diffs:
                print(f"DIFF {r['id']} {json.dumps(d)}")
            print(f"SUMMARY {'OK' if not diffs else 'FAIL'} {len(diffs)} differences")
            return 0 if not diffs else 1
    except Unavailable as e:
        print(f"UNAVAILABLE: {e}", flush=True)
        return 3
    except (ValueError, KeyError, OSError) as e:
        print(f"ERROR: {type(e).__name__}: {e}", flush=True)
        return 2
    return 2


if __name__ == "__main__":
    sys.exit(main())
