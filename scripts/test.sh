#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine: installs what it needs, then runs every
# test (unit, mtd-utils parity, CLI, kernel conformance under qemu, the library's examples),
# the documentation examples, and builds the documentation with warnings as errors.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
status=0
cargo test --workspace --all-targets --no-fail-fast || status=$?
# `--all-targets` does not run doc tests: the examples in the rustdoc of every public item.
cargo test --workspace --doc --no-fail-fast || status=$?
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --workspace || status=$?
exit "$status"
