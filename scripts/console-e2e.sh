#!/usr/bin/env bash
# Browser test of the operator console: builds docket, installs the one npm
# dependency (playwright-core, which downloads no browser) and drives
# Debian's Chromium through test/console/console.e2e.mjs. Screenshots, the
# step results and the server log go to $SCREENSHOT_DIR (out/screenshots).
set -euo pipefail
cd "$(dirname "$0")/.."
GO="${GO:-go}"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
export SCREENSHOT_DIR="${SCREENSHOT_DIR:-$PWD/out/screenshots}"
if [ ! -x "$CHROMIUM" ]; then
	echo "console-e2e: $CHROMIUM not found (apt-get install chromium)" >&2
	exit 1
fi
"$GO" build -o bin/docket ./cmd/docket
if [ ! -d test/console/node_modules/playwright-core ]; then
	npm ci --prefix test/console --no-audit --no-fund
fi
rm -rf "$SCREENSHOT_DIR"
mkdir -p "$SCREENSHOT_DIR"
DOCKET_BIN="$PWD/bin/docket" node test/console/console.e2e.mjs
