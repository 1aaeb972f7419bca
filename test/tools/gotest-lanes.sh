#!/usr/bin/env bash
# Runs `go test` over the whole module in two lanes at once, as make test
# does, and exits non-zero if either lane failed. Both lanes print to
# stdout as their packages finish.
#
#   test/tools/gotest-lanes.sh -count=1 -timeout 40m
#
# The sandbox lane runs the packages that each start a sandbox fleet
# (test/e2e/..., test/sandbox), the fleet suite's shard specs, which need
# a sandbox of their own (make test-e2e-shard), and the provider's suite
# (three envtest apiservers, the longest of the rest: with it the other
# lane ended last, 95 s after this one, in CI-P), two at a time: on 2
# cores, a third would slow the specs whose bounds are timed. It takes
# them longest first (sandboxOrder), one go test each, so that the two
# that run last are short and neither slot idles long while the other
# finishes: with go test -p 2 over the list, the fleet suite (the longest)
# started third, and the shard specs ran alone after both lanes, 220 s of
# a 2,004 s run (CI-H) with one slot idle.
#
# The other lane runs every other package, LANE_OTHERS_P (default 1) at a
# time, beside it, at nice LANE_NICE (default 10). Those start at most an
# envtest apiserver or a small sandbox each, and the e2e suites leave a
# third to half of the two cores idle while their specs wait on etcd, the
# limiter's pace or a Job's backoff: in one lane, as `go test ./...` ran
# them (alphabetically, the e2e suites last), the unit packages took about
# five minutes of the run before the first suite started. The nice level
# gives the suites the cores whenever they want them: at the same priority
# the two lanes kept both cores 95-100 % busy, and a fleet spec's deletes,
# paced by the limiter, reached the apiservers bunched (7 in 0.44 s
# against a bound of 6.9). One package at a time, the other lane ended
# 81 s after the sandbox lane in CI-L (1,828 s). Two at a time, it ended
# 500 s before it but slowed the suites more than it gained (CI-N, 1,967
# s: fleet 682 s, pacing 586 s), and the load failed two specs whose
# whole-test budgets it overran (stop 42's CI). So one it is.
#
# Arguments are go test flags for both lanes (not -p, which each lane
# sets).
set -uo pipefail
cd "$(dirname "$0")/../.."

# sandboxOrder: the sandbox jobs, longest first, as fresh-clone CI runs
# timed them (CI-P, 2026-12-07, seconds): fleet 491, recovery 460,
# memberctl 435, pacing 432, the shard specs 341, faults 300, etcddata
# 270, sandbox 263, totalloss 241, the provider 135 (in the other lane),
# lincheck 18, e2eutil 9. A sandbox package
# missing here runs first: its length is unknown, and a long one run last
# would leave a slot idle the longest.
shardJob="./test/e2e/fleet -ginkgo.label-filter=shard"
sandboxOrder=(./test/e2e/fleet ./test/e2e/recovery ./test/e2e/memberctl ./test/e2e/pacing
	"$shardJob" ./test/e2e/faults ./test/e2e/etcddata ./test/sandbox ./test/e2e/totalloss
	./providers/kubeconfigsecret ./test/e2e/lincheck ./test/e2e/e2eutil)

mod=$(go list -m) || exit 1
sandbox=$(go list ./test/e2e/... ./test/sandbox ./providers/kubeconfigsecret) || exit 1
others=$(go list ./... | grep -vxF "$sandbox") || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# The jobs file: one go test argument list per line.
jobs="$dir/sandbox-jobs"
for pkg in $sandbox; do
	rel=./${pkg#"$mod"/}
	printf '%s\n' "${sandboxOrder[@]}" | grep -qxF "$rel" || echo "$rel"
done > "$jobs"
for job in "${sandboxOrder[@]}"; do
	pkg=${job%% *}
	grep -qxF "$mod/${pkg#./}" <<<"$sandbox" && echo "$job"
done >> "$jobs"

flags=("$@")
export LANE_DIR=$dir LANE_START
LANE_START=$(date +%s)
# sandboxJob ARGS...: one go test; its output is printed whole once it
# ends (under a lock, so that the two slots' outputs never interleave).
sandboxJob() {
	local out rc start
	start=$(date +%s)
	out=$(mktemp -p "$LANE_DIR")
	go test -p 1 "$@" >"$out" 2>&1
	rc=$?
	echo "sandbox lane: go test $*: $(($(date +%s) - start))s, from +$((start - LANE_START))s" >>"$out"
	flock "$LANE_DIR/print.lock" cat "$out"
	return $rc
}
export -f sandboxJob

# The sandbox lane: xargs keeps two jobs running and exits non-zero if
# any failed.
(
	# shellcheck disable=SC2016 # expanded by the job's bash
	xargs -P 2 -L 1 bash -c 'sandboxJob "$@"' _ "${flags[@]}" < "$jobs"
	echo $? > "$dir/sandbox"
	echo "sandbox lane: done at +$(($(date +%s) - LANE_START))s"
) &
(
	# shellcheck disable=SC2086 # the package list is words
	nice -n "${LANE_NICE:-10}" go test "${flags[@]}" -p "${LANE_OTHERS_P:-1}" $others 2>&1
	echo $? > "$dir/others"
	echo "other lane: done at +$(($(date +%s) - LANE_START))s"
) &
wait
rc=0
for name in sandbox others; do
	code=$(cat "$dir/$name" 2>/dev/null || echo 1)
	[ "$code" -eq 0 ] || { echo "go test, $name lane: exit $code"; rc=1; }
done
exit $rc
