# seckill: common commands. `make test` is what CI runs (after .ci/services.sh).
GO ?= go

.PHONY: build run test test-short vet fmt lint

build:
	$(GO) build -o bin/seckill .

run:
	$(GO) run .

# The whole suite with the race detector, through tools/cmd/testenv: the
# integration tests use the services the env names (.ci/env.sh, as CI sets
# it); for each variable unset it starts a private throwaway server when
# the program is installed (MariaDB, Redis, Redlock nodes, a Sentinel set,
# a Redis Cluster; never ZooKeeper) and stops it after; with
# SECKILL_TEST_FAKEPAY unset it runs the fake pay providers (tools/cmd/fakepay)
# in-process and exports their env file's path. Tests whose service
# is neither skip and say so. SECKILL_TEST_PRIVATE=off starts nothing.
# TESTPKGS and TESTFLAGS narrow a run: make test TESTPKGS=./lock/ TESTFLAGS='-run Redlock'.
TESTPKGS ?= ./...
TESTFLAGS ?=
# The tooling's own tests (tools/ is a module of its own, which `go test
# ./...` at the root leaves out; TestPicturesUpToDate among them) run after,
# unless TESTPKGS narrows the run; TOOLSPKGS=./internal/house/ picks some.
TOOLSPKGS ?= $(if $(filter ./...,$(TESTPKGS)),./...)
TESTENV = $(GO) -C tools build -o $(CURDIR)/bin/testenv ./cmd/testenv && bin/testenv
test: vet
	$(TESTENV) $(GO) test -race -count=1 -timeout 15m $(TESTFLAGS) $(TESTPKGS)
	$(if $(TOOLSPKGS),$(TESTENV) $(GO) -C tools test -race -count=1 -timeout 15m $(TESTFLAGS) $(TOOLSPKGS))

# The async end-to-end tests (e2e/async, e2e/lifecycle) again, on the Redis
# Cluster of .ci/services.sh (SECKILL_TEST_CLUSTER_ADDRS, exported by
# .ci/env.sh) instead of SECKILL_REDIS_ADDR: the apps they start get
# SECKILL_REDIS_CLUSTER_ADDRS. The order's life too: pay, cancel and expiry
# on a voucher of 4 buckets, and give-backs racing after a crash, each unit
# back once in its bucket. The waiting room's scaled-down fairness run
# (e2e/waitingroom), async with 4 buckets. (The repository's stream and slot
# tests run on the cluster in `make test` already.)
CLUSTER_TESTS ?= ^(TestAsyncConcurrentSeckill|TestConsumerLockSetting|TestAsyncPoisonMessage|TestAsyncCrashRecovery|TestAsyncBuckets|TestOrderLifecycleAsync|TestPayWindowAsync|TestGiveBackAfterCrash|TestFairnessScaledDown|TestUnitsGivenBackReopenRoom|TestEditReachesEveryInstance|TestCluster.*)$$
.PHONY: test-cluster
test-cluster:
	$(TESTENV) env SECKILL_TEST_ON_CLUSTER=1 $(GO) test -race -count=1 -timeout 10m -run '$(CLUSTER_TESTS)' ./e2e/async/ ./e2e/lifecycle/ ./e2e/waitingroom/

# Unit tests only: integration tests skip without the env.
test-short:
	env -u SECKILL_MYSQL_DSN -u SECKILL_REDIS_ADDR -u SECKILL_REDLOCK_ADDRS -u SECKILL_ZK_ADDRS $(GO) test -count=1 ./...
	env -u SECKILL_MYSQL_DSN -u SECKILL_REDIS_ADDR -u SECKILL_REDLOCK_ADDRS -u SECKILL_ZK_ADDRS $(GO) -C tools test -count=1 ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...
	$(GO) -C tools vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# ---- fuzz tests: each target for FUZZTIME (-fuzz takes one target at a
# time): a duration (10s) or a count of inputs (20000x; CI uses a count,
# since a duration can end in a spurious "context deadline exceeded" on a
# loaded machine). The seeds alone run in `make test`. A failing input is
# written to the package's testdata/fuzz/<Target>/ and replayed by `go test`
# from then on.
FUZZTIME ?= 10s
FUZZFLAGS ?=
.PHONY: fuzz

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzPathID$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzUserCode$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzLogin$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzPublish$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzPublishTimes$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzShop$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzAuthorization$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzAnyRequest$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzWebPath$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./handler/
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) $(FUZZFLAGS) ./auth/

# ---- load tests (tools/cmd/harness; variables as in tools/loadtest/README.md, e.g.
# `make loadtest MODE=redsync INSTANCES=2 SLOW=1 DRIVER=k6`). They need
# the MariaDB and Redis of .ci/env.sh (.ci/services.sh starts them).
.PHONY: loadtest loadtest-matrix loadtest-ci fairness fairness-cluster

# A built binary, not `go run`, which turns every exit status into 1 (the
# harness exits 2 when a run could not be made).
HARNESS = $(GO) -C tools build -o $(CURDIR)/bin/harness ./cmd/harness && bin/harness

loadtest:
	$(HARNESS) loadtest

loadtest-matrix:
	$(HARNESS) matrix && bin/harness pictures

loadtest-ci:
	$(HARNESS) ci

# The waiting room's fairness run (docs/waiting-room.md; FAIR_* settings):
# 20,000 joiners over two instances, written to tools/loadtest/fairness/;
# docs/fairness.svg redrawn from it.
fairness:
	$(HARNESS) fairness && bin/harness pictures

# The same on the Redis Cluster of SECKILL_TEST_CLUSTER_ADDRS in async mode,
# the voucher's stock in 4 buckets, written to tools/loadtest/fairness/cluster/.
fairness-cluster:
	$(GO) -C tools build -o $(CURDIR)/bin/harness ./cmd/harness && FAIR_CLUSTER=1 FAIR_MODE=async FAIR_BUCKETS=4 bin/harness fairness

# ---- fault suite (tools/cmd/harness/faults, tools/faults/README.md): each case kills
# or freezes a dependency mid-load (an instance, Redis, the Sentinel primary,
# MariaDB, a Redlock node, a lock holder) and audits what every request got.
# It runs on PRIVATE MariaDB/Redis/Sentinel processes of its own (ports from
# FAULTS_BASE_PORT=27300), never on the shared services of .ci/services.sh;
# needs mariadb-server, redis-server and redis-sentinel installed. Writes
# tools/faults/RESULTS.md and tools/faults/results.json; `make faults CASE=mariadb-sync`
# (or CASE=mariadb, a prefix) runs some cases and keeps their results in the
# work directory it names.
.PHONY: faults

faults:
	$(HARNESS) faults && bin/harness pictures

# ---- lock histories (tools/cmd/harness/lockrun, tools/internal/lockcheck): two
# client processes take lock:order:<userId> in every mode and update a
# register in MariaDB under it, while one process is paused, partitioned
# (from the lock service or the database) or slowed; every operation is
# recorded and porcupine checks the histories against a mutex and a register
# model. Private MariaDB and redis-servers; the shared ZooKeeper through a
# proxy. Writes tools/lock-check/RESULTS.md, results.json and the checker's pages
# of violations (tools/lock-check/histories/); LOCKCHECK_MODES=lua,mysql and
# LOCKCHECK_FAULTS=pause narrow it. lock-check-ci runs the rows that must
# hold (fenced token modes, mysql) under pause and partition, and fails on a
# violation.
.PHONY: lock-check lock-check-ci

lock-check:
	$(HARNESS) lockcheck && bin/harness pictures

lock-check-ci:
	$(GO) -C tools build -o $(CURDIR)/bin/harness ./cmd/harness && LOCKCHECK_CI=1 bin/harness lockcheck

# ---- the failover demonstration (lock/failover_test.go, README "The lock
# family"): TestFailoverTwoHolders on private redis-server and
# redis-sentinel processes (testkit/redisproc; the shared services are never
# killed), then its table: who obtained lock:order:<userId> before and after
# a Sentinel failover (or a Redlock node lost), per mode. The mysql and
# zookeeper rows need the env of .ci/env.sh (`source .ci/env.sh && make
# failover`); without it they are skipped. `make test` runs the same test.
FAILOVER_TABLE ?= bin/failover.md
.PHONY: failover

failover:
	@mkdir -p $(dir $(FAILOVER_TABLE)) && rm -f $(FAILOVER_TABLE)
	@SECKILL_TEST_FAILOVER_TABLE=$(abspath $(FAILOVER_TABLE)) $(GO) test -count=1 -run '^TestFailoverTwoHolders$$' ./lock/; \
		status=$$?; echo; if [ -f $(FAILOVER_TABLE) ]; then cat $(FAILOVER_TABLE); fi; exit $$status

# ---- benchmark (tools/bench/): the machine's limits and the seckill in every lock
# mode, measured in one run by `harness bench` (tools/cmd/harness/bench); writes
# tools/bench/RESULTS.md and tools/bench/results.json. Settings are the BENCH_*
# variables documented in docs/bench-harness.md, e.g. `make bench
# BENCH_DURATION=5 BENCH_LOCK_MODES="lua redsync"`. Needs the MariaDB and
# Redis of .ci/env.sh, wrk, redis-tools, mariadb-client and k6.
.PHONY: bench

bench:
	$(HARNESS) bench && bin/harness pictures

# 5,000 connections at once on the purchase beside 64 (STAMPEDE_* settings in
# docs/bench-harness.md); appends to tools/bench/STAMPEDE.md.
.PHONY: stampede

stampede:
	$(HARNESS) stampede

# Our async purchase beside the peer's (llmons/go-dianping, a source tree of
# it: PEER_SRC=<dir>) and the no-op endpoint, in one run (tools/bench/peer.sh,
# PEER_* settings in docs/bench-harness.md); appends to tools/bench/PEER.md.
PEER_LABEL ?= peer
.PHONY: bench-peer

bench-peer:
	@test -n "$(PEER_SRC)" || { echo "make bench-peer PEER_SRC=<go-dianping source tree>"; exit 2; }
	bash tools/bench/peer.sh $(PEER_SRC) $(PEER_LABEL)

# ---- Go benchmarks of the seckill request through the whole HTTP handler
# (e2e/bench/admission_test.go): async admission on the embedded backends
# always, and on the real Redis and MariaDB, plus sync `lua`, when the env of
# .ci/env.sh is set (`source .ci/env.sh && make bench-go`). ns/op, B/op,
# allocs/op; BENCHTIME and BENCHCOUNT as go test's -benchtime and -count.
BENCHTIME ?= 1s
BENCHCOUNT ?= 1
.PHONY: bench-go

bench-go:
	$(GO) test -run '^$$' -bench Admission -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) ./e2e/bench/

# ---- the README's pictures (tools/cmd/harness/pictures): docs/lock-matrix.svg,
# docs/bench.svg, docs/faults.svg, docs/bench-cluster.svg, docs/lock-check.svg
# and docs/fairness.svg drawn from tools/loadtest/results.json,
# tools/bench/results.json (both bench pictures; the cluster one is skipped
# while the run had no Redis Cluster block), tools/faults/results.json,
# tools/lock-check/results.json and tools/loadtest/fairness/results.json.
# Run it after a new matrix, bench, fault-suite or fairness run: `make test`
# fails while a picture is out of date with its results (TestPicturesUpToDate).
.PHONY: pictures

# The shop search on 100,000 shops on the MariaDB of SECKILL_MYSQL_DSN (a
# database of its own, dropped after): rows read, times, EXPLAIN, written
# to tools/bench/SHOP-SEARCH.md with the machine, the date and the command.
.PHONY: bench-shop-search
bench-shop-search:
	SECKILL_SHOP_SEARCH_RESULTS=$(CURDIR)/tools/bench/SHOP-SEARCH.md $(GO) test -count=1 -timeout 20m -run '^TestShopSearchMeasure$$' -v ./repository/sqlstore/

# The pay notifications under load (e2e/payments TestNotifyLoadMeasure): 5,000
# orders paid at the fake providers, each notification sent twice at once to
# two instances; beside it, in the same run, 5,000 purchases to the same
# instances. Written to tools/bench/PAY-NOTIFY.md with the machine and the date.
# On the MariaDB and Redis of .ci/env.sh; the fake providers through testenv.
.PHONY: bench-pay-notify
bench-pay-notify:
	$(TESTENV) env SECKILL_PAY_NOTIFY_RESULTS=$(CURDIR)/tools/bench/PAY-NOTIFY.md $(GO) test -count=1 -timeout 20m -run '^TestNotifyLoadMeasure$$' -v ./e2e/payments/

# (make loadtest-matrix, make faults, make bench and make fairness redraw them as they end.)
pictures:
	$(HARNESS) pictures

# ---- which code one request runs: one sync purchase, and one async order
# from admission to commit (TestMeasurePath of e2e/bench), measured as the
# project files whose coverage counters grow between a run without the
# request and a run with it (the async side also counts what the consumer's
# loop did meanwhile). The test harness (e2e/) is not counted.
.PHONY: measure-path
measure-path:
	@rm -rf /tmp/seckill-path && mkdir -p /tmp/seckill-path
	@for p in baseline request; do for m in sync async; do \
		SECKILL_MEASURE_PATH=$$p $(GO) test -count=1 -covermode=count -coverpkg=./... \
			-coverprofile=/tmp/seckill-path/$$m-$$p.out -run "^TestMeasurePath$$/^$$m$$" ./e2e/bench/ >/dev/null || exit 1; \
	done; done
	@for m in sync async; do \
		files=$$(awk 'FNR == 1 { next } FILENAME ~ /baseline/ { base[$$1] += $$3; next } $$3 > base[$$1] { split($$1, f, ":"); print f[1] }' \
			/tmp/seckill-path/$$m-baseline.out /tmp/seckill-path/$$m-request.out | grep -v '^seckill/e2e/' | sort -u); \
		echo "$$m: $$(echo "$$files" | grep -c .) files"; echo "$$files" | sed 's|^seckill/|  |'; \
	done

# ---- the house's measures (tools/internal/house, docs/house.md): the root, the
# largest files and types of product and tooling, comment sentences,
# settings and Lua KEYS per place, duplicates. HOUSE_ARGS=-json for JSON,
# -packages for the comment table per package.
.PHONY: house
house:
	$(HARNESS) house $(HOUSE_ARGS) .
