#!/usr/bin/env bash
# CPU seconds per thread kind of one run of a tool, and the speed-up they allow on more
# cores than this machine has.
#
#   bench/threads.sh mkfs    [TREE] [THREADS] [ERASE]
#                                               jffs2-mkfs -r TREE -e ERASE -n -l --threads THREADS
#                                               (ERASE 0x20000 unless given: the block-end
#                                               compressions are per erase block)
#   bench/threads.sh convert [TREE]             jffs2-convert -m priority (every data node
#                                               recompressed with zlib) of the TREE image
#   bench/threads.sh fsck    [TREE]             jffs2-fsck of the TREE image
#   bench/threads.sh extract [TREE]             jffs2-dump --extract of the TREE image
#   bench/threads.sh sumtool [TREE]             jffs2-sumtool -e 0x20000 -n -l of the TREE image
#   bench/threads.sh run LABEL CMD...           any command
#
# Defaults: TREE /usr/bin, THREADS nproc. The TREE image is made with
# `jffs2-mkfs -r TREE -e 0x20000 -n -l`; images, outputs and extracted trees go to /dev/shm
# (BENCH_SHM) and are removed at the end.
#
# The run goes under a sampler that reads each thread's CPU clock
# (/proc/PID/task/TID/schedstat, nanoseconds) every 5 ms and keeps the last value per
# thread, so each thread loses at most its final 5 ms; the total is the child's rusage, and
# what the samples miss is printed as "unattributed". Threads are told apart by name
# (comm): the main thread is the process's first; a name ending in -N is one thread of a
# pool (jffs2-compress-N, jffs2-convert-N, jffs2-fsck-N, jffs2-dump-N, sumtool-check-N): a
# pool runs in parallel, every other thread is one serial stage. A pipeline of concurrent
# stages on P cores is bounded by its busiest serial thread:
#   speed-up(P) <= T / max(T / P, max serial stage)           (T: total CPU seconds)
# and, were the serial stages not overlapped at all (Amdahl),
#   speed-up(P) =  T / (sum of serial stages + pools / P).
# The goal: every serial stage at most 1/32 of T.
set -euo pipefail
cd "$(dirname "$0")/.."
SHM=${BENCH_SHM:-/dev/shm}
TOOL=${1:?usage: bench/threads.sh mkfs|convert|fsck|extract|sumtool [TREE] | run LABEL CMD...}
shift
REL=$PWD/target/release
IMG=$SHM/bench-threads-in.$$.img
OUTF=$SHM/bench-threads-out.$$
trap 'rm -rf "$IMG" "$OUTF"' EXIT

# The TREE image, built once with jffs2-mkfs.
image() {
  cargo build --release --quiet --bin jffs2-mkfs
  "$REL/jffs2-mkfs" -r "$1" -e 0x20000 -n -l -o "$IMG"
}

case $TOOL in
  mkfs)
    TREE=${1:-/usr/bin}
    THREADS=${2:-$(nproc)}
    ERASE=${3:-0x20000}
    cargo build --release --quiet --bin jffs2-mkfs
    set -- "$REL/jffs2-mkfs" -r "$TREE" -e "$ERASE" -n -l -o "$OUTF" --threads "$THREADS"
    MAIN="main (scan, plan, layout, block-end compressions)"
    ;;
  convert)
    image "${1:-/usr/bin}"
    cargo build --release --quiet --bin jffs2-convert
    set -- "$REL/jffs2-convert" --no-progress -m priority -i "$IMG" -o "$OUTF"
    MAIN="main (detect, scan, build, lay out)"
    ;;
  fsck)
    image "${1:-/usr/bin}"
    cargo build --release --quiet --bin jffs2-fsck
    set -- "$REL/jffs2-fsck" --no-progress "$IMG"
    MAIN="main (build, findings, report; the detection, the scan and the checks run on pools)"
    ;;
  extract)
    image "${1:-/usr/bin}"
    cargo build --release --quiet --bin jffs2-dump
    set -- "$REL/jffs2-dump" --extract="$OUTF" "$IMG"
    MAIN="main (quick detection, scan, build, plan, file creation and metadata)"
    ;;
  sumtool)
    image "${1:-/usr/bin}"
    cargo build --release --quiet --bin jffs2-sumtool
    set -- "$REL/jffs2-sumtool" -i "$IMG" -o "$OUTF" -e 0x20000 -n -l
    MAIN="main (map, scan, checks, lay out)"
    ;;
  run)
    MAIN="main (${1:?a label})"
    shift
    ;;
  *)
    echo "bench/threads.sh: unknown tool $TOOL" >&2
    exit 2
    ;;
esac

python3 - "$MAIN" "$@" <<'PY'
import os, re, subprocess, sys, time

main_label, cmd = sys.argv[1], sys.argv[2:]
tick = os.sysconf("SC_CLK_TCK")
# Known thread names (comm, at most 15 characters) and what they do.
NAMES = {
    "jffs2-compress": "compressors",
    "jffs2-read": "reader",
    "writer": "writer",
    "prealloc": "output space reservation",
    "jffs2-convert": "compressors",
    "jffs2-convert-p": "planner",
    "jffs2-convert-r": "round preparation",
    "jffs2-convert-w": "writer",
    "jffs2-fsck": "pool (check, build)",
    "jffs2-dump": "pool (extraction)",
    "jffs2-trim": "page trimmer",
    "sumtool-detect": "detection",
    "jffs2-detect": "detection (one thread per core)",
    "sumtool-check": "node checks",
    "sumtool-write": "writer",
}


def sample(pid, last):
    """Records each live thread's (comm, CPU seconds) under its tid."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            with open(f"{base}/stat") as f:
                st = f.read()
            comm = st[st.index("(") + 1 : st.rindex(")")]
            try:
                with open(f"{base}/schedstat") as f:
                    cpu = int(f.read().split()[0]) / 1e9
            except OSError:
                fields = st[st.rindex(")") + 2 :].split()
                cpu = (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError):
            continue
        last[int(tid)] = (comm, cpu)


load = open("/proc/loadavg").read().split()[:3]
t0 = time.monotonic()
p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
last = {}
while True:
    sample(p.pid, last)
    wpid, status, ru = os.wait4(p.pid, os.WNOHANG)
    if wpid:
        break
    time.sleep(0.005)
wall = time.monotonic() - t0
code = os.waitstatus_to_exitcode(status)
if code not in (0, 1):
    sys.exit(f"{cmd[0]} exited with {code}: {' '.join(cmd)}")
total = ru.ru_utime + ru.ru_stime


def kind(tid, comm):
    """(kind, parallel?) of a thread."""
    if tid == p.pid:
        return main_label, False
    # comm keeps 15 characters: jffs2-compress-12 reads "jffs2-compress-".
    m = re.fullmatch(r"(.*)-(\d*)", comm)
    pool = m.group(1) if m else comm
    name = NAMES.get(pool, f"other ({comm})")
    return (f"{name} [{pool}-N]" if m else f"{name} [{comm}]"), m is not None


kinds = {}
for tid, (comm, cpu) in last.items():
    k, par = kind(tid, comm)
    n, s, _ = kinds.get(k, (0, 0.0, par))
    kinds[k] = (n + 1, s + cpu, par)
missed = total - sum(s for _, s, _ in kinds.values())
print(f"`{os.path.basename(cmd[0])} {' '.join(cmd[1:])}`")
print(f"wall {wall:.2f} s, CPU {total:.2f} s (rusage), {os.cpu_count()} cores, load before {' '.join(load)}")
print()
print("| thread kind | threads | CPU s | share of CPU | serial stage <= 1/32? |")
print("|---|---|---|---|---|")
for k, (n, s, par) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
    verdict = "(parallel)" if par else ("yes" if s <= total / 32 else "**no**")
    print(f"| {k} | {n} | {s:.2f} | {100 * s / total:.1f} % | {verdict} |")
print(f"| unattributed (sampling) | | {missed:.2f} | {100 * missed / total:.1f} % | |")
serial = [s for _, s, par in kinds.values() if not par]
pools = sum(s for _, s, par in kinds.values() if par) + max(missed, 0.0)
print()
print("| cores | pipeline bound T / max(T/P, busiest serial) | Amdahl T / (serial + parallel/P) |")
print("|---|---|---|")
for cores in (2, 8, 16, 32, 64):
    pipe = total / max(total / cores, max(serial, default=0.0))
    amdahl = total / (sum(serial) + pools / cores)
    print(f"| {cores} | {pipe:.1f}x | {amdahl:.1f}x |")
PY
