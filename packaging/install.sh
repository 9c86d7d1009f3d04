#!/usr/bin/env bash
# Builds and installs git-agent and gitagentd.
#
#   packaging/install.sh [--prefix DIR] [--destdir DIR] [--bin-dir DIR]
#
# Installs both binaries to <destdir><prefix>/bin (prefix defaults to
# $HOME/.local, destdir to empty), the manual pages (git-agent.1 is what
# `git agent --help` shows) to <destdir><prefix>/share/man/man1 and, when
# the fish configuration folder exists (${XDG_CONFIG_HOME:-$HOME/.config}/fish),
# the fish completions to its completions/ folder. --bin-dir installs
# already-built binaries from DIR instead of running
# `cargo build --release --locked`.
set -euo pipefail

prefix="${PREFIX:-$HOME/.local}"
destdir="${DESTDIR:-}"
bin_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#*=}"; shift ;;
    --destdir) destdir="$2"; shift 2 ;;
    --destdir=*) destdir="${1#*=}"; shift ;;
    --bin-dir) bin_dir="$2"; shift 2 ;;
    --bin-dir=*) bin_dir="${1#*=}"; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument: $1" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "$bin_dir" ]; then
  cargo build --release --locked --manifest-path "$root/Cargo.toml" --bin git-agent --bin gitagentd
  target="${CARGO_TARGET_DIR:-$root/target}"
  bin_dir="$target/release"
fi

dest_bin="$destdir$prefix/bin"
install -d -m 0755 "$dest_bin"
for binary in git-agent gitagentd; do
  if [ ! -x "$bin_dir/$binary" ]; then
    echo "install.sh: $bin_dir/$binary is missing; build it first or drop --bin-dir" >&2
    exit 1
  fi
  install -m 0755 "$bin_dir/$binary" "$dest_bin/$binary"
done
echo "installed git-agent and gitagentd to $dest_bin"

dest_man="$destdir$prefix/share/man/man1"
install -d -m 0755 "$dest_man"
install -m 0644 "$root"/packaging/man/*.1 "$dest_man/"
echo "installed the manual pages to $dest_man"

fish_config_dir="${XDG_CONFIG_HOME:-$HOME/.config}/fish"
if [ -d "$fish_config_dir" ]; then
  completions="$destdir$fish_config_dir/completions"
  install -d -m 0755 "$completions"
  install -m 0644 "$root/packaging/completions/git-agent.fish" "$completions/git-agent.fish"
  echo "installed fish completions to $completions"
fi
