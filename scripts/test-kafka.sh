#!/usr/bin/env bash
# Runs the suites that talk to Kafka (eventstore, cmd/docket) against a real
# Apache Kafka cluster started by scripts/kafka.sh. If no cluster runs, one of
# N brokers (default 1) is started and stopped again at the end, whatever the
# outcome; a cluster that was already running is used and left running.
#
#   scripts/test-kafka.sh [N]        (make test-kafka [N=3])
#
# With N >= 3 the cluster fault suite runs too (DOCKET_TEST_CLUSTER_BROKERS);
# with a test S3 server running, documents are kept in S3.
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
N="${1:-1}"
PKGS="${TEST_KAFKA_PKGS:-./eventstore/ ./cmd/docket/}"

owned=0
if ! scripts/kafka.sh running; then
	owned=1
	trap 'scripts/kafka.sh stop' EXIT
	trap 'exit 130' INT TERM
fi
brokers="$(scripts/kafka.sh start "$N")"
echo "test-kafka: DOCKET_TEST_KAFKA_BROKERS=$brokers"
# Three or more brokers also enable the cluster fault suite (TestCluster*).
if [ "$N" -ge 3 ]; then
	export DOCKET_TEST_CLUSTER_BROKERS="$brokers"
fi
# A running test S3 server (scripts/s3/s3.sh start) puts documents there.
if scripts/s3/s3.sh running 2>/dev/null; then
	export $(scripts/s3/s3.sh env)
	echo "test-kafka: documents in S3 at $DOCKET_TEST_S3_ENDPOINT"
fi
status=0
# shellcheck disable=SC2086 # PKGS is a list
DOCKET_TEST_KAFKA_BROKERS="$brokers" "$GO" test -race -count=1 -timeout 30m ${TEST_KAFKA_FLAGS:-} $PKGS || status=$?
if [ "$status" -ne 0 ]; then
	echo "test-kafka: FAILED (exit $status)" >&2
	if [ "$owned" = 1 ]; then
		# The cluster is removed on exit: keep its logs, and show their ends.
		mkdir -p .cache/kafka/failed
		for f in .cache/kafka/run/*/server.log; do
			[ -f "$f" ] || continue
			node="$(basename "$(dirname "$f")")"
			cp "$f" ".cache/kafka/failed/$node-server.log"
			echo "--- last lines of broker $node's log" >&2
			tail -n 20 "$f" >&2
		done
		echo "test-kafka: broker logs kept in .cache/kafka/failed/" >&2
	else
		echo "test-kafka: broker logs: .cache/kafka/run/<i>/server.log" >&2
	fi
fi
exit "$status"
