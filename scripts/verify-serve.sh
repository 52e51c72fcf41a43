#!/usr/bin/env bash
# Runs the built binary as an operator would: `docket serve` on a fresh data
# dir, a few documents through the API, a clean stop, then `docket verify`
# on the data dir it left (rebuild from offset 0 == live views, key by key),
# `docket replay` and `docket events`. Fails on any difference.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${DOCKET_BIN:-bin/docket}
dir=$(mktemp -d)
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$dir"' EXIT
"$bin" serve --data-dir "$dir/data" --listen 127.0.0.1:0 --broker-listen 127.0.0.1:0 --partitions 4 \
	--log-level warn >"$dir/serve.log" 2>&1 &
pid=$!
for _ in $(seq 300); do
	[ -s "$dir/data/api-key" ] && [ -s "$dir/data/http.addr" ] && break
	sleep 0.1
done
key=$(cat "$dir/data/api-key")
url=http://$(cat "$dir/data/http.addr")
auth=(-H "Authorization: Bearer $key")
for i in 1 2 3; do
	printf 'INVOICE %s\nWidget A  2  1.50  3.00\nService fee  1  10.00  10.00\nTotal 13.00 USD\n' "$i" >"$dir/inv$i.txt"
	curl -sf "${auth[@]}" -F file=@"$dir/inv$i.txt" -F reference="PO-$i" "$url/v1/batches/ci/documents" >/dev/null
done
curl -sf "${auth[@]}" -X POST "$url/v1/batches/ci/process" >/dev/null
for _ in $(seq 600); do
	curl -sf "${auth[@]}" "$url/v1/batches/ci" | grep -q '"all_done":true' && break
	sleep 0.1
done
curl -sf "${auth[@]}" "$url/v1/batches/ci" | grep -q '"all_done":true' || { echo "batch never finished"; cat "$dir/serve.log"; exit 1; }
kill -TERM "$pid"
wait "$pid" || true
"$bin" verify --data-dir "$dir/data"
"$bin" replay --data-dir "$dir/data" --into "$dir/replayed" --compare-raw
n=$("$bin" events --data-dir "$dir/data" --batch ci --type DocumentSucceeded | wc -l)
[ "$n" -eq 3 ] || { echo "docket events: $n DocumentSucceeded in batch ci, want 3"; exit 1; }
echo "docket events: 3 DocumentSucceeded in batch ci"
