# docket — one binary, everything embedded by default.
GO      ?= go
BIN     := bin/docket
PKGS    := ./...

.PHONY: all build run test vet bench clean

all: build

build:
	$(GO) build -o $(BIN) ./cmd/docket

# Starts docket with the embedded Kafka-protocol broker, views, duties,
# worker and HTTP API in one process. Data goes to ./docket-data.
run: build
	./$(BIN) serve --log-format console

vet:
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# Every test, with the race detector. The end-to-end and event-store suites
# use the embedded broker unless DOCKET_TEST_KAFKA_BROKERS=host:port,... is set.
test: vet
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

# Benchmarks: the end-to-end lifecycle (closed loop for throughput, open
# loop at 100 documents/s for latency) and the Go micro-benchmarks.
bench: build
	./$(BIN) bench --documents 5000 --concurrency 64
	./$(BIN) bench --documents 2000 --rate 100
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 200x ./blobstore/ ./eventstore/ ./projections/ ./extract/

clean:
	rm -rf bin
