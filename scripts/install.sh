#!/usr/bin/env bash
# Installs jffs2-tools: the six binaries, the mtd-utils names as links (mkfs.jffs2, sumtool,
# jffs2dump, jffs2reader, and fsck.jffs2 for `fsck -t jffs2`), jefferson (the extractor name
# binwalk, unblob and FACT run; docs/integration/analysis.md), the manual pages and the bash,
# zsh and fish completions. See README.md, "Install".
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/install.sh [OPTION]...
Builds (cargo install) and installs jffs2-mkfs, jffs2-sumtool, jffs2-dump, jffs2-fsck,
jffs2-convert and jffs2-mount into PREFIX/bin; links mkfs.jffs2, sumtool, jffs2dump, jffs2reader,
fsck.jffs2 and jefferson to them there; manual pages into PREFIX/share/man/man{1,8}; completions into
PREFIX/share/bash-completion/completions, PREFIX/share/zsh/site-functions and
PREFIX/share/fish/vendor_completions.d.

  --prefix DIR       installation prefix (default: /usr/local)
  --destdir DIR      stage under DIR (packaging): files go to DIR/PREFIX/...; the links stay
                     relative (default: $DESTDIR)
  --binaries DIR     install the binaries already built in DIR (e.g. target/release)
                     instead of running cargo install; when DIR is cargo's output directory
                     (TARGET/PROFILE), only jffs2-gen is built, there and with that profile,
                     so nothing the binaries were built from is compiled again
  --generator PATH   the jffs2-gen binary to run (default: built with cargo build -p jffs2-gen)
  --profile NAME     the cargo profile to build with (default: release; with --binaries DIR
                     of cargo's, DIR's)
  --no-mtd-names     no links, pages or completions under the mtd-utils names (nor
                     jefferson)
  --force            replace an existing PREFIX/bin/mkfs.jffs2 (etc.) that is not a
                     symbolic link (by default the install stops before changing anything)
  -h, --help         this text

Environment: SOURCE_DATE_EPOCH dates the manual pages (default: the last commit's date in a
git checkout, else today); CARGO (default: cargo).
EOF
}

repo="$(cd "$(dirname "$0")/.." && pwd)"
prefix=/usr/local
destdir="${DESTDIR:-}"
binaries=""
generator=""
profile=release
mtd_names=1
force=0
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="${2:?--prefix needs a directory}"; shift 2 ;;
    --prefix=*) prefix="${1#*=}"; shift ;;
    --destdir) destdir="${2:?--destdir needs a directory}"; shift 2 ;;
    --destdir=*) destdir="${1#*=}"; shift ;;
    --binaries) binaries="${2:?--binaries needs a directory}"; shift 2 ;;
    --binaries=*) binaries="${1#*=}"; shift ;;
    --generator) generator="${2:?--generator needs a path}"; shift 2 ;;
    --generator=*) generator="${1#*=}"; shift ;;
    --profile) profile="${2:?--profile needs a name}"; shift 2 ;;
    --profile=*) profile="${1#*=}"; shift ;;
    --no-mtd-names) mtd_names=0; shift ;;
    --force) force=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
case "$prefix" in
  /*) ;;
  *) echo "install.sh: --prefix must be an absolute path: $prefix" >&2; exit 2 ;;
esac
cargo="${CARGO:-cargo}"

bins=(jffs2-mkfs jffs2-sumtool jffs2-dump jffs2-fsck jffs2-convert jffs2-mount)
# link name -> binary (the names the binaries answer to; src/cli/describe.rs)
links=(mkfs.jffs2:jffs2-mkfs sumtool:jffs2-sumtool jffs2dump:jffs2-dump
       jffs2reader:jffs2-dump fsck.jffs2:jffs2-fsck jefferson:jffs2-dump)
[ "$mtd_names" -eq 1 ] || links=()

root="${destdir%/}$prefix"
bindir="$root/bin"
mandir="$root/share/man"
bashdir="$root/share/bash-completion/completions"
zshdir="$root/share/zsh/site-functions"
fishdir="$root/share/fish/vendor_completions.d"

# Refuse before changing anything: a link name that exists and is not a symbolic link is
# somebody else's program (mtd-utils', say, or the Python jefferson).
for l in "${links[@]}"; do
  name="${l%%:*}"
  if [ -e "$bindir/$name" ] && [ ! -L "$bindir/$name" ] && [ "$force" -eq 0 ]; then
    echo "install.sh: $bindir/$name exists and is not a symbolic link; not replacing it" >&2
    echo "install.sh: remove it, use --no-mtd-names, or --force to replace it" >&2
    exit 1
  fi
done
if [ -n "$binaries" ]; then
  for b in "${bins[@]}"; do
    [ -x "$binaries/$b" ] || { echo "install.sh: $binaries/$b: no such executable" >&2; exit 1; }
  done
fi

# The binaries.
mkdir -p "$bindir"
if [ -n "$binaries" ]; then
  for b in "${bins[@]}"; do
    if [ "$binaries/$b" -ef "$bindir/$b" ]; then
      continue
    fi
    # Replace, never write through: the old file may be running.
    cp -f "$binaries/$b" "$bindir/.$b.new"
    chmod 0755 "$bindir/.$b.new"
    mv -f "$bindir/.$b.new" "$bindir/$b"
  done
else
  # --no-track: no .crates.toml in PREFIX (or in a DESTDIR staging); --force: replace our
  # own earlier installation.
  "$cargo" install --locked --no-track --force --profile "$profile" --path "$repo" --root "$root"
fi

# Manual pages and completions, from the command descriptions. The generator is built alone
# (no binaries): where the binaries were built when --binaries names cargo's output directory
# TARGET/PROFILE (TARGET holds cargo's CACHEDIR.TAG), with that profile, so the libraries they
# were built from are reused; else in the workspace's target directory with --profile.
if [ -z "$generator" ]; then
  gen_target="${CARGO_TARGET_DIR:-$repo/target}"
  gen_profile="$profile"
  if [ -n "$binaries" ]; then
    bdir="$(cd "$binaries" && pwd -P)"
    if [ -d "$bdir/.fingerprint" ] && [ -f "$(dirname "$bdir")/CACHEDIR.TAG" ]; then
      gen_target="$(dirname "$bdir")"
      gen_profile="$(basename "$bdir")"
      [ "$gen_profile" != debug ] || gen_profile=dev
    fi
  fi
  gen_dir="$gen_profile"
  [ "$gen_dir" != dev ] || gen_dir=debug
  (cd "$repo" && "$cargo" build --quiet --locked -p jffs2-gen --profile "$gen_profile" \
     --target-dir "$gen_target")
  generator="$gen_target/$gen_dir/jffs2-gen"
fi
dist="$(mktemp -d)"
trap 'rm -rf "$dist"' EXIT
gen_args=(--out "$dist")
[ "$mtd_names" -eq 1 ] || gen_args+=(--no-mtd-names)
if [ -z "${SOURCE_DATE_EPOCH:-}" ] && git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  SOURCE_DATE_EPOCH="$(git -C "$repo" log -1 --format=%ct 2>/dev/null || true)"
  [ -n "$SOURCE_DATE_EPOCH" ] && export SOURCE_DATE_EPOCH || unset SOURCE_DATE_EPOCH
fi
# Its report names the scratch directory, deleted on exit: shown only if it fails.
if ! gen_log="$("$generator" "${gen_args[@]}" 2>&1)"; then
  printf '%s\n' "$gen_log" >&2
  exit 1
fi

written=()  # the directories the pages and completions went to, for the report
for section in 1 8; do
  if compgen -G "$dist/man/man$section/*.$section" >/dev/null; then
    mkdir -p "$mandir/man$section"
    written+=("$mandir/man$section")
    for f in "$dist/man/man$section"/*."$section"; do
      install -m 0644 "$f" "$mandir/man$section/"
    done
  fi
done
mkdir -p "$bashdir" "$zshdir" "$fishdir"
for f in "$dist/completions/bash"/*; do install -m 0644 "$f" "$bashdir/"; done
for f in "$dist/completions/zsh"/*; do install -m 0644 "$f" "$zshdir/"; done
for f in "$dist/completions/fish"/*; do install -m 0644 "$f" "$fishdir/"; done
written+=("$bashdir" "$zshdir" "$fishdir")

# The mtd-utils names: relative links beside the binaries.
for l in "${links[@]}"; do
  name="${l%%:*}"
  target="${l#*:}"
  rm -f "$bindir/$name"
  ln -s "$target" "$bindir/$name"
done

echo "installed into $root:"
echo "  bin/: ${bins[*]}"
[ "$mtd_names" -eq 0 ] || echo "  links in bin/: mkfs.jffs2 sumtool jffs2dump jffs2reader fsck.jffs2 jefferson"
for d in "${written[@]}"; do echo "  ${d#"$root"/}/"; done
case ":$PATH:" in
  *":$prefix/bin:"*) ;;
  *) [ -n "$destdir" ] || echo "note: $prefix/bin is not in PATH" ;;
esac
