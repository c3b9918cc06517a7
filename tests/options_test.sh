#!/usr/bin/env bash
# options_test.sh: every numeric option of every command is checked for range: a value out of
# range, negative, too large for its type, or not a number exits 2 with a message naming the
# option and saying why; a value in range is taken (the command then stops later, on a missing
# candidate file or a second operand, which shows the option itself was accepted). Needs no
# device: nothing here gets as far as starting one.
# usage: options_test.sh TEMPER_BINARY
set -u
temper=$1
work=$(mktemp -d /tmp/temper-options-XXXXXX)
export TEMPER_HOME=$work/home TEMPER_CACHE=$work/cache
trap 'rm -rf "$work"' EXIT
failures=0
missing=$work/missing.cl

# bad COMMAND OPTION VALUE REASON: the option with that value is refused with exit 2, and stderr
# names the option and holds REASON.
bad() {
    local cmd=$1 opt=$2 value=$3 reason=$4
    "$temper" "$cmd" "$missing" "$opt" "$value" >"$work/out" 2>"$work/err"
    local got=$?
    if [ "$got" -ne 2 ] || ! grep -qF -- "temper: $opt: " "$work/err" || ! grep -qF -- "$reason" "$work/err" ||
        [ -s "$work/out" ]; then
        echo "FAIL $cmd $opt '$value': exit $got, expected 2 with '$opt: ... $reason' on stderr"
        sed 's/^/     stderr: /' "$work/err" | head -5
        sed 's/^/     stdout: /' "$work/out" | head -5
        failures=$((failures + 1))
        return
    fi
    echo "ok   $cmd $opt '$value' refused: $(head -1 "$work/err")"
}

# good COMMAND OPTION VALUE: the option is taken; eval then stops on the missing file (it reads its
# files before it starts a device), tune on its second operand (a usage error).
good() {
    local cmd=$1 opt=$2 value=$3 expect got
    if [ "$cmd" = tune ]; then
        "$temper" tune "$missing" second-operand "$opt" "$value" >"$work/out" 2>"$work/err"
        got=$?
        expect="usage: temper tune"
    else
        "$temper" "$cmd" "$missing" "$opt" "$value" >"$work/out" 2>"$work/err"
        got=$?
        expect=$missing
    fi
    if [ "$got" -ne 2 ] || grep -qF -- "$opt:" "$work/err" || ! grep -qF -- "$expect" "$work/err" ||
        grep -q 'calibrat' "$work/err"; then
        echo "FAIL $cmd $opt '$value' should be taken (exit $got)"
        sed 's/^/     stderr: /' "$work/err" | head -5
        failures=$((failures + 1))
        return
    fi
    echo "ok   $cmd $opt '$value' taken"
}

# The cases of the issue: --budget 0, -1, past 32 bits; --retime -5.
bad tune --budget 0 "out of range: it must be between 1 and"
bad tune --budget -1 "out of range"
bad tune --budget 99999999999 "out of range"
bad tune --budget 99999999999999999999999 "does not fit in 64 bits"
bad tune --retime -5 "out of range"
bad tune --retime 0 "out of range"
bad tune --budget 12x "'12x' is not an integer"
bad tune --budget 1.5 "is not an integer"
bad tune --budget "" "is not an integer"
bad tune --seed -1 "out of range"
bad tune --seed 9223372036854775808 "out of range"
bad tune --seed abc "is not an integer"
bad tune --batch 0 "out of range"
bad tune --batch 1000 "out of range"
bad tune --time 0 "out of range"
bad tune --time -3 "out of range"
bad tune --time nan "is not a number"
bad tune --time inf "is not a number"
bad tune --screen-budget 0 "out of range"
bad tune --screen-budget -0.1 "out of range"
bad tune --full-budget 1e99 "out of range"
bad tune --full-budget 2s "is not a number"
bad eval --seed -1 "out of range"
bad eval --seed 1e3 "is not an integer"
bad eval --jobs 0 "out of range"
bad eval --jobs -4 "out of range"
bad eval --jobs 4294967297 "out of range"
bad eval --launch-timeout 0 "out of range"
bad eval --launch-timeout -5 "out of range"
bad eval --launch-timeout nan "is not a number"
bad eval --time-budget 0 "out of range"
bad eval --time-budget -1 "out of range"
bad eval --time-budget 1e309 "out of range"
bad eval --time-budget ' 1' "is not a number"

good tune --budget 1
good tune --budget 1000000
good tune --retime 1
good tune --seed 0x10
good tune --seed 9223372036854775807
good tune --batch 2
good tune --time 0.5
good tune --screen-budget 0.1
good tune --full-budget 2
good eval --seed 7
good eval --jobs 1
good eval --launch-timeout 0.5
good eval --time-budget 0.3

if [ "$failures" -ne 0 ]; then
    echo "$failures failure(s)"
    exit 1
fi
echo "all options checked"
