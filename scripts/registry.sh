#!/usr/bin/env bash
# A real schema registry speaking the Confluent API, for the Confluent wire
# format test (eventstore TestConfluentWireFormat): Aiven's Karapace, run
# against a real Kafka (scripts/kafka.sh). Everything under .cache/registry/.
#
#   scripts/registry.sh install SRC   build a venv from a Karapace source tree
#   scripts/registry.sh start BROKERS start it (free port) and print its URL
#   scripts/registry.sh stop
#   scripts/registry.sh test          run the eventstore test against it
#
# Karapace is not published on PyPI ("pip install karapace" finds no
# version), its pinned Avro fork is a GitHub tarball and its protopace
# library needs a buf fork the Go module proxy does not serve, so it cannot
# be installed from the package registries alone: install takes a source
# tree (a checkout of Aiven-Open/karapace), Python 3.12+ and Go, and works
# around the two forks (below). CI therefore cannot run it; see README (The
# event log).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/.cache/registry"
VENV="$DIR/venv"
GO="${GO:-go}"
log() { echo "registry.sh: $*" >&2; }

install() {
	local src="${1:?usage: registry.sh install KARAPACE_SOURCE_DIR}" py="${PYTHON312:-python3.12}" site
	rm -rf "$DIR/src"
	mkdir -p "$DIR"
	cp -r "$src" "$DIR/src"
	src="$DIR/src"
	"$py" -m venv "$VENV"
	# The pinned Avro fork is a GitHub tarball: use the Avro library from
	# PyPI instead (the registry needs it only to parse and compare schemas).
	grep -v '^avro @' "$src/requirements/requirements.txt" | grep -v '^\s*#' >"$DIR/requirements.txt"
	echo 'avro==1.12.0' >>"$DIR/requirements.txt"
	"$VENV/bin/pip" install -q -r "$DIR/requirements.txt"
	# protopace (protobuf support, a Go library loaded with ctypes) needs
	# Aiven's fork of buf, which the Go module proxy does not serve. Upstream
	# buf refuses to be imported from outside github.com/bufbuild, so the
	# module is renamed for the build; Avro does not use it, but Karapace
	# loads it at start.
	(cd "$src/go/protopace" &&
		sed -i '/^replace github.com\/bufbuild\/buf/d; s#^module .*#module github.com/bufbuild/protopace#' go.mod &&
		grep -rl 'github.com/Aiven-Open/karapace/go/protopace' --include='*.go' . | xargs -r sed -i 's#github.com/Aiven-Open/karapace/go/protopace#github.com/bufbuild/protopace#g' &&
		GOFLAGS=-mod=mod "$GO" build -buildmode=c-shared -o "$DIR/protopacelib.so" .)
	printf 'from setuptools import setup\n\nsetup()\n' >"$src/setup.py"
	sed -i 's/, "setuptools-golang"//' "$src/pyproject.toml"
	SETUPTOOLS_SCM_PRETEND_VERSION=0.0.0 "$VENV/bin/pip" install -q --no-deps "$src"
	site=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
	cp "$DIR/protopacelib.so" "$site/protopacelib$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')"
	log "installed into $VENV"
}

start() {
	local brokers="${1:?usage: registry.sh start BROKERS}" port
	[ -x "$VENV/bin/python" ] || { log "not installed: scripts/registry.sh install SRC"; exit 1; }
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	mkdir -p "$DIR"
	KARAPACE_BOOTSTRAP_URI="$brokers" KARAPACE_HOST=127.0.0.1 KARAPACE_PORT="$port" \
		KARAPACE_ADVERTISED_HOSTNAME=127.0.0.1 KARAPACE_REGISTRY_HOST=127.0.0.1 KARAPACE_REGISTRY_PORT="$port" \
		KARAPACE_KARAPACE_REGISTRY=true KARAPACE_REPLICATION_FACTOR=1 KARAPACE_TOPIC_NAME=_docket_schemas \
		KARAPACE_LOG_LEVEL=WARNING \
		nohup "$VENV/bin/python" -m karapace >"$DIR/karapace.log" 2>&1 &
	echo $! >"$DIR/pid"
	for _ in $(seq 120); do
		# Ready once it is the group's master: before that, writes fail
		# with "Error while forwarding the request to the master".
		if curl -sf "http://127.0.0.1:$port/master_available" 2>/dev/null | grep -q '"master_available":true'; then
			echo "http://127.0.0.1:$port" | tee "$DIR/url"
			return 0
		fi
		kill -0 "$(cat "$DIR/pid")" 2>/dev/null || break
		sleep 1
	done
	log "Karapace did not answer; last lines of its log:"
	tail -20 "$DIR/karapace.log" >&2
	stop
	exit 1
}

stop() {
	if [ -f "$DIR/pid" ]; then
		kill "$(cat "$DIR/pid")" 2>/dev/null || true
		rm -f "$DIR/pid" "$DIR/url"
	fi
}

case "${1:-}" in
install) install "${2:-}" ;;
start) start "${2:-}" ;;
stop) stop ;;
test)
	DOCKET_TEST_SCHEMA_REGISTRY="$(cat "$DIR/url")" DOCKET_TEST_KAFKA_BROKERS="${DOCKET_TEST_KAFKA_BROKERS:-}" \
		"$GO" test -race -count=1 -run Confluent -v ./eventstore/ ./cmd/docket/
	;;
*) echo "usage: registry.sh install SRC|start BROKERS|stop|test" >&2; exit 2 ;;
esac
