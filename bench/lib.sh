# Shared by the bench/ scripts (sourced). Needs RUNS and OUT set.

# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{a[NR]=$1} END {if (NR%2) print a[(NR+1)/2]; else printf "%.3f\n", (a[NR/2]+a[NR/2+1])/2}'; }

# time_runs DEST CMD... : runs CMD RUNS times (removing DEST, a file or directory, before
# each run; pass /nonexistent for none) under /usr/bin/time; prints
# "median_wall median_cpu peak_rss_kib" (CPU is user + system).
time_runs() {
  local dest=$1; shift
  local w u s rss walls=() cpus=() peak=0
  for _ in $(seq "$RUNS"); do
    rm -rf "$dest"
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$@" >"$OUT/stdout.txt" 2>"$OUT/stderr.txt" || true
    read -r w u s rss < "$OUT/time.txt"
    walls+=("$w")
    cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN {printf "%.2f", u + s}')")
    [ "$rss" -gt "$peak" ] && peak=$rss
  done
  printf '%s %s %s\n' "$(printf '%s\n' "${walls[@]}" | median)" \
    "$(printf '%s\n' "${cpus[@]}" | median)" "$peak"
}
