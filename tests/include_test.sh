#!/usr/bin/env bash
# include_test.sh: a candidate cannot read the host's files. A file holding a unique token is
# included by candidates in ways the include rule and the compiler-option allow-list refuse
# (inside an array initialiser, through a digraph, a comment and a line splice, with a macro
# operand, through -I or -include in @temper flags, as a CUDA source), or probed for existence
# (__has_include built by token pasting, _Pragma("GCC dependency ..."), a pragma carried over a
# line by a comment); each must be judged invalid
# by `temper eval --json` on the OpenCL device (PoCL), with a message naming the line, and the
# token must appear nowhere: not on stdout, not on stderr, not in the store or the build cache.
# Skipped (77) when there is no OpenCL device.
# usage: include_test.sh TEMPER_BINARY SOURCE_DIR
set -u
temper=$1
src=$2
work=$(mktemp -d /tmp/temper-include-XXXXXX)
trap 'rm -rf "$work"' EXIT
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache TEMPER_TASKS=$src/tasks
if ! "$temper" devices 2>/dev/null | grep -q 'opencl:0'; then
    echo "skipped: no OpenCL device"
    exit 77
fi
failures=0
secret_dir=$work/x
mkdir -p "$secret_dir"
token="tok$(od -An -N8 -tx8 /dev/urandom | tr -d ' \n')"
case "$secret_dir" in *"$token"*) echo "the token must not be part of the path"; exit 1 ;; esac
# Included where a float is expected, the token is an undeclared identifier that a compiler would
# quote in its log.
printf '%s, 1.0f\n' "$token" >"$secret_dir/secret.h"

head_cl='// @temper task vector_add
// @temper launch add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)'
body_cl='__kernel void add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = a[i] + b[i] + table[0];
}'

# refused NAME LINE FILE: eval --json of FILE is invalid (exit 1), the message names FILE:LINE, and
# the token is nowhere.
refused() {
    local name=$1 line=$2 file=$3
    "$temper" eval "$file" --json --no-timing >"$work/out" 2>"$work/err"
    local got=$?
    local bad=""
    [ "$got" -eq 1 ] || bad="exit $got, expected 1"
    grep -q '"verdict": "invalid"' "$work/out" || bad="$bad; verdict is not invalid"
    grep -qF "$(basename "$file"):$line:" "$work/out" || bad="$bad; the message does not name line $line"
    if grep -qaF "$token" "$work/out" "$work/err"; then bad="$bad; the token is in the output"; fi
    if grep -rqaF "$token" "$TEMPER_HOME" "$TEMPER_CACHE" 2>/dev/null; then bad="$bad; the token is stored"; fi
    if [ -n "$bad" ]; then
        echo "FAIL $name: ${bad#; }"
        sed 's/^/     stdout: /' "$work/out" | head -20
        sed 's/^/     stderr: /' "$work/err" | head -5
        failures=$((failures + 1))
        return
    fi
    echo "ok   $name: $(grep -o '"message": "[^"]*"' "$work/out" | head -1 | cut -c1-160)"
}

printf '%s\n' "$head_cl" '__constant float table[] = {' "#include \"$secret_dir/secret.h\"" '};' "$body_cl" \
    >"$work/initialiser.cl"
refused "an absolute include inside an array initialiser" 4 "$work/initialiser.cl"

printf '%s\n' "$head_cl" '__constant float table[] = {' '  /* spliced and commented */ %: /**/ inc\' \
    "lude \"../../../../../../..$secret_dir/secret.h\"" '};' "$body_cl" >"$work/dotdot.cl"
refused "a digraph, a comment and a splice around a relative include" 4 "$work/dotdot.cl"

printf '%s\n' "$head_cl" "#define SECRET \"$secret_dir/secret.h\"" '__constant float table[] = {' '#include SECRET' \
    '};' "$body_cl" >"$work/macro.cl"
refused "an include with a macro operand" 5 "$work/macro.cl"

printf '%s\n' "$head_cl" "// @temper flags -I$secret_dir" '__constant float table[] = {' '#include "secret.h"' '};' \
    "$body_cl" >"$work/flag_dir.cl"
refused "an include folder in @temper flags" 3 "$work/flag_dir.cl"

printf '%s\n' "$head_cl" "// @temper flags -include $secret_dir/secret.h" '__constant float table[] = { 1.0f };' \
    "$body_cl" >"$work/flag_include.cl"
refused "a forced include in @temper flags" 3 "$work/flag_include.cl"

printf '%s\n' "$head_cl" '__device__ const float table[] = {' "#include \"$secret_dir/secret.h\"" '};' \
    'extern "C" __global__ void add(float *c, const float *a, const float *b, int N) { }' >"$work/cuda.cu"
refused "a CUDA candidate's include (refused before any device is needed)" 4 "$work/cuda.cu"

# Ways to test whether a host file exists without including it, each of which PoCL's compiler
# answers (an error, a warning naming the file, or another branch taken): __has_include built by
# token pasting, a pragma GCC dependency through _Pragma (with a literal operand, and built by a
# stringizing macro), and one whose name a block comment carries onto the next line.
table_cl='__constant float table[] = { 0.0f };'
printf '%s\n' "$head_cl" '#define PROBE(x) __has_##x' "#if PROBE(include)(\"$secret_dir/secret.h\")" \
    '#error the file exists' '#endif' "$table_cl" "$body_cl" >"$work/has_include_pasted.cl"
refused "__has_include built by token pasting" 3 "$work/has_include_pasted.cl"

printf '%s\n' "$head_cl" "_Pragma(\"GCC dependency \\\"$secret_dir/secret.h\\\"\")" "$table_cl" "$body_cl" \
    >"$work/pragma_operator.cl"
refused "_Pragma(\"GCC dependency ...\")" 3 "$work/pragma_operator.cl"

printf '%s\n' "$head_cl" '#define PRAGMA(x) _Pragma(#x)' "PRAGMA(GCC dependency \"$secret_dir/secret.h\")" \
    "$table_cl" "$body_cl" >"$work/pragma_macro.cl"
refused "_Pragma with a stringized operand" 3 "$work/pragma_macro.cl"

printf '%s\n' "$head_cl" '#pragma GCC /* the pragma goes on' "   after this comment */ dependency \"$secret_dir/secret.h\"" \
    "$table_cl" "$body_cl" >"$work/pragma_comment.cl"
refused "#pragma GCC dependency carried over a line by a comment" 3 "$work/pragma_comment.cl"

# The store holds the invalid evaluations (their sources name the file, never hold its contents).
if command -v sqlite3 >/dev/null; then
    n=$(sqlite3 "$TEMPER_HOME/temper.db" "select count(*) from evaluations")
    if [ "$n" -ge 10 ]; then echo "ok   the store holds the $n evaluations"; else
        echo "FAIL the store holds $n evaluations, expected 10"; failures=$((failures + 1)); fi
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "no included file reached any output"
