# seckill: common commands. `make test` is what CI runs (after .ci/services.sh).
GO ?= go

.PHONY: build run test test-short vet fmt lint

build:
	$(GO) build -o bin/seckill .

run:
	$(GO) run .

# The whole suite with the race detector. Integration tests need the env of
# .ci/env.sh (MariaDB, Redis, Redlock nodes, ZooKeeper); without it they skip.
test: vet
	$(GO) test -race -count=1 -timeout 15m ./...

# Unit tests only: integration tests skip without the env.
test-short:
	env -u SECKILL_MYSQL_DSN -u SECKILL_REDIS_ADDR -u SECKILL_REDLOCK_ADDRS -u SECKILL_ZK_ADDRS $(GO) test -count=1 ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# ---- fuzz tests: each target for FUZZTIME (-fuzz takes one target at a
# time). The seeds alone run in `make test`. A failing input is written to
# the package's testdata/fuzz/<Target>/ and replayed by `go test` from then on.
FUZZTIME ?= 10s
FUZZFLAGS ?=
.PHONY: fuzz

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPathID$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzUserCode$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzLogin$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzPublish$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzPublishTimes$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzAuthorization$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzAnyRequest$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./auth/

# ---- load tests (loadtest/; variables as in loadtest/run.sh, e.g.
# `make loadtest MODE=redsync INSTANCES=2 SLOW=1 DRIVER=jmeter`). They need
# the MariaDB and Redis of .ci/env.sh (.ci/services.sh starts them).
.PHONY: loadtest loadtest-matrix loadtest-ci

loadtest:
	bash loadtest/run.sh

loadtest-matrix:
	bash loadtest/matrix.sh

loadtest-ci:
	bash loadtest/ci.sh

# ---- benchmark (bench/): the machine's limits and the seckill in every lock
# mode, measured in one run; writes bench/RESULTS.md. Settings are the BENCH_*
# variables of bench/run.sh, e.g. `make bench BENCH_DURATION=5
# BENCH_LOCK_MODES="lua redsync" BENCH_PROFILE=sync-lua`. Needs the MariaDB and
# Redis of .ci/env.sh, wrk, redis-tools and mariadb-client.
.PHONY: bench

bench:
	bash bench/run.sh
