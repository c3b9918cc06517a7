#!/usr/bin/env bash
# source_bytes_test.sh: how `temper eval` reads a candidate's bytes. A NUL byte, in a file or on
# standard input, is `invalid` naming its byte offset and line, and the result's source_hash is
# over every byte (not the bytes before the NUL, which would make it naive.cl). --lang names the
# language of files too, over their extension. A source over 1 MiB is an ordinary `invalid`
# result (one over 16 MiB is not read). Runs on the OpenCL device (PoCL here); skipped
# (77) when there is none.
# usage: source_bytes_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-bytes-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
if ! "$temper" devices 2>/dev/null | grep -q 'opencl:0'; then
    echo "skipped: no OpenCL device"
    exit 77
fi
failures=0
fail() {
    echo "FAIL: $*"
    failures=$((failures + 1))
}
naive=$src/tasks/L1/vector_add/naive.cl

# json_field KEY FILE: a top-level string field of eval --json's output.
json_field() {
    sed -n "s/^  \"$1\": \"\\(.*\\)\",\\{0,1\\}\$/\\1/p" "$2" | head -n 1
}

# ---- 1. a NUL byte is invalid, wherever the source comes from ----
{ cat "$naive"; printf '\0junk\n#include <stdio.h>\n'; } >"$work/X.cl"
offset=$(wc -c <"$naive")
line=$(($(tr -cd '\n' <"$naive" | wc -c) + 1))
naive_hash=$("$temper" eval "$naive" --no-timing --no-store --json | tee "$work/naive.json" >/dev/null;
    json_field source_hash "$work/naive.json")
[ -n "$naive_hash" ] || fail "naive.cl gave no source_hash: $(cat "$work/naive.json")"
for how in file stdin; do
    if [ $how = file ]; then
        "$temper" eval "$work/X.cl" --no-timing --json >"$work/out" 2>"$work/err"
    else
        "$temper" eval - --lang opencl --no-timing --json <"$work/X.cl" >"$work/out" 2>"$work/err"
    fi
    rc=$?
    [ $rc = 1 ] || fail "$how: a source with a NUL byte exits $rc, not 1 (invalid): $(cat "$work/out" "$work/err")"
    [ "$(json_field verdict "$work/out")" = invalid ] || fail "$how: not invalid: $(cat "$work/out")"
    grep -q "NUL byte at byte offset $offset (line $line)" "$work/out" ||
        fail "$how: the message does not name offset $offset and line $line: $(json_field message "$work/out")"
    hash=$(json_field source_hash "$work/out")
    [ -n "$hash" ] && [ "$hash" != "$naive_hash" ] ||
        fail "$how: source_hash '$hash' is naive.cl's (or missing): the hash must cover every byte"
done
# The store lists it under its own path, not naive.cl's (it is another candidate).
"$temper" history >"$work/history" 2>&1
grep -q "$work/X.cl" "$work/history" || fail "history does not list X.cl: $(cat "$work/history")"
grep -q "naive.cl" "$work/history" && fail "history lists naive.cl, which was not stored: $(cat "$work/history")"

# ---- 2. --lang applies to files too, over their extension ----
"$temper" eval "$naive" --lang cuda --no-timing --no-store >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 3 ] || fail "naive.cl --lang cuda on the OpenCL device exits $rc, not 3 (no usable device)"
grep -q "naive.cl is CUDA, but the device is opencl" "$work/err" ||
    fail "naive.cl --lang cuda was not taken as CUDA: $(cat "$work/out" "$work/err")"
cp "$naive" "$work/va.txt"
"$temper" eval "$work/va.txt" --lang opencl --no-timing --no-store --json >"$work/out" 2>"$work/err"
rc=$?
[ $rc = 0 ] && [ "$(json_field verdict "$work/out")" = correct ] ||
    fail "va.txt --lang opencl: exit $rc, not correct: $(cat "$work/out" "$work/err")"
[ "$(json_field candidate "$work/out")" = "$work/va.txt" ] ||
    fail "va.txt --lang opencl is not named by its path: $(json_field candidate "$work/out")"
"$temper" eval "$work/va.txt" --no-timing --no-store >"$work/out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "its language must be given" "$work/out" ||
    fail "va.txt without --lang: exit $rc: $(cat "$work/out")"
"$temper" eval --help | grep -q "over their files' extensions" || fail "eval --help does not say --lang applies to files"

# ---- 3. a source over 1 MiB is an ordinary invalid result; over 16 MiB it is not read ----
{ cat "$naive"; head -c 1100000 /dev/zero | tr '\0' ' '; } >"$work/big.cl"
size=$(wc -c <"$work/big.cl")
"$temper" eval "$work/big.cl" --no-timing >"$work/out" 2>&1
rc=$?
[ $rc = 1 ] && grep -q "the source is $size bytes, over the limit of 1048576" "$work/out" ||
    fail "a $size-byte source: exit $rc, not an invalid verdict naming its size: $(cat "$work/out")"
"$temper" history >"$work/history" 2>&1
grep -q "$work/big.cl" "$work/history" || fail "the invalid $size-byte source was not recorded"
"$temper" eval "$work/big.cl" "$naive" --no-timing --no-store >"$work/out" 2>&1
grep -q "2 candidates: 1 correct, 1 not correct, 0 not evaluated" "$work/out" ||
    fail "in a batch, the big source is not an ordinary invalid result: $(cat "$work/out")"
head -c $((16 * 1048576 + 1)) /dev/zero | tr '\0' ' ' >"$work/huge.cl"
"$temper" eval "$work/huge.cl" --no-timing >"$work/out" 2>&1
rc=$?
[ $rc = 2 ] && grep -q "larger than 16777216 bytes" "$work/out" ||
    fail "a source over 16 MiB: exit $rc, not 2 with 'larger than 16777216 bytes': $(cat "$work/out")"

if [ $failures -gt 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "ok: the candidate's bytes are judged as given"
