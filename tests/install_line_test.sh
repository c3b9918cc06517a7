#!/usr/bin/env bash
# install_line_test.sh: what `cmake --install` gives a user of the library, and nothing more. Into a
# temporary prefix: include/temper holds exactly the headers of the source tree's include/temper
# (CMake's TEMPER_PUBLIC_HEADERS), none of the internal ones beside the modules in src/, each
# opening with a comment that says what it is for; no front end's library (the gym, MCP, the
# agent, the report) is installed, and temper.pc names no library of theirs (libcurl, the agent's,
# is not among libtemper's). A small program that opens nothing, includes <temper/session.h> and
# <temper/result.h> and prints the result's documentation table and an error's message, builds with
# `pkg-config --cflags --libs temper` against the shared and the static libtemper, and runs.
# Needs no device.
# usage: install_line_test.sh CMAKE BUILD_DIR SOURCE_DIR
# Exit status: 0 passed, 1 a check failed, 77 no C compiler (skipped).
set -u
cmake=$1
build=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
work=$(mktemp -d /tmp/temper-install-line-XXXXXX)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
failures=0

fail() {
    echo "FAIL $*"
    failures=$((failures + 1))
}

command -v cc >/dev/null || { echo "SKIP: no C compiler (cc)"; exit 77; }
command -v pkg-config >/dev/null || { echo "FAIL pkg-config is not installed"; exit 1; }

if ! "$cmake" --install "$build" --prefix "$prefix" >"$work/install.log" 2>&1; then
    echo "FAIL cmake --install"
    tail -20 "$work/install.log"
    exit 1
fi
pc=$(find "$prefix" -name temper.pc | head -1)
[ -n "$pc" ] || { echo "FAIL no temper.pc under the prefix"; exit 1; }
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
libdir=$(pkg-config --variable=libdir temper)
includedir=$(pkg-config --variable=includedir temper)

# The installed headers are the source tree's include/temper, one for one.
want=$(cd "$src/include/temper" && ls ./*.h | sed 's@^\./@@' | sort)
have=$(cd "$includedir/temper" 2>/dev/null && ls ./*.h | sed 's@^\./@@' | sort)
[ "$want" = "$have" ] || fail "installed headers differ from include/temper: $(diff <(echo "$want") <(echo "$have") | grep '^[<>]' | tr '\n' ' ')"
[ -n "$have" ] || fail "no header installed under $includedir/temper"
for h in $have; do
    head -1 "$includedir/temper/$h" | grep -q "^/\* $h: " || fail "temper/$h does not open with a comment naming it and what it is for"
done
# None of the internal headers beside the modules is installed, under any name.
for h in $(cd "$src/src" && find . -name '*.h' | sed 's@^\./@@'); do
    [ -e "$includedir/$h" ] || [ -e "$includedir/temper/$(basename "$h")" ] && fail "internal header installed: src/$h"
done

# The front ends' libraries stay in the binary.
for lib in temper_serve temper_mcp temper_agent temper_report; do
    find "$prefix" -name "lib$lib.*" | grep -q . && fail "lib$lib is installed"
done
for flags in "--libs" "--libs --static"; do
    # shellcheck disable=SC2086
    libs=$(pkg-config $flags temper)
    case " $libs " in
    *curl* | *microhttpd* | *hiredis* | *temper_*) fail "pkg-config $flags temper names a front end's library: $libs" ;;
    esac
done

# A program of the library's user: opens nothing, prints the result's table and an error's message.
cat >"$work/line.c" <<'PROGRAM'
#include <stdio.h>
#include <string.h>

#include <temper/result.h>
#include <temper/session.h>

int main(void)
{
    temper_result_schema_markdown(stdout);
    printf("error: %s\n", temper_strerror(TEMPER_ENODEVICE));
    return strlen(temper_strerror(TEMPER_EINVALID)) ? 0 : 1;
}
PROGRAM
# shellcheck disable=SC2046
cc -std=c11 -Wall -Wextra -Werror "$work/line.c" $(pkg-config --cflags --libs temper) -Wl,-rpath,"$libdir" \
    -o "$work/line_shared" 2>"$work/cc.log" || fail "it does not build against libtemper.so: $(head -5 "$work/cc.log")"
static_libs=$(pkg-config --libs --static temper | sed 's/-ltemper\( \|$\)/-l:libtemper.a /')
# shellcheck disable=SC2046,SC2086
cc -std=c11 -Wall -Wextra -Werror "$work/line.c" $(pkg-config --cflags temper) $static_libs -o "$work/line_static" \
    2>"$work/cc.log" || fail "it does not build against libtemper.a: $(head -5 "$work/cc.log")"
for exe in "$work/line_shared" "$work/line_static"; do
    [ -x "$exe" ] || continue
    if ! "$exe" >"$work/out" 2>&1; then
        fail "$(basename "$exe"): exit status $?: $(head -3 "$work/out")"
    elif ! grep -q '`schema_version`' "$work/out" || ! grep -q '^error: ' "$work/out"; then
        fail "$(basename "$exe"): no result table or error message: $(head -3 "$work/out")"
    fi
done
if [ -x "$work/line_shared" ]; then
    ldd "$work/line_shared" | grep -q "$libdir/libtemper.so" || fail "line_shared does not load the installed libtemper.so"
    ldd "$work/line_shared" | grep -q libcurl && fail "line_shared loads libcurl"
fi

[ "$failures" -eq 0 ] && echo "PASS: install_line_test" || echo "$failures failure(s)"
[ "$failures" -eq 0 ]
