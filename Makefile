# mcpcage: every MCP server in its own cage.
#
#   make setup    ready this machine: Docker engine, debootstrap, the cage images (.ci/setup)
#   make demo     the main job end to end: a real npm server caged, pinned, a change caught, the log verified
#   make test     everything CI runs: vet, staticcheck, actionlint, unit, integration (real Docker),
#                 scripts, the race detector, short fuzzing
#   make build    the binary, in ./bin/mcpcage (its version stamped in)
#   make install  the binary, in $(PREFIX)/bin (default /usr/local/bin)
#   make npm      the npm package, dist/mcpcage-VERSION.tgz (binaries for 6 platforms)
#   make release  release archives, the npm package and dist/SHA256SUMS
#   make cross    every package builds for each release platform (linux, darwin, windows; amd64, arm64)
#   make images   the cage images, built locally (no registry needed): mcpcage images build
#   make fuzz     longer fuzzing of every target in fuzz/
#   make fuzz-weekly  every fuzz target for FUZZWEEKLY inputs (20000x), as the weekly workflow does
#   make lint     staticcheck, actionlint and deadcode (pinned versions, fetched through the module proxy)
#   make mutation  mutation testing of the packages that decide what is safe (long);
#                  one package: make mutation PKG=internal/pin
#   make bench    Go benchmarks
#   make bench-egress  the egress gateway: start-up and throughput against the real engine
#   make bench-scan  the scanner measured against ../shared/corpus
#   make compat   real npm servers, bare and caged, as a table

GO        ?= go
# The short run in make test counts inputs rather than seconds: with a
# duration, Go 1.26's fuzz coordinator can fail a target with a bare
# "context deadline exceeded" at the deadline on a loaded machine
# (golang/go#75804, fixed in Go 1.27); a count has no deadline to race.
FUZZTIME  ?= 2000x
LONGFUZZ  ?= 2m
BENCHTIME ?= 1s
CORPUS    ?= ../shared/corpus
VERSION   ?= $(shell ./scripts/dist.sh version)
PREFIX    ?= /usr/local
LDFLAGS   := -X main.version=$(VERSION)
FUZZWEEKLY ?= 20000x

# Tools, pinned by version and run with `go run pkg@version`: the module proxy
# and the checksum database vouch for their source, and Go caches the built
# binaries, so a fresh machine needs nothing installed beforehand.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ACTIONLINT  ?= github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
GREMLINS    ?= github.com/go-gremlins/gremlins/cmd/gremlins@v0.6.0
DEADCODE    ?= golang.org/x/tools/cmd/deadcode@v0.39.0

# Podman's Docker-compatible API, which .ci/setup starts: the tests of the
# engines run against it beside Docker.
export MCPCAGE_TEST_PODMAN ?= unix:///run/podman/podman.sock

# The packages that start goroutines of their own run under the race detector
# (and only so, to keep CI's time: every package is tested once).
RACE_PKGS := $(wildcard internal/proxy internal/audit internal/cage internal/guard internal/egress)
MODULE    := github.com/mcpcage/mcpcage

.PHONY: setup demo build install npm release cross images test unit race escape-runsc fuzz-short fuzz fuzz-weekly bench bench-egress bench-scan compat vet lint staticcheck actionlint deadcode mutation

setup:
	./.ci/setup

build:
	# Static (no cgo): the same binary runs as the egress gateway in an empty image.
	CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/mcpcage ./cmd/mcpcage

install:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/mcpcage.static ./cmd/mcpcage
	install -D -m 0755 bin/mcpcage.static $(DESTDIR)$(PREFIX)/bin/mcpcage
	@echo "installed $(DESTDIR)$(PREFIX)/bin/mcpcage ($$($(DESTDIR)$(PREFIX)/bin/mcpcage --version))"

npm:
	VERSION=$(VERSION) ./scripts/dist.sh npm

release:
	VERSION=$(VERSION) ./scripts/dist.sh release

cross:
	./scripts/dist.sh cross

# The demo runs an npm server only: it needs the Node.js image, not Python's.
demo: build
	MCPCAGE_SETUP_PODMAN=0 ./.ci/setup node
	./examples/demo.sh

# The recipe built into the binary (images/build.sh), as a user without a
# checkout runs it: mcpcage images build.
images: build
	./bin/mcpcage images build

vet:
	$(GO) vet ./...

test: setup vet lint cross unit race escape-runsc fuzz-short

unit:
	$(GO) test -count=1 -timeout 45m $$($(GO) list ./... | grep -vxF $(foreach p,$(RACE_PKGS),-e $(MODULE)/$(p)))

race:
	$(GO) test -race -count=1 -timeout 45m $(addprefix ./,$(RACE_PKGS))

# The escape suite again, with every cage under gVisor (the engine's
# runtime "runsc", which .ci/setup registers).
escape-runsc:
	MCPCAGE_TEST_RUNTIME=runsc $(GO) test -count=1 -timeout 20m -run '^TestEscape' ./internal/cage

lint: staticcheck actionlint deadcode

staticcheck:
	$(GO) run $(STATICCHECK) ./...

actionlint:
	$(GO) run $(ACTIONLINT) -no-color

# No function that nothing calls, tests included: code only tests need
# lives in a test package (internal/proxy/proxytest, internal/cage/cagetest).
deadcode:
	@out=$$($(GO) run $(DEADCODE) -test ./...) || exit 1; \
	[ -z "$$out" ] || { echo "$$out"; echo "deadcode: error: unreachable functions (above): remove them" >&2; exit 1; }

# PKG=internal/pin limits the run to one package (or several, space-separated);
# FILES="compare.go canon.go" to those files of it.
mutation:
	GREMLINS="$(GO) run $(GREMLINS)" MUTATION_FILES="$(FILES)" ./.ci/mutation $(PKG)

# Each Fuzz target in fuzz/ runs on its own for FUZZTIME (a duration, or
# a count of inputs such as 20000x). Every target runs even after one fails;
# an input that fails is saved by go test under fuzz/testdata/fuzz/TARGET/,
# where it stays as a regression case once the bug is fixed.
# The targets in fuzz/ and the few that sit beside their package's own
# tests (found by their "func Fuzz" lines).
FUZZ_PKGS = $(sort ./fuzz $(patsubst %/,./%,$(dir $(shell grep -rl --include='*_test.go' '^func Fuzz' cmd internal 2>/dev/null))))

fuzz-short:
	@failed=; for p in $(FUZZ_PKGS); do \
		for f in $$($(GO) test -list '^Fuzz' $$p | grep '^Fuzz'); do \
			echo "fuzz $$p $$f ($(FUZZTIME))"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$p || failed="$$failed $$p:$$f"; \
		done; \
	done; \
	[ -z "$$failed" ] || { echo "fuzz: error: failing targets:$$failed (inputs saved under testdata/fuzz/ of each package)" >&2; exit 1; }

fuzz:
	$(MAKE) fuzz-short FUZZTIME=$(LONGFUZZ)

fuzz-weekly:
	$(MAKE) fuzz-short FUZZTIME=$(FUZZWEEKLY)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

# The corpus is not part of the repository: it lies beside it (../shared).
# The egress gateway against the real engine: start-up with --allow-host
# against no network, and a 64 MiB download through it against direct.
bench-egress:
	$(GO) test -run '^$$' -bench Egress -benchtime 7x -timeout 30m ./internal/cage

# SCAN_BEFORE: the commit whose rules bench-scan measures beside today's
# (the rules before issue 33's families); it needs a clone with history.
SCAN_BEFORE ?= 3c1d6c1

bench-scan:
	@[ -d "$(CORPUS)" ] || { echo "bench-scan: error: no measuring corpus at $(CORPUS) (the shared folder beside the repository); set CORPUS=DIR" >&2; exit 1; }
	@git cat-file -e $(SCAN_BEFORE)^{commit} 2>/dev/null || { echo "bench-scan: error: commit $(SCAN_BEFORE) is not in this clone (a shallow clone?); fetch the history or set SCAN_BEFORE=REV" >&2; exit 1; }
	$(GO) run ./internal/scan/corpusbench -corpus $(CORPUS) -before $(SCAN_BEFORE)
	MCPCAGE_CORPUS=$(abspath $(CORPUS)) $(GO) test -run '^$$' -bench 'CorpusList|Result64KiB|FramesCost' -cpu 1 -benchmem -benchtime $(BENCHTIME) ./internal/scan

COMPAT_LIST ?= ../shared/compat/npm-servers.tsv

compat:
	@[ -f "$(COMPAT_LIST)" ] || { echo "compat: error: no compatibility list at $(COMPAT_LIST) (the shared folder beside the repository); set COMPAT_LIST=FILE" >&2; exit 1; }
	MCPCAGE_COMPAT_LIST=$(abspath $(COMPAT_LIST)) $(GO) test -count=1 -timeout 60m -run TestCompat -tags compat ./internal/cage -v
