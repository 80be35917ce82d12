#!/usr/bin/env bash
# The whole test suite, on a fresh Debian machine: installs what it needs, then runs every
# test (unit, mtd-utils parity, CLI, kernel conformance under qemu).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-test-deps.sh
cargo test --workspace --all-targets --no-fail-fast
