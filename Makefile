# mcpcage: every MCP server in its own cage.
#
#   make setup    ready this machine: Docker engine, debootstrap, the cage images (.ci/setup)
#   make demo     the main job end to end: a real npm server caged, pinned, a change caught, the log verified
#   make test     everything CI runs: unit, integration (real Docker), scripts, short fuzzing
#   make build    the binary, in ./bin/mcpcage
#   make images   the cage images, built locally (no registry needed)
#   make fuzz     longer fuzzing of every target in fuzz/
#   make bench    Go benchmarks
#   make bench-scan  the scanner measured against ../shared/corpus
#   make compat   real npm servers, bare and caged, as a table

GO        ?= go
FUZZTIME  ?= 5s
LONGFUZZ  ?= 2m
BENCHTIME ?= 1s
CORPUS    ?= ../shared/corpus

.PHONY: setup demo build images test unit fuzz-short fuzz bench bench-scan compat vet

setup:
	./.ci/setup

build:
	$(GO) build -o bin/mcpcage ./cmd/mcpcage

demo: setup build
	./examples/demo.sh

images:
	./images/build.sh

vet:
	$(GO) vet ./...

test: setup vet unit fuzz-short

unit:
	$(GO) test -count=1 -timeout 45m ./...

# Each Fuzz target in fuzz/ runs on its own for FUZZTIME.
fuzz-short:
	@for f in $$($(GO) test -list '^Fuzz' ./fuzz | grep '^Fuzz'); do \
		echo "fuzz $$f ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) ./fuzz || exit 1; \
	done

fuzz:
	$(MAKE) fuzz-short FUZZTIME=$(LONGFUZZ)

bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

bench-scan:
	$(GO) run ./internal/scan/corpusbench -corpus $(CORPUS)

compat:
	$(GO) test -count=1 -timeout 60m -run TestCompat -tags compat ./internal/cage -v
