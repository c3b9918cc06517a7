# redis_server.sh: sourced by the Redis tests (bash): starts a private redis-server on a free
# loopback port, with no persistence, in a temporary folder, and stops it when the shell exits.
# Sets REDIS_PORT and REDIS_URL; exits 77 (skipped) when there is no redis-server. The binary is
# $REDIS_SERVER, else redis-server from PATH.
# usage: . redis_server.sh WORK_DIR

redis_bin=${REDIS_SERVER:-$(command -v redis-server || true)}
if [ -z "$redis_bin" ] || [ ! -x "$redis_bin" ]; then
    echo "SKIP: no redis-server (install the redis-server package, or set REDIS_SERVER)"
    exit 77
fi
redis_dir=$1/redis
mkdir -p "$redis_dir"
redis_pid=

redis_stop() {
    if [ -n "$redis_pid" ]; then
        kill "$redis_pid" 2>/dev/null
        wait "$redis_pid" 2>/dev/null
        redis_pid=
    fi
}

# Answers 0 when the server on REDIS_PORT answers PING.
redis_ping() {
    local reply
    { exec 9<>"/dev/tcp/127.0.0.1/$REDIS_PORT"; } 2>/dev/null || return 1
    printf 'PING\r\n' >&9
    read -r -t 2 reply <&9
    exec 9<&- 9>&-
    [ "${reply%$'\r'}" = "+PONG" ]
}

# A free port from the kernel (bind to port 0); another process may take it before redis-server
# does, so a server that does not come up is tried again on another port.
for attempt in 1 2 3 4 5; do
    REDIS_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "$redis_bin" --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$redis_dir" \
        --daemonize no --logfile "$redis_dir/redis.log" &
    redis_pid=$!
    for i in $(seq 1 100); do
        redis_ping && break
        kill -0 "$redis_pid" 2>/dev/null || break
        sleep 0.05
    done
    redis_ping && break
    redis_stop
done
if [ -z "$redis_pid" ]; then
    echo "FAIL: redis-server did not start (log: $redis_dir/redis.log)"
    cat "$redis_dir/redis.log" 2>/dev/null
    exit 1
fi
REDIS_URL=redis://127.0.0.1:$REDIS_PORT
export REDIS_PORT REDIS_URL
