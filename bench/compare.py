#!/usr/bin/env python3
"""Side-by-side runs of two builds of the tools on one image, interleaved so that both see
the same machine: median wall time and peak RSS (GNU time) of a pristine conversion, one that
adds summaries, fsck, `jffs2-dump --list`, `jffs2-dump --extract`, sumtool and, when a source
directory is given, jffs2-mkfs of it. Prints a Markdown table.

    bench/compare.py OLD_BIN_DIR NEW_BIN_DIR IMAGE [RUNS [MKFS_SOURCE_DIR]]

For example, the release binaries of an older commit (built in a `git worktree`) against
this tree's, on `mkfs.jffs2 -r /usr/bin -e 0x20000 -n -l -o /dev/shm/bench.img`. Outputs go
to /dev/shm.
"""
import shutil
import statistics
import subprocess
import sys
import time

old, new, img = sys.argv[1:4]
runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
source = sys.argv[5] if len(sys.argv) > 5 else None
out = "/dev/shm/compare-out.img"
dest = "/dev/shm/compare-extract"
tasks = {
    "convert, pristine": lambda b: [f"{b}/jffs2-convert", "--no-progress", "-i", img, "-o", out],
    "convert --summary": lambda b: [f"{b}/jffs2-convert", "--no-progress", "--summary", "-i", img, "-o", out],
    "fsck": lambda b: [f"{b}/jffs2-fsck", img],
    "dump --list": lambda b: [f"{b}/jffs2-dump", "--list", img],
    "dump --extract": lambda b: [f"{b}/jffs2-dump", f"--extract={dest}", img],
    "sumtool": lambda b: [f"{b}/jffs2-sumtool", "-i", img, "-o", out, "-e", "128KiB", "-l", "-n"],
}
if source:
    tasks["mkfs"] = lambda b: [f"{b}/jffs2-mkfs", "-r", source, "-e", "0x20000", "-n", "-l", "-o", out]
res = {}
for _ in range(runs):
    for name, cmd in tasks.items():
        for which, b in (("old", old), ("new", new)):
            shutil.rmtree(dest, ignore_errors=True)
            start = time.monotonic()
            subprocess.run(["/usr/bin/time", "-f", "%M", "-o", "/dev/shm/compare-rss"] + cmd(b),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
            wall = time.monotonic() - start
            rss = int(open("/dev/shm/compare-rss").read().split()[-1])
            res.setdefault((name, which), []).append((wall, rss))
print("| task | old: median wall | new: median wall | old peak RSS | new peak RSS |")
print("|---|---|---|---|---|")
for name in tasks:
    o, n = res[(name, "old")], res[(name, "new")]
    med = lambda v, i: statistics.median(x[i] for x in v)
    print(f"| {name} | {med(o, 0):.3f} s | {med(n, 0):.3f} s | {med(o, 1) // 1024} MiB | {med(n, 1) // 1024} MiB |")
