#!/usr/bin/env bash
# `make test`: the whole suite in two pytest sessions at once.
#
# Most tests wait on process start-ups (Ray actors, PostgreSQL, SUMO, Spark's JVM), which
# leaves one of two cores idle much of the time. Three app suites share no service with
# the rest: the hierarchy tests (pure torch and pybullet, their own Ray when they start
# one), the queryopt tests (the only users of the test PostgreSQL and of Spark) and the
# traffic tests (a SUMO process per test, their own Ray). They run one after the other as
# a second session beside the rest (platform and CLI tests) and fill that idle core. The
# QT-Opt, R2D2/R2D3 and benchmark-tool tests join them (their own Ray when they start one)
# so that the two sessions take about the same time (720 s against 620 s without). Their
# output is printed after the main session's; the exit status is non-zero when either
# fails. Plain `pytest` still runs everything in one session.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
SIDE=(tests/apps/hierarchy tests/apps/queryopt tests/apps/traffic tests/platform/qtopt tests/platform/r2d2 tests/bench)
if [ $# -gt 0 ]; then exec "$PY" -m pytest "$@"; fi  # a chosen subset: one session

side_log=$(mktemp)
side_tmp=$(mktemp -d)
"$PY" -m pytest "${SIDE[@]}" -p no:cacheprovider --basetemp="$side_tmp/pytest" >"$side_log" 2>&1 &
side_pid=$!
trap 'kill "$side_pid" 2>/dev/null; wait "$side_pid" 2>/dev/null; rm -rf "$side_log" "$side_tmp"' EXIT

"$PY" -m pytest "${SIDE[@]/#/--ignore=}"
main_rc=$?
wait "$side_pid"
side_rc=$?

echo
echo "==================== ${SIDE[*]} (ran beside the session above) ===================="
cat "$side_log"
if [ "$main_rc" -ne 0 ] || [ "$side_rc" -ne 0 ]; then
    echo "make test: FAILED (main session exit $main_rc, ${SIDE[*]} exit $side_rc)"
    exit 1
fi
echo "make test: both sessions passed"
