#!/usr/bin/env bash
# Installs every system package the test suite needs (Debian/Ubuntu, as root or via sudo).
# Idempotent: packages already present are not reinstalled.
set -euo pipefail
pkgs=(
  mtd-utils          # the reference: mkfs.jffs2, sumtool, jffs2dump (byte-parity judge)
  zlib1g-dev         # system zlib, linked by flate2/libz-sys: same deflate bytes as mtd-utils
  pkg-config         # lets libz-sys find the system zlib (and build.rs find libdeflate)
  libdeflate-dev     # optional fast inflater for extraction and fsck (zlib alone otherwise)
  attr acl           # setfattr / setfacl for xattr fixtures
  fakeroot           # fakeroot compatibility test of the tree scan
  qemu-system-x86    # the kernel judge (tests/kernel_harness.rs)
  busybox-static cpio
  time               # GNU time (/usr/bin/time -f %M): peak memory of the binaries (tests/hostile_cli.rs)
  valgrind           # instruction counts: linear work on hostile images (tests/linear_time.rs)
  python3            # its lzma module: the independent LZMA decoder of tests/openwrt.rs
  gcc                # C compiler: liblzma-sys builds its own liblzma unless the system has >= 5.8
  util-linux         # taskset: one CPU for the counted runs; fsck(8) (tests/install.rs); unshare, setpriv: the ordinary-user mount (tests/mount.rs)
  bash man-db groff-base zsh fish  # manual pages rendered, completions loaded (tests/install.rs)
  locales            # localedef: en_US.UTF-8, whose collation differs from C (tests/reproducible.rs)
  genimage           # genimage's own jffs2 test with our mkfs.jffs2 (tests/integration.rs)
  faketime           # libfaketime: one fixed clock for both tools in the guide parity blocks (tests/integration.rs)
  librsvg2-bin       # rsvg-convert: the block map (jffs2-dump --map) rendered to PNG (tests/dump_views.rs)
  fuse3              # fusermount3 and /dev/fuse access for ordinary users: jffs2-mount (tests/mount.rs)
  python3-venv       # the test venv below (unblob, maturin) and the wheel's fresh venv (tests/wheel.rs)
  libmagic1          # unblob's python-magic (tests/jefferson.rs)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# A locale whose collation differs from strcmp's, to show that the images do not depend on the
# locale (tests/reproducible.rs). Generated into the locale archive unless it is there.
if ! locale -a 2>/dev/null | grep -qix 'en_US.utf8'; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "generating the en_US.UTF-8 locale"
  $SUDO localedef -i en_US -c -f UTF-8 -A /usr/share/locale/locale.alias en_US.UTF-8
fi
# The analysis tools that run `jefferson` (tests/jefferson.rs) and the wheel builder
# (tests/wheel.rs), at fixed versions: unblob and maturin from PyPI in a venv (about 40 s),
# binwalk 3 from crates.io (a release build: about 3 minutes on 2 cores). Each is skipped when
# already there at that version; JFFS2_TEST_VENV and JFFS2_TEST_TOOLS move them.
UNBLOB_VERSION=26.6.4
MATURIN_VERSION=1.16.0
BINWALK_VERSION=3.1.0
venv="${JFFS2_TEST_VENV:-/opt/jffs2-test-venv}"
tools="${JFFS2_TEST_TOOLS:-/opt/jffs2-test-tools}"
if ! "$venv/bin/pip" show unblob maturin 2>/dev/null | grep -x "Version: $UNBLOB_VERSION" >/dev/null \
   || ! "$venv/bin/maturin" --version 2>/dev/null | grep -x "maturin $MATURIN_VERSION" >/dev/null; then
  echo "installing unblob $UNBLOB_VERSION and maturin $MATURIN_VERSION into $venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "unblob==$UNBLOB_VERSION" "maturin==$MATURIN_VERSION"
fi
if ! "$tools/bin/binwalk" --version 2>/dev/null | grep -x "binwalk $BINWALK_VERSION" >/dev/null; then
  echo "building binwalk $BINWALK_VERSION into $tools"
  build="$(mktemp -d)"
  "${CARGO:-cargo}" install --quiet --locked --root "$tools" --target-dir "$build" "binwalk@$BINWALK_VERSION"
  rm -rf "$build"
fi
