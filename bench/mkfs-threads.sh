#!/usr/bin/env bash
# CPU seconds of one jffs2-mkfs build per thread kind (reader, compressors, main = scan +
# plan + layout, writer) and the speed-up they allow on more cores than this machine has.
#
#   bench/mkfs-threads.sh [TREE] [THREADS]      (defaults: /usr/bin, nproc)
#
# The build (-e 0x20000 -n -l, image in /dev/shm) runs under a sampler that reads each
# thread's CPU clock (/proc/PID/task/TID/schedstat, nanoseconds) every 5 ms and keeps the
# last value per thread, so each thread loses at most its final 5 ms; the total is the
# child's rusage, and what the samples miss is printed as "unattributed".
# The compressors run in parallel; every other thread is one serial stage. A pipeline of
# concurrent stages on P cores is bounded by its busiest serial thread:
#   speed-up(P) <= T / max(T / P, max serial stage)           (T: total CPU seconds)
# and, were the serial stages not overlapped at all (Amdahl),
#   speed-up(P) =  T / (sum of serial stages + compressors / P).
set -euo pipefail
cd "$(dirname "$0")/.."
TREE=${1:-/usr/bin}
THREADS=${2:-$(nproc)}
IMG=${OUT_IMG:-/dev/shm/jffs2-mkfs-threads.$$}
cargo build --release --quiet --bin jffs2-mkfs
trap 'rm -f "$IMG"' EXIT
python3 - "$PWD/target/release/jffs2-mkfs" "$TREE" "$THREADS" "$IMG" <<'PY'
import os, subprocess, sys, time

ours, tree, threads, img = sys.argv[1:5]
cmd = [ours, "-r", tree, "-e", "0x20000", "-n", "-l", "-o", img, "--threads", threads]
tick = os.sysconf("SC_CLK_TCK")


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
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(f"jffs2-mkfs failed: {cmd}")
total = ru.ru_utime + ru.ru_stime


def kind(tid, comm):
    if tid == p.pid:
        return "main (scan, plan, layout)"
    if comm.startswith("jffs2-compress"):
        return "compressors"
    if comm == "jffs2-read":
        return "reader"
    if comm == "writer":
        return "writer"
    return f"other ({comm})"


kinds = {}
for tid, (comm, cpu) in last.items():
    k = kind(tid, comm)
    n, s = kinds.get(k, (0, 0.0))
    kinds[k] = (n + 1, s + cpu)
missed = total - sum(s for _, s in kinds.values())
print(f"jffs2-mkfs {' '.join(cmd[1:])}: wall {wall:.2f} s, CPU {total:.2f} s (rusage)")
print()
print("| thread kind | threads | CPU s | share of CPU | serial stage <= 1/32? |")
print("|---|---|---|---|---|")
for k, (n, s) in sorted(kinds.items(), key=lambda kv: -kv[1][1]):
    serial = "(parallel)" if k == "compressors" else ("yes" if s <= total / 32 else "**no**")
    print(f"| {k} | {n} | {s:.2f} | {100 * s / total:.1f} % | {serial} |")
print(f"| unattributed (sampling) | | {missed:.2f} | {100 * missed / total:.1f} % | |")
serial = [s for k, (_, s) in kinds.items() if k != "compressors"]
par = kinds.get("compressors", (0, 0.0))[1] + max(missed, 0.0)
print()
print("| cores | pipeline bound T / max(T/P, busiest serial) | Amdahl T / (serial + parallel/P) |")
print("|---|---|---|")
for cores in (2, 8, 16, 32, 64):
    pipe = total / max(total / cores, max(serial, default=0.0))
    amdahl = total / (sum(serial) + par / cores)
    print(f"| {cores} | {pipe:.1f}x | {amdahl:.1f}x |")
PY
