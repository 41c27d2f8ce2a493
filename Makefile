# crow-acp: `make test` runs every test (and each fuzz target briefly);
# `make fuzz` fuzzes longer; `make demo` shows a session offline;
# `make bench` measures. cgo is required (SQLite).
export CGO_ENABLED := 1
GO ?= go
BIN := bin

# Packages that run concurrent code: make test runs their tests under the
# race detector, and every other package's tests without it (each test
# runs once). compaction is left out: it starts no goroutines, and its
# property tests take minutes under -race on two cores.
RACE_PKGS := ./acp/... ./internal/agent/... ./internal/provider/... ./internal/framelog/... \
	./internal/persistence/... ./internal/fixture/ ./internal/syncbuf/

# Fuzz targets as package:Target, one a line so that additions merge cleanly.
# Budgets are execution counts, not durations: a -fuzztime duration can fail
# spuriously with "context deadline exceeded" when it expires mid-run
# (golang/go#75804, unfixed in Go 1.26).
# A target whose runs are slow carries its own short budget as a third field
# (package:Target:budget), used in place of FUZZ_SHORT by make test, which
# must stay under 10 minutes on two cores; make fuzz runs every target at
# FUZZ_LONG.
FUZZ_TARGETS :=
FUZZ_TARGETS += ./acp:FuzzLineStream
FUZZ_TARGETS += ./acp:FuzzDispatch
FUZZ_TARGETS += ./acp:FuzzTextChunkOf
FUZZ_TARGETS += ./acp:FuzzUpdateFrame:3000x
FUZZ_TARGETS += ./internal/provider:FuzzParser
FUZZ_TARGETS += ./internal/provider:FuzzStream
FUZZ_TARGETS += ./internal/agent/request:FuzzContextMessages
FUZZ_TARGETS += ./internal/agent:FuzzAgent:2000x
FUZZ_TARGETS += ./internal/agent/tool:FuzzResolve
FUZZ_TARGETS += ./internal/provider:FuzzThinkSplit
FUZZ_TARGETS += ./internal/compaction:FuzzEstimator
FUZZ_TARGETS += ./internal/agent/tool:FuzzCommandRule
FUZZ_TARGETS += ./internal/persistence/postgres:FuzzKeywordDSN
FUZZ_TARGETS += ./internal/provider:FuzzParseOverflow
FUZZ_TARGETS += ./internal/provider:FuzzWindowResponses
FUZZ_TARGETS += ./internal/provider:FuzzResponsesEvents
FUZZ_TARGETS += ./internal/agent:FuzzErrorDetail
FUZZ_TARGETS += ./internal/persistence:FuzzFrames
FUZZ_TARGETS += ./internal/framelog:FuzzLoadRecord
FUZZ_TARGETS += ./internal/provider:FuzzEventBound
FUZZ_TARGETS += ./internal/provider:FuzzImageResponses:3000x
FUZZ_TARGETS += ./internal/imagecheck:FuzzCheck
FUZZ_TARGETS += ./internal/imagecheck:FuzzDimensions
FUZZ_TARGETS += ./internal/termsafe:FuzzText:2000x
FUZZ_TARGETS += ./internal/safegit:FuzzDisable
FUZZ_TARGETS += ./internal/agent:FuzzCompactOnLoad:500x
FUZZ_TARGETS += ./internal/agent/prompt:FuzzInstructionRead
FUZZ_TARGETS += ./internal/agent:FuzzRepairArgs:3000x
FUZZ_TARGETS += ./internal/agent/tool:FuzzParseElicitSchema
FUZZ_TARGETS += ./internal/provider/fakemodel:FuzzRecordedReply
FUZZ_TARGETS += ./internal/secret:FuzzRedactStream
FUZZ_TARGETS += ./internal/secret:FuzzMaskMCPServers
FUZZ_TARGETS += ./internal/agent/tool:FuzzParsePatch
FUZZ_TARGETS += ./internal/agent/tool:FuzzQuoteArgv
FUZZ_TARGETS += ./internal/agent/tool:FuzzEditLadder:3000x
FUZZ_TARGETS += ./internal/agent/tool:FuzzPlaceholder:2000x
FUZZ_TARGETS += ./internal/gitignore:FuzzGitignore:2000x
FUZZ_TARGETS += ./internal/agent:FuzzTaskArgs
FUZZ_TARGETS += ./cmd/crow-acp/internal/transcript:FuzzReadJSON
FUZZ_TARGETS += ./internal/agent:FuzzAsImported
FUZZ_TARGETS += ./internal/agent/tool:FuzzLiveTail
FUZZ_TARGETS += ./cmd/crow-acp/internal/chat:FuzzRenderTable:2000x
FUZZ_TARGETS += ./internal/checkpoint:FuzzParseRawDiff
FUZZ_TARGETS += ./internal/checkpoint:FuzzUnifiedDiff:3000x
FUZZ_SHORT ?= 10000x
FUZZ_LONG ?= 1000000x

.PHONY: all build test race bench demo fuzz fuzz-run clean lint release release-test

all: build

build:
	$(GO) build -o $(BIN)/crow-acp ./cmd/crow-acp
	$(GO) build -o $(BIN)/fake-model ./cmd/fake-model

test:
	$(GO) vet ./...
	@if [ -z "$$CROW_TEST_POSTGRES_URL" ]; then \
		echo "NOTE: CROW_TEST_POSTGRES_URL is not set: the PostgreSQL tests are skipped (see README, PostgreSQL)"; fi
	$(GO) test -count=1 $$({ $(GO) list ./...; $(GO) list $(RACE_PKGS); } | sort | uniq -u)
	$(GO) test -race -count=1 $(RACE_PKGS)
	@$(MAKE) --no-print-directory lint
	@$(MAKE) --no-print-directory fuzz-run FUZZ_BUDGET=$(FUZZ_SHORT)

# staticcheck, configured in staticcheck.conf. .ci/run installs the pinned
# version and sets CROW_REQUIRE_STATICCHECK, so that CI cannot skip it.
lint:
	@if command -v staticcheck >/dev/null 2>&1; then \
		echo "staticcheck ./..."; staticcheck ./...; \
	elif [ -n "$$CROW_REQUIRE_STATICCHECK" ]; then \
		echo "staticcheck is not installed" >&2; exit 1; \
	else echo "NOTE: staticcheck is not installed: it is skipped (.ci/run installs the pinned version)"; fi

# Longer fuzzing; a crash is written to PKG/testdata/fuzz/TARGET/ and must
# become a regression test.
fuzz:
	@$(MAKE) --no-print-directory fuzz-run FUZZ_BUDGET=$(FUZZ_LONG)

# Two targets at a time (FUZZ_JOBS): most of a short run is building the
# instrumented test binary, which one core does while the other fuzzes.
# Each target's output is printed whole when it ends; any failure fails.
FUZZ_JOBS ?= 2
fuzz-run:
	@printf '%s\n' $(FUZZ_TARGETS) | xargs -P $(FUZZ_JOBS) -I{} sh -c '\
		t={}; pkg=$${t%%:*}; rest=$${t#*:}; fn=$${rest%%:*}; budget=$(FUZZ_BUDGET); \
		if [ "$$rest" != "$$fn" ] && [ "$(FUZZ_BUDGET)" = "$(FUZZ_SHORT)" ]; then budget=$${rest#*:}; fi; \
		out=$$($(GO) test -run="^$$" -fuzz="^$$fn\$$" -fuzztime=$$budget $$pkg 2>&1); rc=$$?; \
		printf "fuzz %s (%s, %s)\n%s\n" "$$fn" "$$pkg" "$$budget" "$$out" | grep -v "^fuzz: elapsed"; exit $$rc'

race:
	$(GO) test -race -count=1 ./...

bench: build
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	$(GO) run ./cmd/crow-bench -bin $(BIN)/crow-acp
	$(GO) run ./cmd/crow-soak -bin $(BIN)/crow-acp
	CROW_CRASH_TURNS=1000 $(GO) test -count=1 -timeout 30m -run '^TestCrashRecovery$$' ./cmd/crow-acp/e2e
	@if [ -n "$$CROW_TEST_POSTGRES_URL" ]; then \
		$(GO) run ./cmd/crow-bench -bin $(BIN)/crow-acp -db "$$CROW_TEST_POSTGRES_URL"; \
	else echo "NOTE: CROW_TEST_POSTGRES_URL is not set: no PostgreSQL figures (see README, PostgreSQL)"; fi

demo: build
	$(GO) run ./cmd/crow-demo -bin $(BIN)/crow-acp

# Release archives (static Linux x86_64 and aarch64), SHA256SUMS, the ACP
# registry entry and the npm packages: see packaging/release.sh.
DIST ?= dist
REGISTRY_OUT ?= packaging/registry
release:
	@test -n "$(VERSION)" || { echo "usage: make release VERSION=x.y.z" >&2; exit 2; }
	VERSION=$(VERSION) DIST=$(DIST) REGISTRY_OUT=$(REGISTRY_OUT) GO=$(GO) packaging/release.sh

# Builds a release and installs it every way a user would, offline, outside
# the repository (packaging/releasetest); prints the start-up comparison.
release-test:
	$(GO) test -tags release -count=1 -v -timeout 30m ./packaging/releasetest

clean:
	rm -rf $(BIN) $(DIST)
