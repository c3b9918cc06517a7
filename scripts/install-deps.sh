#!/bin/sh
# install-deps.sh: installs what temper needs to build and test, from Debian 12's packages.
# Run as root (or with sudo). Safe to run again: apt-get skips what is installed. clang and its
# runtime libraries (libFuzzer, sanitizers) build the fuzzers of tests/fuzz; python3 reads JSON and
# object symbols in the device, install, layout and store tests; chromium renders `temper report`'s
# HTML headless in tests/report_test.sh; libmicrohttpd is the HTTP server of `temper serve`;
# hiredis builds the gym's Redis queue and redis-server runs in its tests; libcurl carries the
# agent's requests to language models; libssl-dev gives libcrypto, whose HMAC-SHA-256 seals the
# caches that later evaluations load; python3-venv makes the .venv of the tests' Python
# packages (scripts/install-pydeps.sh).
set -eu
if [ "$(id -u)" -ne 0 ]; then
    exec sudo "$0" "$@"
fi
export DEBIAN_FRONTEND=noninteractive
packages="build-essential cmake pkg-config libjansson-dev libsqlite3-dev sqlite3 libxxhash-dev \
ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libcmocka-dev clang libclang-rt-dev python3 \
chromium libmicrohttpd-dev libhiredis-dev redis-server libcurl4-openssl-dev libssl-dev python3-venv"
missing=""
for p in $packages; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    apt-get update -q
    apt-get install -y -q --no-install-recommends $missing
fi
# The Python packages the tests need, pinned, in .venv at the repository root.
"$(dirname "$0")/install-pydeps.sh"
