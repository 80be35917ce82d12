# Shared by the bench/ scripts (sourced). Needs RUNS and OUT set.

# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# time_runs DEST CMD... : runs CMD RUNS times (removing DEST, a file or directory, before
# each run; pass /nonexistent for none) under /usr/bin/time; prints
# "median_wall median_cpu peak_rss_kib" (CPU is user + system). The wall time is taken to
# the millisecond around the run (/usr/bin/time's own has 10 ms steps, too coarse for runs
# of a tenth of a second); the CPU time and the peak RSS are /usr/bin/time's.
time_runs() {
  local dest=$1; shift
  local w u s rss t0 t1 walls=() cpus=() peak=0
  for _ in $(seq "$RUNS"); do
    rm -rf "$dest"
    t0=$(date +%s%N)
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" || true
    t1=$(date +%s%N)
    read -r w u s rss < "$OUT/time.txt"
    w=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')
    walls+=("$w")
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')")
    [ "$rss" -gt "$peak" ] && peak=$rss
  done
  printf '%s %s %s\n' "$(printf '%s\n' "${walls[@]}" | median)" \
    "$(printf '%s\n' "${cpus[@]}" | median)" "$peak"
}

# time_one CMD... : runs CMD once under /usr/bin/time (stdout and stderr to $OUT); prints
# "wall cpu peak_rss_kib" like one run of time_runs. For alternating runs of several
# commands, whose medians are then taken per command (machine drift hits all alike).
time_one() {
  local w u s rss t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" || true
  t1=$(date +%s%N)
  read -r w u s rss < "$OUT/time.txt"
  awk -v a="$t0" -v b="$t1" -v u="$u" -v s="$s" -v r="$rss" \
    'BEGIN {printf "%.3f %.2f %d\n", (b - a) / 1e9, u + s, r}'
}

# ratio A B : A / B to three decimals ("n/a" when B is 0).
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.3f", a / b; else printf "n/a"}'; }
