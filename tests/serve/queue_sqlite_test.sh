#!/usr/bin/env bash
# queue_sqlite_test.sh: the queue's conformance test (queue_conformance_test) against the SQLite engine, one
# store file per test case in a temporary folder.
# usage: queue_sqlite_test.sh QUEUE_CONFORMANCE_TEST
set -u
work=$(mktemp -d /tmp/temper-queue-sqlite-XXXXXX)
trap 'rm -rf "$work"' EXIT
"$1" "sqlite:$work"
