#!/usr/bin/env bash
# Property-based API fuzzing against a live node: installs Schemathesis into
# a venv under .cache/ (pip, default index), starts `docket serve` on a fresh
# data dir, and runs every operation of the served /openapi.json with
# generated and malformed input, checking that no answer is a 5xx and that
# every answer matches the description (status, content type, headers,
# body schema).
#
# Environment: ST_MAX_EXAMPLES (default 25 per operation), ST_SEED (default
# random, printed), ST_WORKERS (default 2), GO (default go), PYTHON (default
# python3).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
PYTHON="${PYTHON:-python3}"
VENV=.cache/schemathesis
VERSION=4.32.5
MAX_EXAMPLES="${ST_MAX_EXAMPLES:-25}"
SEED="${ST_SEED:-$RANDOM$RANDOM}"
WORKERS="${ST_WORKERS:-2}"

if ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$VERSION"; then
	"$PYTHON" -m venv "$VENV"
	"$VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$VERSION"
fi

$GO build -o bin/docket ./cmd/docket
data=$(mktemp -d)
log="$data/docket.log"
# Limits high enough that the fuzzer's volume is not refused with 429 (the
# limits have their own tests); everything else as shipped.
bin/docket serve --data-dir "$data" --listen 127.0.0.1:0 --broker-listen 127.0.0.1:0 --partitions 2 \
	--rate 10000000 --status-rate 10000000 --ip-rate 10000000 --log-level warn >"$log" 2>&1 &
pid=$!
cleanup() {
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -rf "$data"
}
trap cleanup EXIT

for _ in $(seq 1 300); do
	if [ -s "$data/http.addr" ] && curl -fsS "http://$(cat "$data/http.addr")/readyz" >/dev/null 2>&1; then
		break
	fi
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "docket exited during start:"; cat "$log"; exit 1
	fi
	sleep 0.2
done
addr=$(cat "$data/http.addr")
key=$(cat "$data/api-key")
echo "docket at http://$addr (seed $SEED, $MAX_EXAMPLES examples per operation)"

rc=0
# Revoking keys is left out: the fuzzer finds the key it runs with and
# revokes it (correctly), after which everything is 401. Revocation has its
# own test (TestAPIKeyRevocation).
PYTHONPATH=scripts SCHEMATHESIS_HOOKS=schemathesis_hooks "$VENV/bin/schemathesis" run "http://$addr/openapi.json" \
	--header "Authorization: Bearer $key" \
	--checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
	--phases examples,coverage,fuzzing \
	--max-examples "$MAX_EXAMPLES" --seed "$SEED" --workers "$WORKERS" \
	--request-timeout 10 --generation-database none --no-color --suppress-health-check all --generation-with-security-parameters false \
	--exclude-operation-id revokeApiKey \
	--report junit,har --report-dir "${ST_REPORT_DIR:-.cache/schemathesis-report}" || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "--- docket log (tail)"; tail -n 50 "$log"
fi
exit "$rc"
