# sporectl — build, test, benchmark.
#
# `make test` is the one command that passes every test on a fresh machine:
# it installs (or finds in the cache outside the repo) what the tests run
# for real — Claude Code, PostgreSQL, kube-apiserver and etcd — and runs
# `go test -race ./...` (the whole suite runs under the race detector: the
# pass, the stores and the bridge are concurrent). Set CI=true to make a
# missing dependency fail the tests instead of skipping them.

GO       ?= go
BIN      ?= bin/sporectl
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/sporectl/sporectl/cmd/cli.version=$(VERSION)
BENCHTIME ?= 1s
BENCHCOUNT ?= 5
# BENCH and PKGS narrow `make bench`: BENCH=RealNodeWakeStages/one PKGS=./kube
# runs the real node's wake by stage alone (docs/performance.md).
BENCH    ?= .
PKGS     ?= ./...

.PHONY: build test test-short bench compare fuzz fmt vet demo deps screenshots images

# build makes the binary the image ships: without cgo, static, so that
# every command starts without the dynamic loader and libc
# (docs/performance.md, "Process start, again"); nothing in sporectl needs
# cgo (net and os/user have Go implementations).
build:
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/sporectl

# images writes bin/images/sporectl.tar and bin/images/spore.tar, OCI
# image archives, with no Docker and no registry (docs/runtimes.md,
# "Building the images"): the static binary, the inputs from Debian and npm
# (.ci/images.sh, cached under $${SPORECTL_CACHE:-$$HOME/.cache/sporectl}/images),
# then cmd/mkimages packs, reads back and checks both. SOURCE_DATE_EPOCH,
# if set, is every file's time (else 0).
IMAGES ?= bin/images
images:
	@set -e; mkdir -p $(IMAGES); \
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s $(LDFLAGS)" -o $(IMAGES)/sporectl ./cmd/sporectl; \
	inputs="$$(bash .ci/images.sh)"; eval "$$inputs"; \
	$(GO) run ./cmd/mkimages -out $(IMAGES) -sporectl $(IMAGES)/sporectl \
		-layer-cache "$$SPORECTL_IMAGE_LAYERS" -rootfs "$$SPORECTL_IMAGE_ROOTFS" \
		-claude-code "$$SPORECTL_IMAGE_CLAUDE_CODE" -claude-code-native "$$SPORECTL_IMAGE_CLAUDE_CODE_NATIVE" \
		-claude-code-version "$$SPORECTL_IMAGE_CLAUDE_CODE_VERSION"

# deps prints the environment the real-component tests need; each script
# is idempotent and caches under $${SPORECTL_CACHE:-$$HOME/.cache/sporectl}.
deps:
	@bash .ci/deps.sh

test:
	@set -e; deps="$$(bash .ci/deps.sh)"; eval "$$deps"; \
	$(GO) test -race -count=1 -timeout 60m ./...

# test-short runs only what needs no external component.
test-short:
	$(GO) test -count=1 -short ./...

bench:
	@set -e; deps="$$(bash .ci/deps.sh)"; eval "$$deps"; \
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) -timeout 60m $(PKGS)

# compare times whole sporectl processes on stores of 1,000 and 10,000
# spores and prints the medians and the 10k/1k ratios; with
# SPORECTL_KUBE_BIN_DIR set, also the kube runtime's status of 1,001
# spores against kubectl get pods on the same API server (.ci/compare.sh;
# RUNS, default 7, runs of each; PARTS, default "dir kube").
compare:
	@bash .ci/compare.sh

# fuzz runs every fuzz target of every package for FUZZTIME each.
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		for t in $$($(GO) test -list 'Fuzz.*' $$pkg | grep ^Fuzz); do \
			echo "== $$pkg $$t"; \
			$(GO) test -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 2s $$pkg || exit 1; \
		done; \
	done

fmt:
	gofmt -l -w .

vet:
	$(GO) vet ./...

# demo is the main job on the embedded default: a directory store and the
# local runtime, in a temporary directory.
demo: build
	@bash .ci/demo.sh $(BIN)

# screenshots regenerates docs/screenshots/ui/*.png (the README's pictures
# of the page) with the browser tests (every Test…InABrowser), in headless Chromium.
screenshots:
	@set -e; deps="$$(bash .ci/deps.sh)"; eval "$$deps"; \
	SPORECTL_ARTIFACTS=$(CURDIR)/docs/screenshots $(GO) test -count=1 -run 'InABrowser$$' ./mycelia/ui/
