#!/usr/bin/env bash
# Installs what the outside-Go consumer test (cmd/docket TestOutsideConsumer)
# needs: Debian's kcat, a Kafka client that is not ours, and a Python venv
# under .cache/pyvenv with fastavro, an Avro library that is not ours.
set -euo pipefail
cd "$(dirname "$0")/../.."
sudo_() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
if ! command -v kcat >/dev/null; then
	sudo_ apt-get update -q
	sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -q kcat
fi
kcat -V | head -1
if [ ! -x .cache/pyvenv/bin/python ]; then
	python3 -m venv .cache/pyvenv
fi
.cache/pyvenv/bin/pip install -q -r scripts/consumer/requirements.txt
.cache/pyvenv/bin/python -c 'import fastavro; print("fastavro", fastavro.__version__)'
