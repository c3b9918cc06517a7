#!/usr/bin/env bash
# queue_redis_test.sh: the queue's conformance test (queue_conformance_test) against a real redis-server
# started here on a free loopback port, stopped at the end.
# usage: queue_redis_test.sh QUEUE_CONFORMANCE_TEST
set -u
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/temper-queue-redis-XXXXXX)
trap 'declare -F redis_stop >/dev/null && redis_stop; rm -rf "$work"' EXIT
. "$here/redis_server.sh" "$work"
"$1" "$REDIS_URL"
