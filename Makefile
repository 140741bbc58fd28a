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

# The corpus is not part of the repository: it lies beside it (../shared).
bench-scan:
	@[ -d "$(CORPUS)" ] || { echo "bench-scan: error: no measuring corpus at $(CORPUS) (the shared folder beside the repository); set CORPUS=DIR" >&2; exit 1; }
	$(GO) run ./internal/scan/corpusbench -corpus $(CORPUS)
	MCPCAGE_CORPUS=$(abspath $(CORPUS)) $(GO) test -run '^$$' -bench CorpusList -benchmem -benchtime $(BENCHTIME) ./internal/scan

COMPAT_LIST ?= ../shared/compat/npm-servers.tsv

compat:
	@[ -f "$(COMPAT_LIST)" ] || { echo "compat: error: no compatibility list at $(COMPAT_LIST) (the shared folder beside the repository); set COMPAT_LIST=FILE" >&2; exit 1; }
	MCPCAGE_COMPAT_LIST=$(abspath $(COMPAT_LIST)) $(GO) test -count=1 -timeout 60m -run TestCompat -tags compat ./internal/cage -v
