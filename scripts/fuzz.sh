#!/usr/bin/env bash
# Runs every Go fuzz target in the module for a short time each, seeds first.
# `go test -fuzz` takes one target per run, so this discovers them with
# `go test -list` instead of keeping a hand-written list that drifts.
#
# Environment: FUZZTIME (default 10s per target; a count such as 3000x runs
# that many inputs instead), GO (default go).
#
# CI uses a count: with a duration, Go 1.26's fuzz coordinator can report
# a bare "context deadline exceeded" failure when the time runs out while a
# worker is busy (go.dev/issue/75804, fixed in Go 1.27), which a loaded
# machine hits now and then; a count has no deadline to race.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
FUZZTIME="${FUZZTIME:-10s}"

total=0
for pkg in $($GO list ./...); do
	targets=$($GO test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for t in $targets; do
		echo "== $pkg $t ($FUZZTIME)"
		# -parallel 2: the CI machine has two cores.
		$GO test -run '^$' -fuzz "^${t}\$" -fuzztime "$FUZZTIME" -parallel 2 "$pkg"
		total=$((total + 1))
	done
done
echo "fuzzed $total targets for $FUZZTIME each"
[ "$total" -gt 0 ]
