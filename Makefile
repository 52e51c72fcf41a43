# docket — one binary, everything embedded by default.
GO      ?= go
BIN     := bin/docket
PKGS    := ./...

.PHONY: all build run test vet bench bench-kafka clean kafka-fetch kafka-start kafka-stop kafka-status test-kafka test-cluster s3-start s3-stop test-s3 fuzz test-console api-fuzz soak registry-fetch test-registry

all: build

# Without cgo, as the container image: Pebble's block cache and memtables
# then live in the Go heap, which returns memory after a backlog; with cgo
# they come from C malloc, and the 10-minute bench kept a backlog's peak
# resident (BENCHMARKS.md, memory).
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN) ./cmd/docket

# Starts docket with the embedded Kafka-protocol broker, views, duties,
# worker and HTTP API in one process. Data goes to ./docket-data.
run: build
	./$(BIN) serve --log-format console --webhook-allow-loopback

# Windows and macOS too: their build-tagged files (*_other.go) are not
# compiled on Linux, and a helper moved to another package once broke them
# unnoticed.
vet:
	$(GO) vet $(PKGS)
	GOOS=windows $(GO) vet $(PKGS)
	GOOS=darwin $(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Every test, with the race detector. The end-to-end and event-store suites
# use the embedded broker unless DOCKET_TEST_KAFKA_BROKERS=host:port,... is set.
# Then the libraries' benchmarks, twice each, so that none rots between
# `make bench` runs (their checks — a log the fold refuses, a notification
# missing — fail them); their figures mean nothing at that length.
test: vet
	$(GO) test -race -count=1 -timeout 20m $(PKGS)
	$(GO) test -run '^$$' -bench . -benchtime 2x ./blobstore/ ./eventstore/ ./projections/

# A local Apache Kafka cluster (KRaft; jars from Maven into .cache/kafka/;
# needs Java 17+ and Maven). `make kafka-start N=3` starts three brokers.
N ?= 1

kafka-fetch:
	scripts/kafka.sh fetch

kafka-start:
	scripts/kafka.sh start $(N)

kafka-stop:
	scripts/kafka.sh stop

kafka-status:
	scripts/kafka.sh status

# The event-store and end-to-end suites against real Kafka: starts N brokers
# (default 1) unless a cluster already runs, and stops what it started at the
# end, also on failure.
test-kafka:
	GO=$(GO) scripts/test-kafka.sh $(N)

# The cluster fault suite: three brokers (replication factor 3,
# min.insync.replicas 2), two API and two worker docket processes, killed
# with SIGKILL (worker, duties owner, a broker).
test-cluster:
	TEST_KAFKA_PKGS=./cmd/docket/ TEST_KAFKA_FLAGS='-run ^TestCluster -v' GO=$(GO) scripts/test-kafka.sh 3

# The Confluent wire format tests (TestConfluentWireFormat,
# TestConfluentMigration) against a real schema registry on a real Kafka
# broker: Apicurio Registry, built from Maven artifacts into .cache/registry/
# (in-memory storage; needs Java 17+ and Maven). Starts the registry and a
# broker unless they run, and stops what it started, also on failure.
registry-fetch:
	scripts/registry.sh fetch

test-registry:
	GO=$(GO) scripts/registry.sh test

# A local S3-compatible server (versitygw, built from the Go module proxy
# into .cache/s3/), and the blob store suite against it.
s3-start:
	GO=$(GO) scripts/s3/s3.sh start

s3-stop:
	scripts/s3/s3.sh stop

test-s3:
	GO=$(GO) scripts/s3/s3.sh test ./blobstore/

# The operator console in Debian's Chromium, driven by playwright-core;
# screenshots in out/screenshots/.
test-console:
	GO=$(GO) scripts/console-e2e.sh

# Every Go fuzz target, briefly (FUZZTIME per target, default 10s, or a
# count such as 10000x), after its seed corpus; `make fuzz FUZZTIME=10m`
# for a real session.
FUZZTIME ?= 10s
fuzz:
	FUZZTIME=$(FUZZTIME) GO=$(GO) scripts/fuzz.sh

# Property-based API fuzzing: Schemathesis (pip, into .cache/schemathesis)
# runs every operation of /openapi.json against a live node.
# ST_MAX_EXAMPLES per operation (default 25).
api-fuzz:
	GO=$(GO) scripts/schemathesis.sh

# The crash soak on demand: KILLS SIGKILLs of a loaded node (CI runs 4 in
# make test).
KILLS ?= 50
soak:
	DOCKET_SOAK_KILLS=$(KILLS) $(GO) test -count=1 -timeout 60m -run '^TestCrashSoak$$' -v ./cmd/docket/

# Benchmarks (BENCHMARKS.md): `docket bench` runs the whole set in one
# process — closed loop for the peak, open loop at half of it with 2,000
# GET/s from a child process and RSS samples, then the raw franz-go and
# Pebble ceilings and the replay on the same broker and disk, as ratios —
# then the Go micro-benchmarks. A few minutes in all. BENCH_FLAGS adds
# flags (e.g. --json); bench-kafka runs the set against a real single
# Apache Kafka broker (scripts/kafka.sh), started and stopped around it
# unless one already runs.
BENCH_FLAGS ?=
BENCH_SET   := --documents 3000 --concurrency 32 --duration 20s
bench: build
	./$(BIN) bench $(BENCH_SET) $(BENCH_FLAGS)
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 200x ./blobstore/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2000x ./eventstore/
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 20x ./projections/

bench-kafka: build
	@scripts/kafka.sh fetch
	@started=; if ! scripts/kafka.sh running; then scripts/kafka.sh start 1 && started=1; fi; \
	  ./$(BIN) bench --kafka-brokers "$$(scripts/kafka.sh brokers)" --broker-pids "$$(scripts/kafka.sh pids)" $(BENCH_SET) $(BENCH_FLAGS); rc=$$?; \
	  if [ -n "$$started" ]; then scripts/kafka.sh stop; fi; exit $$rc

clean:
	rm -rf bin
