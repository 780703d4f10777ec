.PHONY: build install test bench fuzz
GO ?= go

build:
	CGO_ENABLED=0 $(GO) build -o bin/anvil ./cmd/anvil

# Puts anvil in $(go env GOPATH)/bin (usually ~/go/bin): have that on your PATH.
install:
	CGO_ENABLED=0 $(GO) install ./cmd/anvil

# Everything CI runs: installs test dependencies when missing, gofmt, vet, go test -race.
test:
	./scripts/test.sh

# Speed figures through the real HTTP API (see README "Benchmarks").
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./bench/...

# Short fuzzing runs of the API decoders.
fuzz:
	./scripts/fuzz.sh
