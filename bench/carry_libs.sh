#!/usr/bin/env bash
# carry_libs.sh: the shared libraries a binary built here needs on a machine that lacks some of
# them (the GPU machine has no libmicrohttpd, hiredis or redis-server). Sourced by bench scripts.
#
#   carry_libs_collect DIR BINARY...   here: copies every library the binaries load, but the C
#                                      runtime's own, into DIR
#   carry_libs_link DIR BINARY...      there: links into a fresh folder only the libraries of DIR
#                                      that this machine lacks (its own stay first), puts it on
#                                      LD_LIBRARY_PATH, says which it used; fails naming what still
#                                      cannot load

carry_libs_collect() {
    local dir=$1
    shift
    mkdir -p "$dir"
    for b in "$@"; do
        ldd "$b" | awk '/=> \// {print $3}'
    done | sort -u | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*)\.so' | while read -r lib; do
        cp -L "$lib" "$dir/"
    done
}

carry_libs_link() {
    local dir=$1 need missing b m
    shift
    need=$(mktemp -d /tmp/carried-libs-XXXXXX)
    for _ in 1 2 3 4 5 6 7 8; do
        missing=$(for b in "$@"; do
            LD_LIBRARY_PATH=$need${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$b" | awk '/not found/ {print $1}'
        done | sort -u)
        [ -z "$missing" ] && break
        for m in $missing; do
            [ -e "$dir/$m" ] && ln -sf "$(cd "$dir" && pwd)/$m" "$need/$m"
        done
    done
    export LD_LIBRARY_PATH=$need${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    [ -z "$(ls "$need")" ] || echo "carried libraries used: $(ls "$need" | tr '\n' ' ')"
    for b in "$@"; do
        if ldd "$b" | grep -q "not found"; then
            echo "$b cannot load: $(ldd "$b" | grep 'not found' | tr '\n' ' ')" >&2
            return 1
        fi
    done
}
