#!/usr/bin/env bash
# loadtest/matrix.sh: every lock mode x 1 and 2 instances x {normal, slow
# business}, each one run of loadtest/run.sh (MATRIX=1: a design that breaks
# is reported, not failed), then loadtest/RESULTS.md with the machine, the
# date, the command and the table.
#
#   make loadtest-matrix                 (MODES="lua redsync" to narrow it)
#
# Settings:
#   normal  USERS=300 STOCK=200 DUPS=4 SPACING_MS=0: each user fires 4
#           purchases at once, 2 per instance with 2 instances; lease 10 s.
#   slow    USERS=150 STOCK=150 DUPS=4 SPACING_MS=600, lease 1 s, critical
#           delay 2.5 s: the first purchase holds the lock 2.5 s, the lease
#           runs out after 1 s, and the duplicates arrive at 0.6, 1.2 and
#           1.8 s, all while the first is still inside.
#
# Exit status: non-zero when a run could not be made, when any run broke an
# invariant (oversell, stock/orders mismatch, a user with two orders, a 200
# without its order or the reverse), or when a design expected to hold let a
# duplicate through or answered anything but 200/409. Designs expected to break
# only report their numbers.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
cd "$root"
# shellcheck source=.ci/env.sh
[[ -n "${SECKILL_MYSQL_DSN:-}" && -n "${SECKILL_REDIS_ADDR:-}" ]] || source "$root/.ci/env.sh"
export PATH="/usr/local/go/bin:${PATH}"

MODES="${MODES:-none local simple owner lua reentrant redsync multi mysql zookeeper}"
INSTANCE_COUNTS="${INSTANCE_COUNTS:-1 2}"
SETTINGS="${SETTINGS:-normal slow}"
RESULTS="${RESULTS:-$root/loadtest/RESULTS.md}"
stamp="$(date +%Y%m%d-%H%M%S)"
outdir="$root/loadtest/out/matrix-$stamp"
mkdir -p "$outdir"

log() { printf '[matrix] %s\n' "$*" >&2; }
# kv FILE KEY: the value of KEY in a KEY=VALUE file ("" when absent).
kv() { awk -v k="$2" 'index($0, k "=") == 1 { v = substr($0, length(k) + 2) } END { print v }' "$1"; }

# expect MODE INSTANCES SETTING: "breaks" or "holds".
expect() {
	case "$1" in
	none) echo breaks ;;
	local) if (($2 > 1)); then echo breaks; else echo holds; fi ;;
	simple | owner | lua) if [[ "$3" == slow ]]; then echo breaks; else echo holds; fi ;;
	*) echo holds ;;
	esac
}

log "building bin/seckill"
go build -o bin/seckill .
started=$SECONDS
load_start="$(cut -d' ' -f1 /proc/loadavg)"
rows=()
problems=()
for setting in $SETTINGS; do
	for mode in $MODES; do
		for n in $INSTANCE_COUNTS; do
			dir="$outdir/$mode-$n-$setting"
			if [[ "$setting" == slow ]]; then
				set_env=(SLOW=1 USERS=150 STOCK=150 DUPS=4)
			else
				set_env=(SLOW=0 USERS=300 STOCK=200 DUPS=4)
			fi
			log "$mode x $n, $setting"
			if ! env "${set_env[@]}" MODE="$mode" INSTANCES="$n" MATRIX=1 SKIP_BUILD=1 OUT="$dir" \
				bash "$here/run.sh" >"$dir.log" 2>&1; then
				problems+=("$mode x $n ($setting): the run failed, see $dir.log")
				rows+=("| $mode | $n | $setting | run failed | | | | | | | | | | | |")
				continue
			fi
			r="$dir/result.env"
			requests="$(kv "$r" requests)" ok="$(kv "$r" ok)" sold_out="$(kv "$r" sold_out)"
			duplicate="$(kv "$r" duplicate)" lock_refused="$(kv "$r" lock_refused)"
			past_lock="$(kv "$r" past_lock)" unique_key="$(kv "$r" unique_key)"
			other_codes="$(kv "$r" other_codes)" oversold="$(kv "$r" oversold)"
			consistent="$(kv "$r" consistent)" violations="$(kv "$r" violations)"
			breaches="$(kv "$r" breaches)" unexpected="$(kv "$r" unexpected)" rps="$(kv "$r" rps)"
			p50_ms="$(kv "$r" p50_ms)" p95_ms="$(kv "$r" p95_ms)" p99_ms="$(kv "$r" p99_ms)"
			want="$(expect "$mode" "$n" "$setting")"
			if ((breaches > 0)); then got=breaks; else got=holds; fi
			verdict="$got"
			if ((violations > 0)); then
				verdict="**VIOLATED INVARIANTS**"
				problems+=("$mode x $n ($setting): $violations invariant violation(s), see $dir/report.txt")
			elif [[ "$want" == holds && "$got" == breaks ]]; then
				verdict="**breaks, expected to hold**"
				problems+=("$mode x $n ($setting): $breaches duplicate(s) got past a lock expected to hold")
			elif [[ "$want" == holds ]] && ((unexpected > 0)); then
				verdict="holds, **$unexpected unexpected answers**"
				problems+=("$mode x $n ($setting): $unexpected answers neither 200 nor 409 ($other_codes)")
			elif [[ "$want" == breaks && "$got" == holds ]]; then
				verdict="held this time (expected to break)"
			else
				verdict="$got (as expected)"
			fi
			other="${other_codes:-}"
			rows+=("| $mode | $n | $setting | $requests | $ok | $sold_out | $duplicate | $lock_refused | $past_lock | $unique_key | ${other:--} | $oversold | $consistent | $rps | $p50_ms / $p95_ms / $p99_ms | $verdict |")
			log "  -> $verdict (200: $ok, past lock: $past_lock, unique key: $unique_key, oversold: $oversold, consistent: $consistent)"
		done
	done
done
elapsed=$((SECONDS - started))

k6v="$("$(go env GOPATH)/bin/k6" version 2>/dev/null | awk '{ print $1, $2 }' || true)"
cpu="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
mem="$(awk '/^MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
mariadb_v="$(mariadb --version 2>/dev/null | sed -n 's/.*Distrib \([0-9.]*\)-MariaDB.*/MariaDB \1/p')"
redis_v="$(redis-server --version 2>/dev/null | sed -n 's/.* v=\([0-9.]*\).*/Redis \1/p')"
zk="${SECKILL_ZK_ADDRS%%,*}"
zk_v="$( (exec 3<>"/dev/tcp/${zk%:*}/${zk##*:}" && printf srvr >&3 && head -1 <&3) 2>/dev/null |
	sed -n 's/^Zookeeper version: \([0-9.]*\).*/ZooKeeper \1/p' || true)"
{
	cat <<EOF
# Load-test matrix

Generated by \`make loadtest-matrix\` (loadtest/matrix.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'), in ${elapsed} s.

- Machine: $(uname -srm), ${cpu:-unknown CPU}, $(nproc) cores, ${mem}; everything (k6, the
  instances, MariaDB, Redis x4, ZooKeeper) on this one machine.
- Software: $(go version | cut -d' ' -f3), ${k6v:-k6 ?}, ${mariadb_v:-MariaDB ?}, ${redis_v:-Redis ?}, ${zk_v:-ZooKeeper ?}.
- Load average of the machine (1 min) at the start and at the end: ${load_start} and $(cut -d' ' -f1 /proc/loadavg)
  (other work on the machine shows in req/s and latencies, never in the counts).
- Command: \`make loadtest-matrix\`, that is for every mode, 1 and 2 instances, and both settings:
  \`make loadtest MODE=<mode> INSTANCES=<n> [SLOW=1] MATRIX=1\` (loadtest/run.sh, driver k6,
  scenario \`burst\`: each user fires DUPS=4 purchases round-robin over the instances).
- **normal**: 300 users, stock 200, the 4 purchases of a user at the same instant, lease 10 s,
  no delay.
- **slow business**: 150 users, stock 150, lease \`SECKILL_LOCK_TTL=1s\`, development delay
  \`SECKILL_DEV_CRITICAL_DELAY=2500ms\` inside the critical section (after the lock, before the
  order transaction), a user's purchases at 0, 0.6, 1.2 and 1.8 s: every duplicate arrives while
  the first purchase is still inside, so a lock that holds refuses all of them.

Columns: *requests* purchases sent; *200* orders announced; *SOLD_OUT* / *DUPLICATE* the 409
codes; the DUPLICATE_ORDER answers split by where they were stopped, from the instances'
\`/metrics\`: *lock refused* (\`seckill_lock_not_obtained_total\`), *past lock* (the duplicate
obtained the lock and the order transaction's "already bought" check stopped it), *unique key*
(\`seckill_unique_key_rejections_total\`: only the database's UNIQUE (user_id, voucher_id)
stopped it); *oversold* and *consistent* from the audit of the database itself (mariadb client:
orders <= initial stock, orders = initial - stock, no user with two orders, the order ids of the
200s = the orders in the database); *req/s* and the latency percentiles as k6 measured them
(slow-business latencies include the 2.5 s delay). *Verdict*: a lock "breaks" when a duplicate
got past it: unique-key rejections > 0, or in the slow setting any past-lock duplicate.

| mode | inst | setting | requests | 200 | SOLD_OUT | DUPLICATE | lock refused | past lock | unique key | other codes | oversold | consistent | req/s | p50 / p95 / p99 ms | verdict |
|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|
EOF
	printf '%s\n' "${rows[@]}"
	cat <<'EOF'

## Reading it

- Nothing is ever oversold and every run stays consistent, whatever the lock: the stock UPDATE
  is conditional (`stock > 0`, RowsAffected checked) and the order transaction checks "already
  bought" before the UNIQUE (user_id, voucher_id) key. The lock's job is to keep a user's
  duplicates away from the database; the matrix measures how many it let through.
- `none` lets every duplicate through; with the 4 purchases of a user at the same instant, their
  transactions overlap, and the unique key is what stops them.
- `local` holds inside one process and breaks across two: each instance has its own mutex.
- `simple`, `owner`, `lua` hold as long as the work fits in the lease. With the work longer than
  the lease (slow business) the key expires while the first purchase is still inside, and the
  next duplicate gets the lock: one breach per user. Because every holder waits the same
  2.5 s before its transaction, the two transactions of a user run 1.2 s apart, never together,
  so the transaction's own "already bought" check stops the second (*past lock*), not the unique
  key. Under real slowness of varying length the two could overlap, and then only the unique key
  would be left.
- `reentrant`, `redsync`, `multi` renew the lease with a watchdog (every TTL/3) while the holder
  works; `mysql` (GET_LOCK, held by the session) and `zookeeper` (ephemeral sequential node, held
  by the session) have no lease to run out. All five refuse every duplicate in the slow setting.
EOF
	if ((${#problems[@]} > 0)); then
		printf '\n## Problems in this run\n\n'
		printf -- '- %s\n' "${problems[@]}"
	fi
} >"$RESULTS"

log "wrote $RESULTS ($elapsed s); runs under $outdir"
cat "$RESULTS"
if ((${#problems[@]} > 0)); then
	log "FAIL: ${#problems[@]} problem(s):"
	printf '  %s\n' "${problems[@]}" >&2
	exit 1
fi
