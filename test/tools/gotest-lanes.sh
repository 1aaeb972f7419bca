#!/usr/bin/env bash
# Runs `go test` over the whole module in two lanes at once, as make test
# does, and exits non-zero if either lane failed. Both lanes print to
# stdout as their jobs finish, each job's output in one piece.
#
#   test/tools/gotest-lanes.sh -count=1 -timeout 40m
#
# The sandbox lane runs the packages that each start a sandbox fleet
# (test/e2e/..., test/sandbox), plus the jobs in SANDBOX_EXTRA_JOBS (one
# per line: a package and its own go test arguments; make test passes the
# sharding e2e there), two at a time: on 2 cores, a third would slow the
# specs whose bounds are timed. Longest first: each job's last duration
# on this machine is kept in ${XDG_CACHE_HOME:-$HOME/.cache}/etcdfleet-tests,
# and a job without one (a fresh machine, a new suite) goes first, extra
# jobs ahead of packages. Started in go list order, two suites of 170-220 s
# ran last, one of them alone, while the other slot stood idle; and the
# sharding e2e ran after both lanes, alone, for 220 s.
#
# The other lane runs every other package, one at a time, beside it, at
# nice LANE_NICE (default 10). Those start at most an envtest apiserver or
# a small sandbox each, and the e2e suites leave a third to half of the two
# cores idle while their specs wait on etcd, the limiter's pace or a Job's
# backoff: in one lane, as `go test ./...` ran them (alphabetically, the
# e2e suites last), the unit packages took about five minutes of the run
# before the first suite started. The nice level gives the suites the
# cores whenever they want them: at the same priority the two lanes kept
# both cores 95-100 % busy, and a fleet spec's deletes, paced by the
# limiter, reached the apiservers bunched (7 in 0.44 s against a bound of
# 6.9).
#
# Arguments are go test flags for both lanes (not -p, which each lane
# sets); a job's own arguments come after them and win.
set -uo pipefail
cd "$(dirname "$0")/../.."

sandbox=$(go list ./test/e2e/... ./test/sandbox) || exit 1
others=$(go list ./... | grep -vxF "$sandbox") || exit 1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export LANES_DIR=$dir LANES_TIMES=${XDG_CACHE_HOME:-$HOME/.cache}/etcdfleet-tests
mkdir -p "$LANES_TIMES"

flags=("$@")
lane() { # lane NAME P NICE PACKAGES...: go test at -p P and nice NICE; its exit code goes to $dir/NAME
	local name=$1 p=$2 n=$3
	shift 3
	nice -n "$n" go test "${flags[@]}" -p "$p" "$@" 2>&1
	echo $? > "$dir/$name"
}

# job_key JOB: the file name its duration is kept under.
job_key() { printf '%s' "$1" | tr -c 'A-Za-z0-9._-' '_'; }

# run_job JOB FLAGS...: one sandbox job, its output printed whole when it
# ends (under a lock, so two jobs ending at once do not interleave) and
# its duration kept when it passed.
run_job() {
	local job=$1 out start rc
	shift
	out=$(mktemp "$LANES_DIR/job.XXXXXX")
	start=$SECONDS
	# shellcheck disable=SC2086 # a job is a package and its arguments
	go test "$@" -p 1 $job > "$out" 2>&1
	rc=$?
	flock "$LANES_DIR" cat "$out"
	[ $rc -eq 0 ] && echo $((SECONDS - start)) > "$LANES_TIMES/$(job_key "$job")"
	return $rc
}
export -f run_job job_key

# Jobs, longest first: the sort key is the last duration, or a day for a
# job never timed, so that those keep their order (extra jobs first) ahead.
jobs() {
	local n=0 job t
	while IFS= read -r job; do
		[ -n "$job" ] || continue
		t=$(cat "$LANES_TIMES/$(job_key "$job")" 2>/dev/null || echo 86400)
		printf '%s\t%s\t%s\n' "$t" "$n" "$job"
		n=$((n + 1))
	done < <(printf '%s\n' "${SANDBOX_EXTRA_JOBS:-}" "$sandbox") | sort -t$'\t' -k1,1nr -k2,2n | cut -f3
}

sandbox_lane() {
	jobs | xargs -d '\n' -P 2 -I{} bash -c 'run_job "$1" "${@:2}"' _ {} "${flags[@]}"
	echo $? > "$dir/sandbox"
}
sandbox_lane &
# shellcheck disable=SC2086 # the package list is words
lane others 1 "${LANE_NICE:-10}" $others &
wait
rc=0
for name in sandbox others; do
	code=$(cat "$dir/$name" 2>/dev/null || echo 1)
	[ "$code" -eq 0 ] || { echo "go test, $name lane: exit $code"; rc=1; }
done
exit $rc
