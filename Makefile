.PHONY: build install test bench bench-100k fuzz
GO ?= go

build:
	CGO_ENABLED=0 $(GO) build -o bin/anvil ./cmd/anvil

# Puts anvil in $(go env GOPATH)/bin (usually ~/go/bin): have that on your PATH.
install:
	CGO_ENABLED=0 $(GO) install ./cmd/anvil

# Everything CI runs: installs test dependencies when missing, gofmt, vet, go test -race.
test:
	./scripts/test.sh $(TESTFLAGS)

# Speed figures through the real HTTP API (see docs/benchmarks.md).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./bench/...

# The figures at 100,000 nodes (about 10 minutes; docs/benchmarks.md).
bench-100k:
	ANVIL_BENCH_100K=1 $(GO) test -run '^$$' -bench 100k -benchtime 1x -benchmem -timeout 60m ./bench/
	ANVIL_BENCH_100K=1 $(GO) test -run '^$$' -bench SyncPowerStates100000 -benchtime 1x ./internal/conductor/

# Short fuzzing runs of the API decoders.
fuzz:
	./scripts/fuzz.sh
