#!/usr/bin/env bash
# A local S3-compatible server for testing blobstore.S3 against a real S3
# implementation: the Versity S3 Gateway (versitygw, Apache-2.0) serving a
# temporary directory through its posix backend. The server is built from
# the Go module proxy with `go install module@version` into .cache/s3/bin
# (git-ignored); nothing else is fetched. It listens on 127.0.0.1 only.
#
#   scripts/s3/s3.sh build        build the pinned server (no-op if built)
#   scripts/s3/s3.sh start        build if needed, start on a free loopback
#                                 port with a fresh data dir, create the test
#                                 bucket, wait until it answers
#   scripts/s3/s3.sh stop         stop the server and remove its data
#   scripts/s3/s3.sh env          print the DOCKET_TEST_S3_* variables, one
#                                 KEY=VALUE a line: export $(scripts/s3/s3.sh env)
#   scripts/s3/s3.sh status       show what runs
#   scripts/s3/s3.sh running      exit 0 if a server started here runs
#   scripts/s3/s3.sh test [ARGS]  start (unless running), run
#                                 `go test -race -count=1 ARGS` (default
#                                 ./blobstore/) with the variables set, and
#                                 stop what it started, also on failure
#
# Environment: S3_SERVER_VERSION (default v1.8.0), S3_CACHE_DIR (default
# <repo>/.cache/s3), S3_START_TIMEOUT (seconds, default 30), GO (default go).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MODULE="github.com/versity/versitygw/cmd/versitygw"
VERSION="${S3_SERVER_VERSION:-v1.8.0}"
CACHE="${S3_CACHE_DIR:-$ROOT/.cache/s3}"
BINDIR="$CACHE/bin"
BIN="$BINDIR/versitygw"
RUN="$CACHE/run"
START_TIMEOUT="${S3_START_TIMEOUT:-30}"
GO="${GO:-go}"

# Fixed test credentials: the server is reachable from this machine only and
# holds nothing but test data.
ACCESS_KEY="docket-test-access"
SECRET_KEY="docket-test-secret-key"
BUCKET="docket-test"
REGION="us-east-1"
EMPTY_SHA256="e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

log() { echo "s3.sh: $*" >&2; }
die() {
	log "$*"
	exit 1
}
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found: $2"; }

build() {
	if [ -x "$BIN" ] && [ "$(cat "$BINDIR/.version" 2>/dev/null)" = "$VERSION" ]; then
		return 0
	fi
	need "$GO" "install Go"
	mkdir -p "$BINDIR"
	log "building $MODULE@$VERSION (first build takes about two minutes)"
	local start=$SECONDS
	# -mod and vendoring flags from the caller's GOFLAGS would not apply to
	# a module outside this repository; keep only what is harmless.
	GOBIN="$BINDIR" GOFLAGS=-buildvcs=false "$GO" install "$MODULE@$VERSION" >&2 ||
		die "go install $MODULE@$VERSION failed"
	echo "$VERSION" >"$BINDIR/.version"
	log "built $BIN in $((SECONDS - start))s"
}

pid() { cat "$RUN/pid" 2>/dev/null || true; }

running() {
	local p
	p="$(pid)"
	[ -n "$p" ] && kill -0 "$p" 2>/dev/null
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# signed prints the HTTP status of a signed, bodiless request (000: no
# answer).
signed() {
	local method="$1" path="$2" how=(-X "$1")
	[ "$method" = HEAD ] && how=(--head)
	curl -s -o /dev/null -w '%{http_code}' --max-time 5 "${how[@]}" \
		-H "x-amz-content-sha256: $EMPTY_SHA256" \
		--aws-sigv4 "aws:amz:$REGION:s3" -u "$ACCESS_KEY:$SECRET_KEY" \
		"http://127.0.0.1:$(cat "$RUN/port")$path" || true
}

start() {
	if running; then
		log "already running (pid $(pid), port $(cat "$RUN/port"))"
		return 0
	fi
	need curl "install curl (apt-get install curl)"
	build
	rm -rf "$RUN"
	mkdir -p "$RUN"
	local data
	data="$(mktemp -d "${TMPDIR:-/tmp}/docket-s3.XXXXXX")"
	echo "$data" >"$RUN/data"

	local attempt port p deadline code
	for attempt in 1 2 3 4 5; do
		port=$((20000 + RANDOM % 20000))
		if port_in_use "$port"; then
			continue
		fi
		echo "$port" >"$RUN/port"
		# Single-account mode: the root credentials below are the only
		# user. --quiet drops per-request logging.
		nohup "$BIN" --access "$ACCESS_KEY" --secret "$SECRET_KEY" --region "$REGION" \
			--port "127.0.0.1:$port" --quiet posix "$data" >"$RUN/log" 2>&1 </dev/null &
		p=$!
		echo "$p" >"$RUN/pid"
		deadline=$((SECONDS + START_TIMEOUT))
		while kill -0 "$p" 2>/dev/null && [ $SECONDS -lt $deadline ]; do
			code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/" || true)"
			if [ "$code" != "000" ]; then
				break
			fi
			sleep 0.1
		done
		if ! kill -0 "$p" 2>/dev/null; then
			log "server exited on port $port (attempt $attempt):"
			sed 's/^/  /' "$RUN/log" >&2
			continue
		fi
		if [ $SECONDS -ge $deadline ]; then
			stop
			die "server did not answer within ${START_TIMEOUT}s; log: $RUN/log"
		fi
		# The posix backend does not create buckets on first use.
		code="$(signed PUT "/$BUCKET")"
		case "$code" in
		200 | 409) ;;
		*)
			stop
			die "creating bucket $BUCKET failed: HTTP $code"
			;;
		esac
		[ "$(signed HEAD "/$BUCKET")" = 200 ] || {
			stop
			die "bucket $BUCKET not visible after creation"
		}
		log "versitygw $VERSION running on 127.0.0.1:$port (pid $p, data $data)"
		return 0
	done
	rm -rf "$data" "$RUN"
	die "could not start the server; see messages above"
}

stop() {
	local p data
	p="$(pid)"
	if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
		kill "$p" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$p" 2>/dev/null || true
		log "stopped pid $p"
	fi
	data="$(cat "$RUN/data" 2>/dev/null || true)"
	case "$data" in
	*/docket-s3.*) rm -rf "$data" ;;
	esac
	rm -rf "$RUN"
}

env_lines() {
	running || die "not running: scripts/s3/s3.sh start"
	echo "DOCKET_TEST_S3_ENDPOINT=http://127.0.0.1:$(cat "$RUN/port")"
	echo "DOCKET_TEST_S3_ACCESS_KEY=$ACCESS_KEY"
	echo "DOCKET_TEST_S3_SECRET_KEY=$SECRET_KEY"
	echo "DOCKET_TEST_S3_BUCKET=$BUCKET"
	echo "DOCKET_TEST_S3_REGION=$REGION"
}

status() {
	if running; then
		echo "versitygw $VERSION: running, pid $(pid), http://127.0.0.1:$(cat "$RUN/port"), data $(cat "$RUN/data")"
	else
		echo "versitygw: not running"
	fi
}

run_tests() {
	local started=0
	if ! running; then
		start
		started=1
		trap 'stop' EXIT
	fi
	local line
	while IFS= read -r line; do
		export "${line?}"
	done < <(env_lines)
	[ $# -gt 0 ] || set -- ./blobstore/
	(cd "$ROOT" && "$GO" test -race -count=1 "$@")
	if [ $started = 1 ]; then
		trap - EXIT
		stop
	fi
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
build) build ;;
start) start ;;
stop) stop ;;
env) env_lines ;;
status) status ;;
running) running ;;
test) run_tests "$@" ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
