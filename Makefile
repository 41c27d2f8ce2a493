# crow-acp: `make test` runs every test; `make demo` shows a session offline;
# `make bench` measures. cgo is required (SQLite).
export CGO_ENABLED := 1
GO ?= go
BIN := bin

.PHONY: all build test race bench demo fuzz clean

all: build

build:
	$(GO) build -o $(BIN)/crow-acp ./cmd/crow-acp
	$(GO) build -o $(BIN)/fake-model ./cmd/fake-model

test:
	$(GO) vet ./...
	@if [ -z "$$CROW_TEST_POSTGRES_URL" ]; then \
		echo "NOTE: CROW_TEST_POSTGRES_URL is not set: the PostgreSQL tests are skipped (see README, PostgreSQL)"; fi
	$(GO) test -count=1 ./...

race:
	$(GO) test -race -count=1 ./...

bench: build
	$(GO) test -run='^$$' -bench=. -benchmem ./...
	$(GO) run ./cmd/crow-bench -bin $(BIN)/crow-acp
	@if [ -n "$$CROW_TEST_POSTGRES_URL" ]; then \
		$(GO) run ./cmd/crow-bench -bin $(BIN)/crow-acp -db "$$CROW_TEST_POSTGRES_URL"; \
	else echo "NOTE: CROW_TEST_POSTGRES_URL is not set: no PostgreSQL figures (see README, PostgreSQL)"; fi

demo: build
	$(GO) run ./cmd/crow-demo -bin $(BIN)/crow-acp

clean:
	rm -rf $(BIN)
