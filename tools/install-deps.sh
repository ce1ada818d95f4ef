#!/bin/sh
# install-deps.sh - install what cygprof needs to build and test, with
# apt-get, on Debian 12 (run as root).  Installs only what is missing.
set -eu
pkgs="gcc g++ meson ninja-build pkg-config liblmdb-dev lmdb-utils libelf-dev libdw-dev
libunwind-dev libzstd-dev zlib1g-dev libcurl4-openssl-dev valgrind python3 binutils groff-base man-db clang libfuzzer-14-dev
chromium zsh
heaptrack uftrace"
# heaptrack, uftrace: the baselines of bench/ (bench.py, memstream.py, sizes.py)
missing=""
for p in $pkgs; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing
fi
