# graphloom — build, test, demo, benchmark.
# Every target runs with the pure-Go SIMD backend and never downloads a PJRT plugin.
export GOEXPERIMENT := simd
export GOMLX_BACKEND ?= go
export GOMLX_NO_AUTO_INSTALL := 1
export CGO_ENABLED ?= 0

GO      ?= go
BIN     := bin/graphloom
VERSION := $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
PKGS    := ./...
SHARED  ?= ../shared
CORPORA := $(SHARED)/data/corpora
OUT     ?= out

.PHONY: all build test test-race demo bench eval fuzz lint clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/graphloom

## test: unit and integration tests (pure Go backend, no network but loopback).
test: lint
	$(GO) test -count=1 -timeout 15m $(PKGS)

## test-race: the same tests under the race detector (slow). Pointer checks (checkptr)
## are off: compute v0.1.2's pure-Go small matmul (nosimd_small.go) fails them on its
## pointer arithmetic, which is not a race, and its safe variant (-tags no_unsafe) does
## not build (smallNoSIMDGenericParallelTransposed undefined).
test-race: lint
	$(GO) test -race -gcflags=all=-d=checkptr=0 -count=1 -timeout 90m $(PKGS)

## demo: index the example corpus offline and show what graphloom builds.
demo: build
	@./scripts/demo.sh $(BIN) $(OUT)/demo

## bench: throughput and kernel benchmarks against reference implementations.
bench: build
	@./bench/run.sh $(BIN) $(CORPORA) $(OUT)/bench

## eval: retrieval evaluation on the example corpus and, if present, ../shared corpora.
eval: build
	@./scripts/eval.sh $(BIN) $(CORPORA) $(OUT)/eval

## fuzz: run every fuzz target for FUZZTIME each.
FUZZTIME ?= 60s
fuzz:
	@./scripts/fuzz.sh $(FUZZTIME)

lint:
	@bad=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet $(PKGS)

clean:
	rm -rf bin $(OUT)
