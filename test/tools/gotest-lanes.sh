#!/usr/bin/env bash
# Runs `go test` over the whole module in two lanes at once, as make test
# does, and exits non-zero if either lane failed. Both lanes print to
# stdout as their packages finish.
#
#   test/tools/gotest-lanes.sh -count=1 -timeout 40m
#
# The sandbox lane runs the packages that each start a sandbox fleet
# (test/e2e/..., test/sandbox) two at a time: on 2 cores, a third would
# slow the specs whose bounds are timed. The other lane runs every other
# package, one at a time, beside it, at nice LANE_NICE (default 10).
# Those start at most an envtest apiserver or a small sandbox each, and
# the e2e suites leave a third to half of the two cores idle while their
# specs wait on etcd, the limiter's pace or a Job's backoff: in one lane,
# as `go test ./...` ran them (alphabetically, the e2e suites last), the
# unit packages took about five minutes of the run before the first suite
# started. The nice level gives the suites the cores whenever they want
# them: at the same priority the two lanes kept both cores 95-100 % busy,
# and a fleet spec's deletes, paced by the limiter, reached the
# apiservers bunched (7 in 0.44 s against a bound of 6.9).
#
# Arguments are go test flags for both lanes (not -p, which each lane
# sets).
set -uo pipefail
cd "$(dirname "$0")/../.."

sandbox=$(go list ./test/e2e/... ./test/sandbox) || exit 1
others=$(go list ./... | grep -vxF "$sandbox") || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

flags=("$@")
lane() { # lane NAME P NICE PACKAGES...: go test at -p P and nice NICE; its exit code goes to $dir/NAME
	local name=$1 p=$2 n=$3
	shift 3
	nice -n "$n" go test "${flags[@]}" -p "$p" "$@" 2>&1
	echo $? > "$dir/$name"
}
# shellcheck disable=SC2086 # the package lists are words
lane sandbox 2 0 $sandbox &
# shellcheck disable=SC2086
lane others 1 "${LANE_NICE:-10}" $others &
wait
rc=0
for name in sandbox others; do
	code=$(cat "$dir/$name" 2>/dev/null || echo 1)
	[ "$code" -eq 0 ] || { echo "go test, $name lane: exit $code"; rc=1; }
done
exit $rc
