#!/usr/bin/env bash
# A real schema registry speaking the Confluent API, for the Confluent wire
# format tests (eventstore TestConfluentWireFormat, cmd/docket
# TestConfluentMigration): Apicurio Registry, whose Confluent-compatible API
# is at /apis/ccompat/v7, with in-memory (H2) storage. It is built from
# published Maven artifacts only (scripts/registry/pom.xml says which and
# why); everything it builds and writes lives under .cache/registry/.
#
#   scripts/registry.sh fetch    build the runnable registry (Java 17, Maven)
#   scripts/registry.sh start    start it on a free loopback port, wait until
#                                it answers, print its URL (also kept in
#                                .cache/registry/url)
#   scripts/registry.sh stop     stop it (its storage goes with it)
#   scripts/registry.sh running  exit 0 if a registry started here runs
#   scripts/registry.sh test     run the Confluent tests against it on a real
#                                Kafka broker (scripts/test-kafka.sh); starts
#                                (and then stops) the registry and the broker
#                                unless they run (make test-registry)
#
# Environment: REGISTRY_HEAP (default "-Xmx384m"), REGISTRY_START_TIMEOUT
# (seconds, default 120).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PROJECT="$ROOT/scripts/registry"
DIR="$ROOT/.cache/registry"
BUILD="$DIR/build"
HEAP="${REGISTRY_HEAP:--Xmx384m}"
START_TIMEOUT="${REGISTRY_START_TIMEOUT:-120}"
GO="${GO:-go}"
log() { echo "registry.sh: $*" >&2; }
die() { log "$*"; exit 1; }

# stamp identifies the project's sources, so that fetch rebuilds after a change.
stamp() { (cd "$PROJECT" && find . -type f | sort | xargs sha256sum | sha256sum | cut -d' ' -f1); }

fetch() {
	command -v java >/dev/null || die "java not found: install a JDK (17 or newer)"
	command -v mvn >/dev/null || die "mvn not found: install Maven"
	local want
	want=$(stamp)
	if [ -f "$BUILD/registry-runner.jar" ] && [ "$(cat "$DIR/stamp" 2>/dev/null)" = "$want" ]; then
		return 0
	fi
	rm -rf "$BUILD" "$DIR/stamp"
	mkdir -p "$DIR"
	mvn -B -q -f "$PROJECT/pom.xml" -Dregistry.build.dir="$BUILD" package
	[ -f "$BUILD/registry-runner.jar" ] || die "the build made no $BUILD/registry-runner.jar"
	echo "$want" >"$DIR/stamp"
	log "built $BUILD/registry-runner.jar ($(du -sh "$BUILD/lib" | cut -f1) of libraries)"
}

start() {
	local port url pid t0=$SECONDS
	[ -f "$BUILD/registry-runner.jar" ] || die "not built: scripts/registry.sh fetch"
	if [ -f "$DIR/pid" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; then
		die "already running (pid $(cat "$DIR/pid")): scripts/registry.sh stop"
	fi
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	url="http://127.0.0.1:$port/apis/ccompat/v7"
	# shellcheck disable=SC2086 # HEAP holds several JVM flags
	nohup java $HEAP -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port="$port" \
		-jar "$BUILD/registry-runner.jar" >"$DIR/registry.log" 2>&1 &
	pid=$!
	echo "$pid" >"$DIR/pid"
	for _ in $(seq $((START_TIMEOUT * 2))); do
		if curl -sf "$url/subjects" >/dev/null 2>&1; then
			warm "$url"
			log "ready after $((SECONDS - t0))s (log: $DIR/registry.log)"
			echo "$url" >"$DIR/url"
			echo "$url"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	log "the registry did not answer at $url; last lines of its log:"
	tail -20 "$DIR/registry.log" >&2
	stop
	exit 1
}

# warm registers a schema and reads it back once: the first registration
# after start loads much of the registry's code and, on a busy machine, takes
# longer than a client's timeout (franz-go's sr client gives up after 5s).
warm() {
	local body='{"schema":"{\"type\":\"record\",\"name\":\"Warmup\",\"fields\":[{\"name\":\"a\",\"type\":\"string\"}]}"}'
	curl -sf --max-time "$START_TIMEOUT" -X POST -H 'Content-Type: application/vnd.schemaregistry.v1+json' \
		--data "$body" "$1/subjects/registry-sh-warmup/versions" >/dev/null ||
		die "the registry refused the warm-up registration (log: $DIR/registry.log)"
	curl -sf --max-time "$START_TIMEOUT" "$1/subjects/registry-sh-warmup/versions/latest" >/dev/null
}

stop() {
	if [ -f "$DIR/pid" ]; then
		local pid
		pid=$(cat "$DIR/pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
		kill -9 "$pid" 2>/dev/null || true
		rm -f "$DIR/pid" "$DIR/url"
	fi
}

running() { [ -f "$DIR/pid" ] && [ -f "$DIR/url" ] && kill -0 "$(cat "$DIR/pid")" 2>/dev/null; }

# test runs the Confluent tests on a real Kafka broker (scripts/test-kafka.sh
# starts one unless a cluster runs) against the registry, starting the
# registry too unless it runs; what it started it stops, also on failure.
# The tests skip without a registry, so it also checks that both ran.
test_() {
	cd "$ROOT"
	local status=0 t
	scripts/kafka.sh fetch
	if ! running; then
		fetch
		trap stop EXIT
		trap 'exit 130' INT TERM
		start >/dev/null
	fi
	export DOCKET_TEST_SCHEMA_REGISTRY
	DOCKET_TEST_SCHEMA_REGISTRY="$(cat "$DIR/url")"
	echo "registry.sh: DOCKET_TEST_SCHEMA_REGISTRY=$DOCKET_TEST_SCHEMA_REGISTRY"
	# One test at a time (-p 1 -parallel 1): Apicurio's in-memory storage
	# wedges under more concurrent writers than TestConfluentConcurrentRegistration's
	# two (in CI, one row lock of its H2 database stayed held for 30 s and
	# every registration of four tests timed out). docket asks a registry
	# again on timeouts and 5xx; it cannot mend a registry that stops answering.
	TEST_KAFKA_PKGS='./eventstore/ ./cmd/docket/' TEST_KAFKA_FLAGS='-run Confluent -v -p 1 -parallel 1' GO="$GO" \
		scripts/test-kafka.sh 1 2>&1 | tee "$DIR/test.log" || status=$?
	for t in TestConfluentWireFormat TestConfluentConcurrentRegistration TestConfluentRegistrationOutlivesALateAnswer \
		TestConfluentIncompatibleSchemaFails TestConfluentMigration; do
		grep -q -- "--- PASS: $t " "$DIR/test.log" || { log "$t did not pass"; status=1; }
	done
	if [ "$status" -ne 0 ]; then
		log "last lines of the registry's log ($DIR/registry.log):"
		tail -20 "$DIR/registry.log" >&2
	fi
	return "$status"
}

case "${1:-}" in
fetch) fetch ;;
start) start ;;
stop) stop ;;
running) running ;;
test) test_ ;;
*) echo "usage: registry.sh fetch|start|stop|running|test" >&2; exit 2 ;;
esac
