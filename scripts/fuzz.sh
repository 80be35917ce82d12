#!/usr/bin/env bash
# Runs every fuzz target of fuzz/ (cargo-fuzz, libFuzzer + AddressSanitizer) for SECONDS
# each, two at a time, starting from the committed seed corpus; fails if any target finds
# a crash, a hang (> 10 s on one input) or an allocation beyond 256 MiB.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]        (default: 60, every target)
#
# CI runs it after the test suite (.ci/run). Works on the stable toolchain: cargo-fuzz needs
# `-Zsanitizer`, which RUSTC_BOOTSTRAP=1 allows (stable ships the ASan runtime). cargo-fuzz
# is installed from crates.io when missing. New corpus entries go to a scratch directory, not
# to the repository; a crash is left in fuzz/artifacts/TARGET/ — turn it into a regression
# test by copying it to fuzz/regressions/TARGET/ (tests/fuzz_corpus.rs runs that folder).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-60}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=(nodes decompress scan fs dump extract sumtool convert)
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz.sh: installing cargo-fuzz from crates.io" >&2
  cargo install cargo-fuzz --locked --version 0.13.2
fi
export RUSTC_BOOTSTRAP=1
(cd fuzz && cargo fuzz build -O)
SCRATCH=$(mktemp -d)
trap 'rm -rf "$SCRATCH"' EXIT
run() {
  local t=$1
  mkdir -p "$SCRATCH/$t"
  if (cd fuzz && cargo fuzz run -O "$t" "$SCRATCH/$t" "corpus/$t" -- \
      -max_total_time="$SECS" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -malloc_limit_mb=256 -print_final_stats=1) >"$SCRATCH/$t.log" 2>&1; then
    local l=$SCRATCH/$t.log
    printf 'fuzz %-10s ok: %s executions in %s s (%s/s), corpus +%s, peak RSS %s MB\n' "$t" \
      "$(awk '/stat::number_of_executed_units/ {print $NF}' "$l")" "$SECS" \
      "$(awk '/stat::average_exec_per_sec/ {print $NF}' "$l")" \
      "$(awk '/stat::new_units_added/ {print $NF}' "$l")" \
      "$(awk '/stat::peak_rss_mb/ {print $NF}' "$l")"
  else
    echo "fuzz $t FAILED; its log:" >&2
    tail -60 "$SCRATCH/$t.log" >&2
    ls -l "fuzz/artifacts/$t" >&2 || true
    return 1
  fi
}
fail=0
i=0
pids=()
for t in "${TARGETS[@]}"; do
  run "$t" &
  pids+=($!)
  i=$((i + 1))
  if [ $((i % 2)) -eq 0 ]; then
    for p in "${pids[@]}"; do wait "$p" || fail=1; done
    pids=()
  fi
done
for p in "${pids[@]}"; do wait "$p" || fail=1; done
exit $fail
