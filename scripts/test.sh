#!/usr/bin/env bash
# `make test` (the default tier), `make test-slow` (the slow tier), CI runs both.
#
# The default tier is every test not marked `slow`; the slow tier is the tests marked `slow`:
# learning to a threshold, kills and resumes, Tune, clusters, online retrains. Each tier runs
# in two pytest sessions at once. Most tests wait on process start-ups (Ray actors,
# PostgreSQL, SUMO, Spark's JVM), which leaves one of two cores idle much of the time; the
# second session fills it. The side session holds suites that share no service with the
# rest (queryopt is the only user of the test PostgreSQL and of Spark; traffic, QT-Opt,
# R2D2/R2D3 and Tune start their own Ray), chosen per tier so that both sessions
# take about the same time. Its output is printed after the main session's; the exit status
# is non-zero when either fails. Plain `pytest` still runs everything in one session.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
TIER=${TIER:-default}
case "$TIER" in
default)
    MARK="not slow"
    SIDE=(tests/apps/queryopt tests/apps/traffic tests/bench) ;;
slow)
    MARK="slow"
    SIDE=(tests/apps tests/platform/qtopt tests/platform/r2d2 tests/platform/test_tuning.py) ;;
*) echo "scripts/test.sh: TIER must be default or slow, not '$TIER'" >&2; exit 2 ;;
esac
if [ $# -gt 0 ]; then exec "$PY" -m pytest "$@"; fi  # a chosen subset: one session, every tier

# pytest exits 5 when a session selects no test; a tier with nothing in a session is fine.
ok() { [ "$1" -eq 0 ] || [ "$1" -eq 5 ]; }

side_log=$(mktemp)
side_tmp=$(mktemp -d)
"$PY" -m pytest -m "$MARK" "${SIDE[@]}" -p no:cacheprovider --basetemp="$side_tmp/pytest" \
    >"$side_log" 2>&1 &
side_pid=$!
trap 'kill "$side_pid" 2>/dev/null; wait "$side_pid" 2>/dev/null; rm -rf "$side_log" "$side_tmp"' EXIT

"$PY" -m pytest -m "$MARK" "${SIDE[@]/#/--ignore=}"
main_rc=$?
wait "$side_pid"
side_rc=$?

echo
echo "==================== ${SIDE[*]} (ran beside the session above) ===================="
cat "$side_log"
if ! ok "$main_rc" || ! ok "$side_rc"; then
    echo "make test ($TIER tier): FAILED (main session exit $main_rc, side session exit $side_rc)"
    exit 1
fi
echo "make test ($TIER tier): both sessions passed"
