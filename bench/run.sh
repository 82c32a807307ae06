#!/usr/bin/env bash
# bench/run.sh: the benchmark of `make bench`. It measures, in ONE run, the
# limits of this machine and the seckill against them, then writes
# bench/RESULTS.md (machine, date, exact commands, tables, ratios, targets).
#
#   make bench                         (or: bash bench/run.sh)
#
# Limits (what the service cannot beat on this machine):
#   noop     wrk on GET /debug/noop: the same gin stack and auth middleware
#            (JWT check) as the seckill route, no business work;
#   acquire  redis-benchmark EVALSHA of lua/acquire.lua (SET NX PX + fencing
#            INCR), a fresh random key per call;
#   release  redis-benchmark EVALSHA of lua/unlock.lua (compare-and-delete) on
#            keys written beforehand, so that most calls delete;
#   slap     mariadb-slap of the order transaction (BEGIN; stock UPDATE;
#            order INSERT; COMMIT) on a scratch voucher with huge stock.
# Runs of the service (wrk, bench/rotate.lua: every request a new user):
#   soldout            a voucher of stock 1 already sold: every request 409 SOLD_OUT;
#   <order>-<lock>     for each order mode of BENCH_ORDER_MODES and lock mode of
#                      BENCH_LOCK_MODES, stock far above the request count: every
#                      request creates an order.
# After every run the voucher is audited (admin audit endpoint and the
# database directly) and wrk's counts are checked against what the run must
# produce; any violation makes the script exit 1 after writing RESULTS.md.
# A missed ratio target is reported in RESULTS.md, not failed.
#
# Settings (environment or make variables), defaults in brackets:
#   BENCH_DURATION [10]   seconds per wrk run
#   BENCH_THREADS [2]     wrk threads
#   BENCH_CONNS [32]      wrk connections = redis-benchmark clients = mariadb-slap clients
#   BENCH_USERS [60000]   user tokens, in two halves that the runs alternate
#                         (each seckill request spends one of its half)
#   BENCH_SKIP_USERS [5000]  the first users are left out: tests and load tests
#                         use the low user ids (and their lock:order:<id> keys)
#   BENCH_LOCK_MODES [lua none local simple owner reentrant redsync multi mysql zookeeper]
#                         (lua first: it runs right after mariadb-slap, its ratio partner)
#   BENCH_ORDER_MODES [sync]  add async once SECKILL_ORDER_MODE=async exists
#   BENCH_REDIS_N [150000] redis-benchmark requests per script
#   BENCH_SLAP_TXNS [500] transactions per mariadb-slap client
#   BENCH_PORT [18181]    the server's port on 127.0.0.1
#   BENCH_PROFILE []      run names to CPU-profile (e.g. "sync-lua soldout");
#                         the profile and its `go tool pprof -top` land in the out dir
#   BENCH_OUT [bench/out/<date>]  logs, wrk outputs, profiles
#   BENCH_RESULTS [bench/RESULTS.md]
#   BENCH_KEEP [0]        1 = keep the bench vouchers and their orders
#   BENCH_BIN []          a prebuilt seckill binary to measure instead of building
#                         the working tree (to compare two builds)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"

# shellcheck source-path=SCRIPTDIR source=../.ci/env.sh
[[ -n "${SECKILL_MYSQL_DSN:-}" && -n "${SECKILL_REDIS_ADDR:-}" ]] || source "$root/.ci/env.sh"
export PATH="/usr/local/go/bin:${PATH}"

DURATION="${BENCH_DURATION:-10}"
THREADS="${BENCH_THREADS:-2}"
CONNS="${BENCH_CONNS:-32}"
USERS="${BENCH_USERS:-60000}"
SKIP_USERS="${BENCH_SKIP_USERS:-5000}"
LOCK_MODES="${BENCH_LOCK_MODES:-lua none local simple owner reentrant redsync multi mysql zookeeper}"
ORDER_MODES="${BENCH_ORDER_MODES:-sync}"
REDIS_N="${BENCH_REDIS_N:-150000}"
SLAP_TXNS="${BENCH_SLAP_TXNS:-500}"
PORT="${BENCH_PORT:-18181}"
PROFILE="${BENCH_PROFILE:-}"
OUT="${BENCH_OUT:-$here/out/$(date +%Y%m%d-%H%M%S)}"
RESULTS="${BENCH_RESULTS:-$here/RESULTS.md}"
KEEP="${BENCH_KEEP:-0}"

log() { printf '[bench] %s\n' "$*" >&2; }
die() {
	printf '[bench] ERROR: %s\n' "$*" >&2
	exit 2
}

for v in DURATION THREADS CONNS USERS REDIS_N SLAP_TXNS PORT SKIP_USERS; do
	[[ "${!v}" =~ ^[0-9]+$ && ( "${!v}" -gt 0 || "$v" == SKIP_USERS ) ]] || die "BENCH_$v=${!v} is not a positive number"
done
((CONNS >= THREADS)) || die "BENCH_CONNS ($CONNS) must be at least BENCH_THREADS ($THREADS)"
for t in wrk redis-benchmark redis-cli mariadb curl jq go; do
	command -v "$t" >/dev/null || die "$t is missing (Debian: wrk, redis-tools, mariadb-client, curl, jq; Go in /usr/local/go)"
done
SLAP="$(command -v mariadb-slap || command -v mysqlslap || true)"
[[ -n "$SLAP" ]] || die "mariadb-slap (or mysqlslap) is missing: apt-get install mariadb-client"
[[ -n "${SECKILL_MYSQL_DSN:-}" ]] || die "SECKILL_MYSQL_DSN is empty: the bench needs the real MariaDB (see .ci/env.sh)"
[[ -n "${SECKILL_REDIS_ADDR:-}" ]] || die "SECKILL_REDIS_ADDR is empty: the bench needs the real Redis (see .ci/env.sh)"

mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
BASE="http://127.0.0.1:$PORT"

# ------------------------------------------------------------------ database and Redis
dsn_re='^([^:@]*)(:([^@]*))?@tcp\(([^:)]+)(:([0-9]+))?\)/([^?]+)'
[[ "$SECKILL_MYSQL_DSN" =~ $dsn_re ]] || die "SECKILL_MYSQL_DSN: cannot read user, host and database from it"
db_user="${BASH_REMATCH[1]}" db_pass="${BASH_REMATCH[3]}" db_host="${BASH_REMATCH[4]}"
db_port="${BASH_REMATCH[6]:-3306}" db_name="${BASH_REMATCH[7]}"
sql() {
	MYSQL_PWD="$db_pass" mariadb --protocol=tcp -h"$db_host" -P"$db_port" -u"$db_user" \
		--batch --skip-column-names "$db_name" -e "$1"
}
sql 'SELECT 1' >/dev/null || die "cannot reach MariaDB at $db_host:$db_port as $db_user"
redis_host="${SECKILL_REDIS_ADDR%:*}" redis_port="${SECKILL_REDIS_ADDR##*:}"
rcli() { redis-cli -h "$redis_host" -p "$redis_port" "$@"; }
[[ "$(rcli PING)" == PONG ]] || die "cannot reach Redis at $SECKILL_REDIS_ADDR"

# ------------------------------------------------------------------ bookkeeping
# Results are kept as shell variables R_<run>_<figure>; rows lists run names
# in table order; violations collects failed checks.
rows=()
violations=()
commands=()
vouchers=()
server_pid=""

put() { printf -v "R_${1//-/_}_$2" '%s' "$3"; }
get() {
	local n="R_${1//-/_}_$2"
	printf '%s' "${!n:-}"
}
violate() {
	violations+=("$1: $2")
	log "VIOLATION $1: $2"
}
note_cmd() { commands+=("$*"); }

# bench_keys_clean removes the bench:lock:* keys of the redis-benchmark runs.
bench_keys_clean() {
	rcli --scan --pattern 'bench:lock:*' |
		xargs -r -n 500 redis-cli -h "$redis_host" -p "$redis_port" UNLINK >/dev/null
}

cleanup() {
	if declare -F stop_server >/dev/null; then
		stop_server
	fi
	bench_keys_clean || true
	if [[ -n "${slap_voucher:-}" ]]; then
		sql "DELETE FROM tb_voucher_order WHERE voucher_id=$slap_voucher; DELETE FROM tb_seckill_voucher WHERE voucher_id=$slap_voucher; DELETE FROM tb_voucher WHERE id=$slap_voucher" || true
	fi
	if [[ "$KEEP" != 1 && ${#vouchers[@]} -gt 0 ]]; then
		local v
		for v in "${vouchers[@]}"; do
			sql "DELETE FROM tb_voucher_order WHERE voucher_id=$v; DELETE FROM tb_seckill_voucher WHERE voucher_id=$v; DELETE FROM tb_voucher WHERE id=$v" || true
			rcli DEL "seckill:duprej:$v" "seckill:stock:$v" "seckill:order:$v" >/dev/null || true
		done
	fi
}
trap cleanup EXIT

# cpu_ticks PID: user+system clock ticks of a process (0 if gone).
cpu_ticks() {
	local f
	f="$(cat "/proc/$1/stat" 2>/dev/null)" || {
		echo 0
		return
	}
	f="${f##*) }"
	# fields after "comm) ": state=1 ... utime=12 stime=13
	awk '{print $12 + $13}' <<<"$f"
}
# child_ticks: user+system clock ticks of this shell's reaped children (wrk
# during a run: the server is reaped only when stopped).
child_ticks() {
	local f
	f="$(cat /proc/$$/stat)"
	f="${f##*) }"
	awk '{print $14 + $15}' <<<"$f"
}
# db_counters: MariaDB's "Questions Com_stmt_prepare Com_stmt_close".
db_counters() {
	sql "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare', 'Com_stmt_close')" |
		awk '{v[$1] = $2} END{print v["Questions"] + 0, v["Com_stmt_prepare"] + 0, v["Com_stmt_close"] + 0}'
}
# busy_ticks: busy and total clock ticks of the whole machine.
busy_ticks() { awk '/^cpu /{idle=$5+$6; t=0; for(i=2;i<=NF;i++) t+=$i; print t-idle, t}' /proc/stat; }
CLK_TCK="$(getconf CLK_TCK)"
mariadb_pid="$(pidof mariadbd 2>/dev/null || pidof mysqld 2>/dev/null || true)"
mariadb_pid="${mariadb_pid%% *}"
redis_pid="$(rcli INFO server | awk -F: '/^process_id/{gsub("\r",""); print $2}')"

# ------------------------------------------------------------------ build, tokens
if [[ -n "${BENCH_BIN:-}" ]]; then
	BIN="$(cd "$(dirname "$BENCH_BIN")" && pwd)/$(basename "$BENCH_BIN")"
	[[ -x "$BIN" ]] || die "BENCH_BIN=$BENCH_BIN is not an executable"
	log "using the prebuilt $BIN"
	note_cmd "# prebuilt server binary: BENCH_BIN=$BIN"
else
	BIN="$OUT/seckill"
	log "building $BIN"
	go build -o "$BIN" .
	note_cmd "go build -o $BIN ."
fi
# Two halves, tokens-0.csv and tokens-1.csv, alternated from run to run: the
# requests a run leaves unanswered when wrk stops may still be working inside
# their user's lock, and the next run should not meet those users.
log "writing $((SKIP_USERS + USERS)) user tokens (the first $SKIP_USERS left out) and one admin token"
"$BIN" tokens --count "$((SKIP_USERS + USERS))" --out "$OUT/tokens-all.csv" 2>>"$OUT/tokens.log"
"$BIN" tokens --count 1 --admin --out "$OUT/admin.csv" 2>>"$OUT/tokens.log"
awk -v a="$SKIP_USERS" -v b="$((SKIP_USERS + USERS / 2))" \
	'NR > a && NR <= b { print >"'"$OUT/tokens-0.csv"'"; next } NR > b { print >"'"$OUT/tokens-1.csv"'" }' "$OUT/tokens-all.csv"
rm -f "$OUT/tokens-all.csv"
note_cmd "$BIN tokens --count $((SKIP_USERS + USERS)) --out tokens-all.csv; $BIN tokens --count 1 --admin --out admin.csv"
note_cmd "# tokens-0.csv: lines $((SKIP_USERS + 1))..$((SKIP_USERS + USERS / 2)) of tokens-all.csv; tokens-1.csv: the lines after"
ADMIN="$(cut -d, -f2 "$OUT/admin.csv")"
FIRST_USER="$(head -1 "$OUT/tokens-1.csv" | cut -d, -f2)"
half=0

# ------------------------------------------------------------------ server
start_server() { # ORDER_MODE LOCK_MODE LOGNAME
	local tries=0
	if curl -fsS -o /dev/null "$BASE/healthz" 2>/dev/null; then
		die "something already serves $BASE (BENCH_PORT=$PORT): stop it or pick another port"
	fi
	SECKILL_HTTP_ADDR="127.0.0.1:$PORT" SECKILL_ORDER_MODE="$1" SECKILL_LOCK_MODE="$2" \
		SECKILL_ENV=development SECKILL_LOG_LEVEL=warn \
		"$BIN" serve >"$OUT/server-$3.log" 2>&1 &
	server_pid=$!
	until curl -fsS -o /dev/null "$BASE/readyz" 2>/dev/null; do
		kill -0 "$server_pid" 2>/dev/null || die "the server ($1, $2) exited at start: $(tail -3 "$OUT/server-$3.log")"
		((++tries <= 200)) || die "the server ($1, $2) is not ready after 20 s"
		sleep 0.1
	done
}
stop_server() {
	[[ -n "$server_pid" ]] || return 0
	kill -TERM "$server_pid" 2>/dev/null || true
	wait "$server_pid" 2>/dev/null || true
	server_pid=""
}

# publish STOCK: creates a seckill voucher through the admin API; its id goes
# to $published and to the vouchers cleaned up at exit (so: no subshell).
publish() {
	local begin end body id
	begin="$(date -u -d '-1 min' +%Y-%m-%dT%H:%M:%SZ)"
	end="$(date -u -d '+2 hour' +%Y-%m-%dT%H:%M:%SZ)"
	body="{\"shopId\":1,\"title\":\"bench\",\"subTitle\":\"make bench\",\"rules\":\"\",\"payValue\":100,\"actualValue\":100,\"type\":1,\"stock\":$1,\"beginTime\":\"$begin\",\"endTime\":\"$end\"}"
	id="$(curl -fsS -X POST -H "authorization: $ADMIN" -H 'content-type: application/json' \
		-d "$body" "$BASE/voucher/seckill" | jq -er '.data')" || die "publishing a voucher failed"
	vouchers+=("$id")
	published="$id"
}

# wrk_run NAME METHOD PATH ONCE: one wrk run with bench/rotate.lua; its BENCH
# lines become R_<NAME>_<figure>; also the CPU used by the server, MariaDB
# and Redis, and the machine's busy share, during the run.
wrk_run() {
	local name=$1 method=$2 path=$3 once=$4 prof_pid="" s0 s1 m0 m1 r0 r1 w0 w1 b0 t0 b1 t1 k v
	if [[ " $PROFILE " == *" $name "* ]] && ((DURATION > 3)); then
		# The server's request deadline (SECKILL_REQUEST_TIMEOUT, 3 s) also
		# cuts /debug/pprof/profile short: take back-to-back 2 s profiles
		# over the run (skipping its first second) and merge them.
		(
			sleep 1
			for ((i = 0; i < (DURATION - 2) / 2; i++)); do
				curl -fsS -o "$OUT/$name.$i.pprof" "$BASE/debug/pprof/profile?seconds=2" || exit 1
			done
		) &
		prof_pid=$!
		put "$name" profiled 1
	fi
	local q0 q1
	q0="$(db_counters)"
	s0="$(cpu_ticks "$server_pid")" m0="$(cpu_ticks "${mariadb_pid:-0}")" r0="$(cpu_ticks "${redis_pid:-0}")"
	w0="$(child_ticks)"
	read -r b0 t0 < <(busy_ticks)
	BENCH_TOKENS="$OUT/tokens-$half.csv" BENCH_THREADS="$THREADS" BENCH_ONCE="$once" BENCH_METHOD="$method" \
		wrk -t"$THREADS" -c"$CONNS" -d"${DURATION}s" --latency -s "$here/rotate.lua" "$BASE$path" >"$OUT/wrk-$name.txt"
	read -r b1 t1 < <(busy_ticks)
	w1="$(child_ticks)"
	s1="$(cpu_ticks "$server_pid")" m1="$(cpu_ticks "${mariadb_pid:-0}")" r1="$(cpu_ticks "${redis_pid:-0}")"
	q1="$(db_counters)"
	note_cmd "BENCH_TOKENS=tokens-$half.csv BENCH_THREADS=$THREADS BENCH_ONCE=$once BENCH_METHOD=$method wrk -t$THREADS -c$CONNS -d${DURATION}s --latency -s bench/rotate.lua $BASE$path   # $name"
	while read -r _ k v; do
		put "$name" "$k" "$v"
	done < <(grep '^BENCH ' "$OUT/wrk-$name.txt")
	[[ -n "$(get "$name" requests)" ]] || die "wrk printed no figures for $name: see $OUT/wrk-$name.txt"
	half=$((1 - half))
	put "$name" busy "$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) 'BEGIN{printf "%.0f", t ? 100*b/t : 0}')"
	# The rest: CPU busy on the machine outside the server, wrk, MariaDB and
	# Redis (other work on the machine; the Redlock nodes and ZooKeeper too),
	# in % of the whole machine.
	put "$name" rest "$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v o=$(((s1 - s0) + (m1 - m0) + (r1 - r0) + (w1 - w0))) \
		'BEGIN{x = t ? 100*(b-o)/t : 0; printf "%.0f", (x < 0) ? 0 : x}')"
	put "$name" share "$(awk -v t=$((t1 - t0)) -v s=$((s1 - s0)) -v w=$((w1 - w0)) -v m=$((m1 - m0)) -v r=$((r1 - r0)) \
		'BEGIN{if (t) printf "%.0f / %.0f / %.0f / %.0f", 100*s/t, 100*w/t, 100*m/t, 100*r/t}')"
	local n
	n="$(get "$name" received)"
	put "$name" cpu_server "$(awk -v d=$((s1 - s0)) -v n="$n" -v hz="$CLK_TCK" 'BEGIN{printf "%.0f", n ? 1e6*d/hz/n : 0}')"
	put "$name" cpu_mariadb "$(awk -v d=$((m1 - m0)) -v n="$n" -v hz="$CLK_TCK" 'BEGIN{printf "%.0f", n ? 1e6*d/hz/n : 0}')"
	put "$name" cpu_redis "$(awk -v d=$((r1 - r0)) -v n="$n" -v hz="$CLK_TCK" 'BEGIN{printf "%.0f", n ? 1e6*d/hz/n : 0}')"
	# MariaDB statements per response (server-wide counters: other clients
	# of the database add to them): queries / prepares / statement closes.
	put "$name" db_stmts "$(awk -v a="$q0" -v b="$q1" -v n="$n" 'BEGIN{split(a, x, " "); split(b, y, " ");
		if (n) printf "%.1f / %.1f / %.1f", (y[1]-x[1])/n, (y[2]-x[2])/n, (y[3]-x[3])/n}')"
	if [[ -n "$prof_pid" ]]; then
		if wait "$prof_pid"; then
			go tool pprof -proto "$BIN" "$OUT/$name".*.pprof >"$OUT/$name.pprof" 2>/dev/null &&
				rm -f "$OUT/$name".[0-9]*.pprof
			go tool pprof -top -nodecount=60 "$BIN" "$OUT/$name.pprof" >"$OUT/$name.top.txt" 2>&1 || true
			go tool pprof -top -cum -nodecount=150 "$BIN" "$OUT/$name.pprof" >"$OUT/$name.cum.txt" 2>&1 || true
			log "profile of $name: $OUT/$name.top.txt, $OUT/$name.cum.txt"
		else
			log "profiling $name failed"
		fi
	fi
	log "$name: $(get "$name" requests) requests, $(get "$name" rps) req/s, p99 $(get "$name" p99_us) us"
}

# db_state VOUCHER: "initial stock orders distinct" read from the database.
db_state() {
	sql "SELECT sv.initial_stock, sv.stock,
	       (SELECT COUNT(*) FROM tb_voucher_order o WHERE o.voucher_id=sv.voucher_id),
	       (SELECT COUNT(DISTINCT user_id) FROM tb_voucher_order o WHERE o.voucher_id=sv.voucher_id)
	     FROM tb_seckill_voucher sv WHERE sv.voucher_id=$1"
}

# audit NAME VOUCHER: reads the audit endpoint (waiting, in async mode, for
# the queue to drain) and the database; stores the figures.
audit() {
	local name=$1 v=$2 a tries=0 initial stock orders distinct
	while :; do
		a="$(curl -fsS -H "authorization: $ADMIN" "$BASE/admin/vouchers/$v/audit")" || die "audit of voucher $v failed"
		[[ "$(jq -r '.data.pending // 0' <<<"$a")" == 0 ]] && break
		((++tries <= 600)) || {
			violate "$name" "async queue not drained after 60 s: $a"
			break
		}
		sleep 0.1
	done
	printf '%s\n' "$a" >"$OUT/audit-$name.json"
	read -r initial stock orders distinct < <(db_state "$v")
	put "$name" voucher "$v"
	put "$name" initial "$initial"
	put "$name" stock "$stock"
	put "$name" orders "$orders"
	put "$name" distinct "$distinct"
	put "$name" duprej "$(jq -r '.data.duplicateRejections' <<<"$a")"
	put "$name" consistent "$(jq -r '.data.consistent' <<<"$a")"
	[[ "$(jq -r '.data.consistent' <<<"$a")" == true ]] || violate "$name" "audit endpoint says consistent=false: $a"
	[[ "$(jq -r '.data.duplicateRejections' <<<"$a")" == 0 ]] || violate "$name" "unique-key rejections: $(jq -r '.data.duplicateRejections' <<<"$a") (the lock let duplicates through)"
	((orders <= initial)) || violate "$name" "oversold: $orders orders > initial stock $initial"
	((orders == initial - stock)) || violate "$name" "orders $orders != initial $initial - stock $stock"
	((distinct == orders)) || violate "$name" "$((orders - distinct)) users with two orders"
}

# check_wrk NAME: wrk itself must report no socket errors and no timeouts.
check_wrk() {
	local name=$1 k
	for k in err_connect err_read err_write err_timeout; do
		[[ "$(get "$name" "$k")" == 0 ]] || violate "$name" "wrk $k=$(get "$name" "$k")"
	done
	# wrk's "Non-2xx or 3xx responses" must equal what response() counted.
	local counted=0 s
	for s in $(compgen -v "R_${name//-/_}_status_"); do
		[[ "${s##*_}" -ge 300 ]] && counted=$((counted + ${!s}))
	done
	[[ "$(get "$name" non2xx3xx)" == "$counted" ]] || violate "$name" "wrk counted $(get "$name" non2xx3xx) non-2xx, the script $counted"
}

# ------------------------------------------------------------------ machine
START_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
LOAD_BEFORE="$(cut -d' ' -f1-3 /proc/loadavg)"
CPU_MODEL="$(awk -F': ' '/^model name/{print $2; exit}' /proc/cpuinfo)"
NPROC="$(nproc)"
MEM="$(awk '/^MemTotal/{printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
KERNEL="$(uname -sr)"
GOVER="$(go version | awk '{print $3}')"
DBVER="$(sql 'SELECT VERSION()')"
REDISVER="$(rcli INFO server | awk -F: '/^redis_version/{gsub("\r",""); print $2}')"
WRKVER="$( (wrk -v 2>&1 || true) | awk 'NR==1{print $2}')"
FLUSH="$(sql 'SELECT @@innodb_flush_log_at_trx_commit')"
log "machine: $NPROC x $CPU_MODEL, $MEM, $KERNEL; load $LOAD_BEFORE"

# ------------------------------------------------------------------ limit: redis-benchmark
# redis_bench NAME SCRIPT KEYS ARGS...: EVALSHA of a lua/ script.
redis_bench() {
	local name=$1 file=$2 sha csv
	shift 2
	sha="$(rcli SCRIPT LOAD "$(cat "$root/lua/$file")")"
	note_cmd "redis-cli -h $redis_host -p $redis_port SCRIPT LOAD \"\$(cat lua/$file)\"   # -> $sha"
	note_cmd "redis-benchmark -h $redis_host -p $redis_port -n $REDIS_N -c $CONNS --csv $*   # $name"
	csv="$(redis-benchmark -h "$redis_host" -p "$redis_port" -n "$REDIS_N" -c "$CONNS" --csv "$@" 2>"$OUT/redis-$name.err" | tail -1)"
	printf '%s\n' "$csv" >"$OUT/redis-$name.csv"
	# "test","rps","avg","min","p50","p95","p99","max"
	IFS=, read -r _ rps _ _ p50 _ p99 _ <<<"${csv//\"/}"
	[[ "$rps" =~ ^[0-9.]+$ ]] || die "redis-benchmark printed no rate for $name: $csv"
	put "$name" rps "$rps"
	put "$name" p50_us "$(awk -v x="$p50" 'BEGIN{printf "%.0f", x*1000}')"
	put "$name" p99_us "$(awk -v x="$p99" 'BEGIN{printf "%.0f", x*1000}')"
	log "$name: $rps ops/s"
}

ACQ_SHA="$(rcli SCRIPT LOAD "$(cat lua/acquire.lua)")"
REL_SHA="$(rcli SCRIPT LOAD "$(cat lua/unlock.lua)")"
ACQ_ARGS=(-r 1000000000 EVALSHA "$ACQ_SHA" 2 'bench:lock:__rand_int__' 'bench:lock:__rand_int__:fence' bench-owner 10000)
redis_bench acquire acquire.lua "${ACQ_ARGS[@]}"
bench_keys_clean
# The release keyspace is 4 x the request count, every key written (owner
# bench-owner) beforehand: about 88% of the calls find their key and delete it.
REL_SPACE=$((4 * REDIS_N))
fill='for i = tonumber(ARGV[1]), tonumber(ARGV[2]) do redis.call("SET", string.format("bench:lock:%012d", i), ARGV[3], "PX", ARGV[4]) end return 1'
for ((i = 0; i < REL_SPACE; i += 100000)); do
	rcli EVAL "$fill" 0 "$i" "$((i + 99999 < REL_SPACE - 1 ? i + 99999 : REL_SPACE - 1))" bench-owner 300000 >/dev/null
done
count='local n = 0 for i = 0, tonumber(ARGV[1]) - 1 do n = n + redis.call("EXISTS", string.format("bench:lock:%012d", i)) end return n'
REL_ARGS=(-r "$REL_SPACE" EVALSHA "$REL_SHA" 1 'bench:lock:__rand_int__' bench-owner)
redis_bench release unlock.lua "${REL_ARGS[@]}"
REL_DELETED=$((REL_SPACE - $(rcli EVAL "$count" 0 "$REL_SPACE")))
bench_keys_clean

# ------------------------------------------------------------------ limit: no-op, and the sold-out path
log "no-op endpoint and sold-out path (server: sync, lua)"
start_server sync lua noop
wrk_run noop GET /debug/noop 0
check_wrk noop
[[ "$(get noop non2xx3xx)" == 0 ]] || violate noop "$(get noop non2xx3xx) non-2xx responses from the no-op endpoint"

publish 1
SOLD_V="$published"
first="$(curl -sS -X POST -H "authorization: $FIRST_USER" "$BASE/voucher-order/seckill/$SOLD_V")"
[[ "$(jq -r '.success' <<<"$first")" == true ]] || die "buying the only voucher of $SOLD_V failed: $first"
wrk_run soldout POST "/voucher-order/seckill/$SOLD_V" 0
check_wrk soldout
audit soldout "$SOLD_V"
n="$(get soldout received)"
[[ "$(get soldout status_409)" == "$n" ]] || violate soldout "$(get soldout status_409) of $n responses are 409"
[[ "$(get soldout code_SOLD_OUT)" == "$n" ]] || violate soldout "$(get soldout code_SOLD_OUT) of $n responses are SOLD_OUT"
[[ "$(get soldout non2xx3xx)" == "$(get soldout requests)" ]] || violate soldout "wrk: $(get soldout non2xx3xx) non-2xx of $(get soldout requests) requests"
[[ "$(get soldout orders)" == 1 && "$(get soldout stock)" == 0 ]] || violate soldout "orders $(get soldout orders), stock $(get soldout stock); want 1 and 0"
stop_server

# ------------------------------------------------------------------ limit: mariadb-slap
# slap_bench NAME STATEMENTS QUERY: mariadb-slap, $CONNS clients, each running
# SLAP_TXNS times the ;-separated QUERY of STATEMENTS statements, on a scratch
# voucher of huge stock (@V@ in QUERY is its id) deleted afterwards with its
# orders. Every run of QUERY must write one order (checked).
slap_bench() {
	local name=$1 stmts=$2 q m0 m1 q0 q1 secs orders distinct txns
	sql "INSERT INTO tb_voucher (shop_id, title, sub_title, pay_value, actual_value, type) VALUES (1, 'bench slap scratch', 'make bench', 100, 100, 1)"
	slap_voucher="$(sql "SELECT MAX(id) FROM tb_voucher WHERE title='bench slap scratch'")"
	sql "INSERT INTO tb_seckill_voucher (voucher_id, stock, initial_stock, begin_time, end_time) VALUES ($slap_voucher, 1000000000, 1000000000, NOW() - INTERVAL 1 MINUTE, NOW() + INTERVAL 2 HOUR)"
	q="${3//@V@/$slap_voucher}"
	local args=(--protocol=tcp -h"$db_host" -P"$db_port" -u"$db_user" --create-schema="$db_name" --no-drop
		--delimiter=";" --concurrency="$CONNS" --iterations=1 --number-of-queries="$((stmts * SLAP_TXNS * CONNS))")
	q0="$(db_counters)"
	m0="$(cpu_ticks "${mariadb_pid:-0}")"
	MYSQL_PWD="$db_pass" "$SLAP" "${args[@]}" --query="$q" >"$OUT/$name.txt" 2>&1 || die "mariadb-slap failed: $(tail -3 "$OUT/$name.txt")"
	m1="$(cpu_ticks "${mariadb_pid:-0}")"
	q1="$(db_counters)"
	local shown="${args[*]}"
	put "$name" cmd "MYSQL_PWD=... $(basename "$SLAP") ${shown/--delimiter=;/--delimiter=\';\'} --query=\"$q\""
	secs="$(awk -F': ' '/Average number of seconds/{print $2+0}' "$OUT/$name.txt")"
	read -r _ _ orders distinct < <(db_state "$slap_voucher")
	txns=$((SLAP_TXNS * CONNS))
	((orders == txns && distinct == txns)) || violate "$name" "mariadb-slap wrote $orders orders ($distinct users), want $txns"
	put "$name" txns "$txns"
	put "$name" secs "$secs"
	put "$name" rps "$(awk -v n="$txns" -v s="$secs" 'BEGIN{printf "%.1f", (s > 0) ? n/s : 0}')"
	put "$name" cpu_mariadb "$(awk -v d=$((m1 - m0)) -v n="$txns" -v hz="$CLK_TCK" 'BEGIN{printf "%.0f", 1e6*d/hz/n}')"
	put "$name" db_stmts "$(awk -v a="$q0" -v b="$q1" -v n="$txns" 'BEGIN{split(a, x, " "); split(b, y, " ");
		printf "%.1f / %.1f / %.1f", (y[1]-x[1])/n, (y[2]-x[2])/n, (y[3]-x[3])/n}')"
	log "$name: $(get "$name" rps) txn/s ($txns transactions in $secs s)"
	sql "DELETE FROM tb_voucher_order WHERE voucher_id=$slap_voucher; DELETE FROM tb_seckill_voucher WHERE voucher_id=$slap_voucher; DELETE FROM tb_voucher WHERE id=$slap_voucher"
	slap_voucher=""
}

log "mariadb-slap of the order transaction"
# ids and user ids from UUID_SHORT(): unique, increasing, like the ID worker's.
slap_bench slap 4 "BEGIN;UPDATE tb_seckill_voucher SET stock=stock-1 WHERE voucher_id=@V@ AND stock>0;INSERT INTO tb_voucher_order (id,user_id,voucher_id,pay_type,status) VALUES (UUID_SHORT(),UUID_SHORT(),@V@,1,1);COMMIT"

# ------------------------------------------------------------------ the seckill, every mode
# seckill_run NAME ORDER_MODE LOCK_MODE: a fresh server, a voucher of stock
# far above the request count, one wrk run where every request is a new user,
# then the audit and the checks: every response 200, 200s <= orders <=
# 200s + unanswered.
seckill_run() {
	local name=$1 v n200 inflight orders
	log "seckill $name"
	start_server "$2" "$3" "$name"
	publish 10000000
	v="$published"
	wrk_run "$name" POST "/voucher-order/seckill/$v" 1
	check_wrk "$name"
	audit "$name" "$v"
	n200="$(get "$name" status_200)" n200="${n200:-0}"
	inflight=$(($(get "$name" sent) - $(get "$name" received)))
	orders="$(get "$name" orders)"
	put "$name" inflight "$inflight"
	[[ "$(get "$name" wrapped)" == 0 ]] || violate "$name" "$(get "$name" wrapped) requests reused a token: raise BENCH_USERS"
	[[ "$n200" == "$(get "$name" received)" ]] || violate "$name" "$(($(get "$name" received) - n200)) of $(get "$name" received) responses are not 200 (every request must create an order)"
	((orders >= n200 && orders <= n200 + inflight)) ||
		violate "$name" "orders $orders, 200 responses $n200, unanswered at stop $inflight: want 200s <= orders <= 200s + unanswered"
	stop_server
}

for om in $ORDER_MODES; do
	for lm in $LOCK_MODES; do
		seckill_run "$om-$lm" "$om" "$lm"
		rows+=("$om-$lm")
	done
done

# ------------------------------------------------------------------ targets, and a profile when one is missed
# profile_summary FILE: the cumulative pprof lines of the project's frames
# and the library calls that matter for the order path, at >= 1.5%.
profile_summary() {
	local keep='seckill/|gorm[.]io/gorm[.][(][*](DB|processor)[)][.]|database/sql[.][(][*](DB|Tx|Stmt)[)][.][A-Z]|go-sql-driver/mysql[.][(][*](mysqlConn|mysqlStmt|mysqlTx)[)][.][A-Z]|go-redis/v9[.][(][*]baseClient[)][.]process$|golang-jwt/jwt/v5[.][(][*]Parser[)][.]ParseWithClaims|gin[.][(][*]Engine[)][.]ServeHTTP|linux[.]Syscall6$|runtime[.](gcBgMarkWorker|mallocgc|schedule)$'
	go tool pprof -top -cum -nodecount=500 "$BIN" "$1" 2>/dev/null |
		awk -v keep="$keep" '
			/^ *flat/ { print; next }
			NF >= 6 && $0 ~ keep { p = $5; sub(/%/, "", p); if (p + 0 >= 1.5) print }' |
		head -50
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a != "" && b > 0) printf "%.2f", a/b; else printf "-" }'; }
met() { awk -v a="$1" -v b="$2" 'BEGIN{ print (a != "-" && a >= b) ? "yes" : "**no**" }'; }
NOOP="$(get noop rps)" SLAPR="$(get slap rps)"
T1="$(ratio "$(get sync-lua rps)" "$SLAPR")"
T2="$(ratio "$(get soldout rps)" "$NOOP")"
# A missed target gets an extra run (not in the table: profiling costs CPU)
# with the server's CPU profile, summarised in RESULTS.md.
profiled=()
if [[ "$T1" != - && "$(met "$T1" 0.6)" != yes ]]; then
	PROFILE+=" profile-sync-lua"
	seckill_run profile-sync-lua sync lua
	profiled+=(profile-sync-lua)
fi
if [[ "$T2" != - && "$(met "$T2" 0.5)" != yes ]]; then
	PROFILE+=" profile-soldout"
	log "sold-out path, profiled"
	start_server sync lua profile-soldout
	wrk_run profile-soldout POST "/voucher-order/seckill/$SOLD_V" 0
	stop_server
	profiled+=(profile-soldout)
fi

# ------------------------------------------------------------------ RESULTS.md
LOAD_AFTER="$(cut -d' ' -f1-3 /proc/loadavg)"
END_DATE="$(date -u '+%Y-%m-%d %H:%M:%S UTC')"
ms() { awk -v x="$1" 'BEGIN{ if (x == "") printf "-"; else printf "%.2f", x/1000 }'; }
fmt_rate() { awk -v x="$1" 'BEGIN{printf "%.0f", x}'; }
refusals() { # NAME: "CODE n, ..." of the non-2xx responses
	local name=$1 s out=""
	for s in $(compgen -v "R_${name//-/_}_code_"); do
		out+="${out:+, }${s#R_"${name//-/_}"_code_} ${!s}"
	done
	printf '%s' "${out:-0}"
}
invariants() { # NAME: ok or the number of violations
	local name=$1 n=0 x
	for x in "${violations[@]}"; do [[ "$x" == "$name:"* ]] && n=$((n + 1)); done
	((n == 0)) && printf 'ok' || printf '**%d violated**' "$n"
}

{
	cat <<EOF
# Benchmark results

Written by \`make bench\` (bench/run.sh) on $START_DATE (finished $END_DATE).
Every figure below comes from this one run: limits and service runs share the
machine, its load and its database state.

## Machine

| | |
|---|---|
| CPUs (nproc) | $NPROC |
| CPU model | $CPU_MODEL |
| memory | $MEM |
| kernel | $KERNEL |
| load average before / after (1, 5, 15 min) | $LOAD_BEFORE / $LOAD_AFTER |
| Go | $GOVER |
| MariaDB | $DBVER (innodb_flush_log_at_trx_commit=$FLUSH) |
| Redis | $REDISVER |
| wrk | $WRKVER |

The machine has $NPROC cores and nothing is pinned: the server, wrk (its
$THREADS threads), MariaDB and Redis share them, so every figure includes
the cost of the client and of the databases on the same cores. "CPU %"
below is each process's share of the whole machine during the run (100 = all
$NPROC cores); "rest" is CPU used by everything else on the machine (other
work, and the Redlock nodes and ZooKeeper in the modes that use them): a
large "rest" means the run shared the machine with foreign load. "CPU us/req"
is CPU time per response of the server, MariaDB and Redis.
Concurrency is the same everywhere: $CONNS wrk connections
($THREADS threads), $CONNS redis-benchmark clients, $CONNS mariadb-slap clients.
wrk runs last ${DURATION} s each.

## Limits

| limit | tool | rate | p50 ms | p99 ms | notes |
|---|---|---:|---:|---:|---|
| no-op endpoint (GET /debug/noop, same auth middleware) | wrk | $(fmt_rate "$NOOP") req/s | $(ms "$(get noop p50_us)") | $(ms "$(get noop p99_us)") | CPU % server / wrk / MariaDB / Redis / rest: $(get noop share) / $(get noop rest); server $(get noop cpu_server) us/req |
| lock acquire (lua/acquire.lua: SET NX PX + fencing INCR) | redis-benchmark EVALSHA | $(fmt_rate "$(get acquire rps)") ops/s | $(ms "$(get acquire p50_us)") | $(ms "$(get acquire p99_us)") | fresh random key per call |
| lock release (lua/unlock.lua: compare-and-delete) | redis-benchmark EVALSHA | $(fmt_rate "$(get release rps)") ops/s | $(ms "$(get release p50_us)") | $(ms "$(get release p99_us)") | $REL_DELETED of $REDIS_N calls found their key and deleted it |
| order transaction (BEGIN; UPDATE stock; INSERT order; COMMIT) | mariadb-slap | $(fmt_rate "$SLAPR") txn/s | - | - | $(get slap txns) transactions in $(get slap secs) s, MariaDB $(get slap cpu_mariadb) us CPU/txn; MariaDB per txn, queries / prepares / closes: $(get slap db_stmts) |

## The seckill (wrk, one new user per request)

Sold-out: a voucher of stock 1 already sold, every request must be 409
SOLD_OUT. The other rows: stock 10,000,000, far above the request count, so
every request must create an order (each token used once). "unanswered" are
requests wrk sent but whose answer it did not wait for when the run stopped;
the check is 200s ≤ orders ≤ 200s + unanswered.

| run | order mode | lock mode | requests | req/s | p50 ms | p99 ms | 200 | refusals | orders (DB) | unanswered | invariants | ÷ slap txn | ÷ no-op | CPU % server / wrk / MariaDB / Redis / rest | CPU us/req server / MariaDB / Redis | MariaDB per req: queries / prepares / closes |
|---|---|---|---:|---:|---:|---:|---:|---|---:|---:|---|---:|---:|---|---|---|
EOF
	for name in soldout "${rows[@]}"; do
		if [[ "$name" == soldout ]]; then
			om=sync lm=lua
		else
			om="${name%%-*}" lm="${name#*-}"
		fi
		prof=""
		[[ "$(get "$name" profiled)" == 1 ]] && prof=" (profiled)"
		printf '| %s%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s / %s | %s |\n' \
			"$name" "$prof" "$om" "$lm" "$(get "$name" requests)" "$(fmt_rate "$(get "$name" rps)")" \
			"$(ms "$(get "$name" p50_us)")" "$(ms "$(get "$name" p99_us)")" "$(get "$name" status_200)" \
			"$(refusals "$name")" "$(get "$name" orders)" "$(get "$name" inflight)" "$(invariants "$name")" \
			"$(if [[ $name == soldout ]]; then echo -; else ratio "$(get "$name" rps)" "$SLAPR"; fi)" \
			"$(ratio "$(get "$name" rps)" "$NOOP")" "$(get "$name" share)" "$(get "$name" rest)" \
			"$(get "$name" cpu_server)" "$(get "$name" cpu_mariadb)" "$(get "$name" cpu_redis)" "$(get "$name" db_stmts)"
	done
	cat <<EOF

## Targets (issue 4), as ratios in this run

| target | measured | required | met |
|---|---:|---:|---|
| sync \`lua\` req/s ÷ mariadb-slap txn/s | $T1 | ≥ 0.6 | $(met "$T1" 0.6) |
| sold-out req/s ÷ no-op req/s | $T2 | ≥ 0.5 | $(met "$T2" 0.5) |
| invariant violations, all runs | ${#violations[@]} | 0 | $( ((${#violations[@]} == 0)) && echo yes || echo '**no**') |
EOF
	if ((${#violations[@]} > 0)); then
		printf '\nViolations:\n\n'
		printf -- '- %s\n' "${violations[@]}"
	fi
	for name in "${profiled[@]}"; do
		[[ -s "$OUT/$name.pprof" ]] || continue
		cat <<EOF

## Profile: $name (a target was missed)

An extra run, not in the table above, with the server's CPU profile taken
during it (back-to-back 2 s profiles, merged): $(get "$name" requests) requests,
$(fmt_rate "$(get "$name" rps)") req/s; CPU % server / wrk / MariaDB / Redis / rest:
$(get "$name" share) / $(get "$name" rest); CPU us/req server / MariaDB / Redis:
$(get "$name" cpu_server) / $(get "$name" cpu_mariadb) / $(get "$name" cpu_redis);
MariaDB per request, queries / prepares / closes: $(get "$name" db_stmts).
The profile is $OUT/$name.pprof (\`go tool pprof -top -cum $BIN $OUT/$name.pprof\`).

Cumulative, the frames of this project and of the libraries it calls, at 1.5%
or more of the server's CPU samples:

\`\`\`
$(profile_summary "$OUT/$name.pprof")
\`\`\`

Flat, the 15 hottest functions:

\`\`\`
$(go tool pprof -top -nodecount=15 "$BIN" "$OUT/$name.pprof" 2>/dev/null | sed -n '/flat%/,$p')
\`\`\`
EOF
	done
	cat <<EOF

## Commands

\`make bench\` runs \`bash bench/run.sh\`; the exact commands it ran (the
tokens-*.csv and admin.csv files are \`seckill tokens\` outputs in the out
directory):

\`\`\`
$(printf '%s\n' "${commands[@]}")
\`\`\`

Before the release run, keys bench:lock:000000000000 .. $(printf '%012d' $((REL_SPACE - 1))) are set
to bench-owner (one EVAL loop per 100,000 keys); all bench:lock:* keys are
removed afterwards. The mariadb-slap voucher and its orders are deleted after
its run; the seckill vouchers and their orders after the whole run (unless
BENCH_KEEP=1).

mariadb-slap, in full (statement count = 4 per transaction × $SLAP_TXNS transactions × $CONNS clients):

\`\`\`
$(get slap cmd)
\`\`\`

Servers were started as
\`SECKILL_HTTP_ADDR=127.0.0.1:$PORT SECKILL_ORDER_MODE=<order mode> SECKILL_LOCK_MODE=<lock mode> SECKILL_ENV=development SECKILL_LOG_LEVEL=warn seckill serve\`
with SECKILL_MYSQL_DSN, SECKILL_REDIS_ADDR, SECKILL_REDLOCK_ADDRS and
SECKILL_ZK_ADDRS of .ci/env.sh, one fresh process per row.
EOF
} >"$RESULTS.tmp"
# Paths relative to the repository, as a reader would type them.
sed -i "s|$root/||g" "$RESULTS.tmp"

[[ -f "$here/NOTES.md" ]] && {
	printf '\n' >>"$RESULTS.tmp"
	cat "$here/NOTES.md" >>"$RESULTS.tmp"
}
mv "$RESULTS.tmp" "$RESULTS"
log "wrote $RESULTS (out dir $OUT)"
log "targets: lua/slap $T1 (>= 0.6), soldout/noop $T2 (>= 0.5), violations ${#violations[@]}"
((${#violations[@]} == 0)) || exit 1
