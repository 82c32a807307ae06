#!/usr/bin/env bash
# tools/bench/peer.sh PEER_SRC [LABEL]: our async purchase beside the peer's
# (llmons/go-dianping: its Lua script + Redis stream + its consumer), and
# both beside our no-op endpoint, in one run on this machine (issue 46).
#
# PEER_SRC is a go-dianping source tree (git clone
# https://github.com/llmons/go-dianping; docs/bench-harness.md names the
# commit measured). Nothing of it enters this repository: the script builds
# it where it lies, writes its config in $OUT, gives it a database of its
# own (PEER_DB, on the MariaDB of .ci/env.sh, dropped and loaded from its
# deploy/docker-compose/hmdp.sql at each run, left after it). Ours runs on
# a database of its own as well (PEER_OURS_DB), and both servers on one
# private Redis (PEER_REDIS_PORT, started and stopped here, refused when
# something answers there).
#
# Runs, wrk -t2 -c32 -d${PEER_DURATION}s with tools/bench/rotate.lua, one
# after the other:
#   noop-1     GET /debug/noop of ours (the same auth middleware), the limit
#   peer-buy   the peer's POST /voucher-order/seckill/:id, a new user per
#              request (its login hashes written into its Redis), its log
#              at warn into a file, gin's request log line to /dev/null;
#              then its consumer drains, then it stops
#   ours-buy   our purchase, SECKILL_ORDER_MODE=async, SECKILL_LOCK_MODE=lua,
#              SECKILL_LOG_LEVEL=warn, a new user per request; then our
#              consumer drains
#   noop-2     the no-op again
# Per run: req/s, p50/p99, the answers (ours: 200 = admitted; the peer's
# "success" of its envelope), server and Redis CPU µs per answer (/proc
# utime + stime over the run); after each drain, the orders in the
# database = admitted, no user twice, stock consistent (no oversell). The
# ratios: ours ÷ peer req/s, peer ÷ ours server µs per answer.
#
# Appends one section to $PEER_MD (default tools/bench/PEER.md): machine,
# date, both commits, the command, uptime before and after, the figures.
# Exit status 1 when a correctness check failed (the section says which).
#
# Settings (environment):
#   PEER_SECKILL_BIN     our server binary (default: go build of this tree)
#   PEER_SECKILL_COMMIT  what to call that binary in the report
#   PEER_COMMIT          the peer's commit, when PEER_SRC is no git tree
#   PEER_DURATION [10]   seconds per wrk run
#   PEER_USERS [150000]  users of each side (a new one per request)
#   PEER_REDIS_PORT [6398]  PEER_PORT [18193] (ours)  PEER_PEER_PORT [18194]
#   PEER_DB [hmdp_peer]  the peer's database (dropped and created here)
#   PEER_OURS_DB [seckill_peer]  ours (created when missing, then kept)
#   PEER_DRAIN_TIMEOUT [600]  seconds to wait for a drain
#   PEER_OUT [/tmp/peerbench]  PEER_MD [tools/bench/PEER.md]
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: tools/bench/peer.sh <go-dianping source tree> [label]" >&2; exit 2; }
PEER_SRC=$(realpath "$1")
LABEL=${2:-peer}
CMDLINE="$(env | { grep "^PEER_" || true; } | sort | tr "\n" " ")tools/bench/peer.sh $*"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${PEER_OUT:-/tmp/peerbench}/$LABEL
TOK=${PEER_OUT:-/tmp/peerbench}/tokens
RPORT=${PEER_REDIS_PORT:-6398}
PORT=${PEER_PORT:-18193}
PPORT=${PEER_PEER_PORT:-18194}
DUR=${PEER_DURATION:-10}
USERS=${PEER_USERS:-150000}
PDB=${PEER_DB:-hmdp_peer}
DRAIN_TIMEOUT=${PEER_DRAIN_TIMEOUT:-600}
MD=${PEER_MD:-$ROOT/tools/bench/PEER.md}
STOCK=10000000
[ -f "$PEER_SRC/internal/scripts/seckill.lua" ] && [ -f "$PEER_SRC/deploy/docker-compose/hmdp.sql" ] ||
  { echo "peer.sh: $PEER_SRC is no go-dianping source tree" >&2; exit 2; }
case $PDB in seckill) echo "peer.sh: PEER_DB must not be seckill" >&2; exit 2 ;; esac
rm -rf "$OUT" && mkdir -p "$OUT" "$TOK"
source "$ROOT/.ci/env.sh"
source "$ROOT/tools/bench/lib.sh"
BENCH_ROOT=$ROOT
BENCH_DURATION=$DUR
export SECKILL_ENV=development
BASE=http://127.0.0.1:$PORT
PBASE=http://127.0.0.1:$PPORT
UPTIME_BEFORE=$(uptime)

# The MariaDB of SECKILL_MYSQL_DSN (user:pass@tcp(host:port)/db?...).
DSN=$SECKILL_MYSQL_DSN
MYUSER=${DSN%%:*}
MYPASS=$(echo "$DSN" | sed -n 's/^[^:]*:\([^@]*\)@.*/\1/p')
MYHOST=$(echo "$DSN" | sed -n 's/.*@tcp(\([^:)]*\).*/\1/p')
MYPORT=$(echo "$DSN" | sed -n 's/.*@tcp([^:]*:\([0-9]*\)).*/\1/p')
sql() { mysql -h"$MYHOST" -P"${MYPORT:-3306}" -u"$MYUSER" -p"$MYPASS" -N -B "$@"; }
# Ours gets a database of its own too (PEER_OURS_DB, kept between runs
# with the users of the cached tokens; the tokens are made anew when it
# is new), so that the shared one's vouchers are neither read nor touched.
OURDB=${PEER_OURS_DB:-seckill_peer}
case $OURDB in seckill | "$PDB") echo "peer.sh: PEER_OURS_DB must be a database of its own" >&2; exit 2 ;; esac
if [ -z "$(sql -e "SHOW DATABASES LIKE '$OURDB'")" ]; then
  sql -e "CREATE DATABASE \`$OURDB\` CHARACTER SET utf8mb4"
  rm -f "$TOK"/*.csv
fi
export SECKILL_MYSQL_DSN=$(echo "$DSN" | sed "s#)/[^?]*#)/$OURDB#")

# Builds.
if [ -n "${PEER_SECKILL_BIN:-}" ]; then
  BIN=$(realpath "$PEER_SECKILL_BIN")
  OURS_COMMIT=${PEER_SECKILL_COMMIT:-"binary $BIN"}
else
  BIN=$OUT/seckill
  (cd "$ROOT" && go build -o "$BIN" .)
  OURS_COMMIT=$(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- . ':!tools/bench' 2>/dev/null || echo "+changes")
fi
if git -C "$PEER_SRC" rev-parse HEAD >/dev/null 2>&1; then
  PEER_COMMIT=$(git -C "$PEER_SRC" rev-parse --short HEAD)
else
  PEER_COMMIT=${PEER_COMMIT:-"unknown (no git tree; set PEER_COMMIT)"}
fi
(cd "$PEER_SRC" && go build -o "$OUT/peer-server" ./cmd/server) ||
  { echo "peer.sh: the peer's tree does not build (its newest commits do not: use 17e3607, docs/bench-harness.md)" >&2; exit 2; }

SPID= PPID_=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null || true
  [ -n "$PPID_" ] && kill "$PPID_" 2>/dev/null && wait "$PPID_" 2>/dev/null || true
  bench_redis_stop
}
trap cleanup EXIT
trap "exit 130" INT TERM
rcli() { redis-cli -p "$RPORT" "$@"; }
bench_redis_start "$RPORT" "$OUT" || exit 2
RPID=$BENCH_RPID

# Our side: users and tokens (`seckill tokens`, cached in $TOK), the server,
# a shop and a voucher.
bench_tokens "$BIN" "$TOK" "$USERS"
ADMIN=$(cut -d, -f2 "$TOK/admin.csv" | head -1)
bench_seckill_start "$BIN" "$PORT" "$OUT/server.log" SECKILL_REDIS_ADDR=127.0.0.1:$RPORT \
  SECKILL_ORDER_MODE=async SECKILL_LOCK_MODE=lua SECKILL_LOG_LEVEL=warn
SPID=$BENCH_SPID
SHOP=$(bench_post "$BASE" "$ADMIN" /shop '{"name":"peer bench","typeId":1,"address":"loopback 1","x":120.15,"y":30.28}' | bench_id)
OV=$(bench_voucher "$BASE" "$ADMIN" "$SHOP" "$STOCK" -60 false)
[ -n "$OV" ] || { echo "peer.sh: our voucher was not created" >&2; exit 2; }

# The peer's side: its database from its schema, its config, its stream's
# consumer group (its consumer reads group g1 of stream.orders and does
# not create it), its login hashes, the server (run from its tree: it
# reads internal/scripts/seckill.lua from the working directory) and a
# seckill voucher made by its own API (the row and its Redis stock key).
sql -e "DROP DATABASE IF EXISTS \`$PDB\`; CREATE DATABASE \`$PDB\` CHARACTER SET utf8mb4"
sql "$PDB" <"$PEER_SRC/deploy/docker-compose/hmdp.sql"
cat >"$OUT/peer.yml" <<EOF
env: prod
http:
  host: 127.0.0.1
  port: $PPORT
data:
  db:
    hmdp:
      driver: mysql
      dsn: $MYUSER:$MYPASS@tcp($MYHOST:${MYPORT:-3306})/$PDB?charset=utf8mb4&parseTime=True&loc=Local
  redis:
    addr: 127.0.0.1:$RPORT
    password: ""
    db: 0
log:
  log_level: warn
  mode: file
  encoding: json
  log_file_name: "$OUT/peer-server.log"
  max_backups: 1
  max_age: 1
  max_size: 1024
  compress: false
EOF
rcli XGROUP CREATE stream.orders g1 0 MKSTREAM >/dev/null
SALT=$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
awk -v n="$USERS" -v salt="$SALT" 'BEGIN { for (i = 1; i <= n; i++) printf "%d,%s%08x\n", 1000000 + i, salt, i }' >"$OUT/peer-users.csv"
awk -F, '{ k = "login:token:" $2; nick = "user_" $1
  printf "*6\r\n$4\r\nHSET\r\n$%d\r\n%s\r\n$2\r\nid\r\n$%d\r\n%s\r\n$8\r\nnickName\r\n$%d\r\n%s\r\n", length(k), k, length($1), $1, length(nick), nick }' \
  "$OUT/peer-users.csv" | rcli --pipe >"$OUT/peer-users.pipe.txt"
(cd "$PEER_SRC" && exec "$OUT/peer-server" -conf "$OUT/peer.yml") >/dev/null 2>"$OUT/peer-server.stderr" &
PPID_=$!
for _ in $(seq 150); do curl -fs -m 2 "$PBASE/" >/dev/null 2>&1 && break; sleep 0.2; done
curl -fs -m 2 "$PBASE/" >/dev/null || { echo "peer.sh: the peer did not start (see $OUT/peer-server.stderr)" >&2; exit 2; }
B=$(date -u -d "@$(($(date +%s) - 60))" +%Y-%m-%dT%H:%M:%SZ)
E=$(date -u -d "@$(($(date +%s) + 7200))" +%Y-%m-%dT%H:%M:%SZ)
PV=$(curl -fs -m 30 -X POST -H 'content-type: application/json' "$PBASE/voucher/seckill" \
  -d "{\"shopId\":1,\"title\":\"bench\",\"subTitle\":\"\",\"rules\":\"\",\"payValue\":100,\"actualValue\":100,\"type\":1,\"stock\":$STOCK,\"beginTime\":\"$B\",\"endTime\":\"$E\"}" | bench_id)
[ -n "$PV" ] && [ "$(rcli GET "seckill:stock:$PV")" = "$STOCK" ] || { echo "peer.sh: the peer's voucher was not created" >&2; exit 2; }
ME=$(curl -fs -m 10 -H "authorization: Bearer $(head -1 "$OUT/peer-users.csv" | cut -d, -f2)" "$PBASE/user/me" || true)
echo "$ME" | grep -q '"id":1000001' || { echo "peer.sh: the peer does not know its bench users: $ME" >&2; exit 2; }
echo "vouchers: ours $OV, the peer's $PV" | tee "$OUT/vouchers.txt"

# run NAME PID TOKENS METHOD URL ONCE [VAR=value ...]: one wrk run; its
# server's and Redis's CPU ticks before and after in $OUT/NAME.cpu.
run() {
  local name=$1 pid=$2 tokens=$3 method=$4 url=$5 once=$6 s0 r0
  shift 6
  cut -d' ' -f1-3 /proc/loadavg >"$OUT/$name.load"
  s0=$(bench_ticks "$pid"); r0=$(bench_ticks "$RPID")
  date +%s.%N >"$OUT/$name.t0"
  bench_wrk "$OUT/wrk-$name.txt" "$tokens" "$method" "$url" "$once" "$@"
  echo "$s0 $(bench_ticks "$pid") $r0 $(bench_ticks "$RPID")" >"$OUT/$name.cpu"
  echo "$name: $(bench_fig "$OUT/wrk-$name.txt" rps) req/s"
}

# drain NAME PID DB VOUCHER WANT: waits until the orders of VOUCHER in DB
# reach WANT and then stay unchanged for 3 s (requests that wrk sent but
# stopped waiting for at the run's end may add a few), or stop growing for
# 30 s, or DRAIN_TIMEOUT; writes "orders distinct_users seconds
# server_ticks" (seconds and ticks from the run's start to the last order
# seen) to $OUT/NAME.drain.
drain() {
  local name=$1 pid=$2 db=$3 v=$4 want=$5 n last=-1 still=0 start t1 ticks
  start=$(date +%s)
  while :; do
    n=$(sql "$db" -e "SELECT COUNT(*) FROM tb_voucher_order WHERE voucher_id = $v")
    if [ "$n" = "$last" ]; then still=$((still + 1)); else still=0; last=$n; t1=$(date +%s.%N); ticks=$(bench_ticks "$pid"); fi
    [ "$n" -ge "$want" ] && [ $still -ge 3 ] && break
    [ $still -ge 30 ] || [ $(($(date +%s) - start)) -ge "$DRAIN_TIMEOUT" ] && break
    sleep 1
  done
  echo "$(sql "$db" -e "SELECT COUNT(*), COUNT(DISTINCT user_id) FROM tb_voucher_order WHERE voucher_id = $v" | tr '\t' ' ') \
$(echo "$t1 - $(cat "$OUT/$name.t0")" | bc -l) $ticks" >"$OUT/$name.drain"
}

run noop-1 "$SPID" "$TOK/users.csv" GET "$BASE/debug/noop" 0
run peer-buy "$PPID_" "$OUT/peer-users.csv" POST "$PBASE/voucher-order/seckill/$PV" 1 \
  "BENCH_TOKEN_PREFIX=Bearer " BENCH_ENVELOPE=success
P_ADMITTED=$(bench_fig "$OUT/wrk-peer-buy.txt" success_true)
sleep 1
P_SETSIZE=$(rcli SCARD "seckill:order:$PV") # its admissions, answered or not
drain peer-buy "$PPID_" "$PDB" "$PV" "$P_SETSIZE"
P_PENDING=$(rcli XPENDING stream.orders g1 | head -1)
P_LAG=$(rcli XINFO GROUPS stream.orders | awk 'p { print; exit } /^lag$/ { p = 1 }')
P_RSTOCK=$(rcli GET "seckill:stock:$PV")
P_DBSTOCK=$(sql "$PDB" -e "SELECT stock FROM tb_seckill_voucher WHERE voucher_id = $PV")
kill "$PPID_" && wait "$PPID_" 2>/dev/null || true
PEER_PID_RUN=$PPID_
PPID_=
run ours-buy "$SPID" "$TOK/users.csv" POST "$BASE/voucher-order/seckill/$OV" 1
O_ADMITTED=$(bench_fig "$OUT/wrk-ours-buy.txt" status_200)
drain ours-buy "$SPID" "$OURDB" "$OV" "${O_ADMITTED:-0}"
O_DBSTOCK=$(sql "$OURDB" -e "SELECT stock FROM tb_seckill_voucher WHERE voucher_id = $OV")
run noop-2 "$SPID" "$TOK/users.csv" GET "$BASE/debug/noop" 0
UPTIME_AFTER=$(uptime)

# The report.
fig() { bench_fig "$OUT/wrk-$1.txt" "$2"; }
ms() { echo "${1:-0} / 1000" | bc -l; }
cpu() { # NAME server|redis: µs per answer over the run
  local c
  read -r -a c <"$OUT/$1.cpu"
  if [ "$2" = server ]; then bench_cpu_us "${c[0]}" "${c[1]}" "$(fig "$1" received)"; else bench_cpu_us "${c[2]}" "${c[3]}" "$(fig "$1" received)"; fi
}
answers() { grep -h '^BENCH \(status_\|success_\|errmsg_\|code_\|wrapped\|err_\)' "$OUT/wrk-$1.txt" | awk '$3 != 0 { printf "%s%s %s", sep, $2, $3; sep = ", " }'; }
NOOP=$(echo "($(fig noop-1 rps) + $(fig noop-2 rps)) / 2" | bc -l)
row() {
  printf '| %s | %.0f | %.2f | %.2f | %.2f | %.1f | %.1f | %s | %s |\n' "$1" "$(fig "$1" rps)" \
    "$(echo "$(fig "$1" rps) / $NOOP" | bc -l)" "$(ms "$(fig "$1" p50_us)")" "$(ms "$(fig "$1" p99_us)")" \
    "$(cpu "$1" server)" "$(cpu "$1" redis)" "$(answers "$1")" "$(cat "$OUT/$1.load")"
}
read -r P_ORDERS P_USERS P_SECS P_TICKS <"$OUT/peer-buy.drain"
read -r O_ORDERS O_USERS O_SECS O_TICKS <"$OUT/ours-buy.drain"
P_RECV=$(fig peer-buy received) O_RECV=$(fig ours-buy received)
P_SENT=$(fig peer-buy sent) O_SENT=$(fig ours-buy sent)
read -r P_S0 _ <"$OUT/peer-buy.cpu"
read -r O_S0 _ <"$OUT/ours-buy.cpu"
P_TRUE=$(fig peer-buy success_true) P_FALSE=$(fig peer-buy success_false)
check() { if eval "$2"; then echo "- ok: $1"; else echo "- **FAILED**: $1"; fi; }
CHECKS=$({
  check "the peer: every answer carries its success ($P_RECV answers: ${P_TRUE:-0} true, ${P_FALSE:-0} false)" \
    "[ $(( ${P_TRUE:-0} + ${P_FALSE:-0} )) = '$P_RECV' ]"
  check "the peer: answered admissions ($P_ADMITTED) ≤ orders in $PDB after the drain ($P_ORDERS) ≤ requests sent ($P_SENT; the difference: requests cut at the run's end)" \
    "[ ${P_ADMITTED:-0} -le $P_ORDERS ] && [ $P_ORDERS -le $P_SENT ]"
  check "the peer: no user twice ($P_USERS distinct users)" "[ '$P_USERS' = '$P_ORDERS' ]"
  check "the peer: no oversell, no lost order: orders = its buyers' set in Redis ($P_SETSIZE) = $STOCK − Redis stock ($P_RSTOCK) = $STOCK − database stock ($P_DBSTOCK)" \
    "[ '$P_SETSIZE' = '$P_ORDERS' ] && [ '$P_RSTOCK' = $((STOCK - P_ORDERS)) ] && [ '$P_DBSTOCK' = $((STOCK - P_ORDERS)) ]"
  check "the peer: its stream drained (pending $P_PENDING, lag $P_LAG)" "[ '$P_PENDING' = 0 ] && [ '$P_LAG' = 0 ]"
  check "ours: every answer 200 ($O_RECV answers, $O_ADMITTED 200)" "[ '$O_ADMITTED' = '$O_RECV' ]"
  check "ours: answered admissions ($O_ADMITTED) ≤ orders in $OURDB after the drain ($O_ORDERS) ≤ requests sent ($O_SENT)" \
    "[ ${O_ADMITTED:-0} -le $O_ORDERS ] && [ $O_ORDERS -le $O_SENT ]"
  check "ours: no user twice ($O_USERS distinct users)" "[ '$O_USERS' = '$O_ORDERS' ]"
  check "ours: no oversell: database stock ($O_DBSTOCK) = $STOCK − orders" "[ '$O_DBSTOCK' = $((STOCK - O_ORDERS)) ]"
  check "no wrk run wrapped around its users" "! grep -q '^BENCH wrapped [1-9]' $OUT/wrk-*.txt"
} 2>&1)
RPS_RATIO=$(echo "$(fig ours-buy rps) / $(fig peer-buy rps)" | bc -l)
CPU_RATIO=$(echo "$(cpu peer-buy server) / $(cpu ours-buy server)" | bc -l)
MODEL=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
SECTION=$({
  echo "## $LABEL: $(date -u '+%Y-%m-%d %H:%M UTC')"
  echo
  echo "Machine: $(nproc) cores ($MODEL), $MEM, $(uname -sr); $(go version | cut -d' ' -f3), $(redis-server --version | cut -d' ' -f3 | tr -d 'v='), MariaDB $(sql -e 'SELECT VERSION()'), $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2)."
  echo "Ours: $OURS_COMMIT. The peer: llmons/go-dianping $PEER_COMMIT. Vouchers: ours $OV, the peer's $PV (stock $STOCK each)."
  echo
  echo '```'
  echo "$CMDLINE"
  echo "uptime before: $UPTIME_BEFORE"
  echo "uptime after:  $UPTIME_AFTER"
  echo '```'
  echo
  echo "wrk -t2 -c32 -d${DUR}s, tools/bench/rotate.lua; one private Redis (port $RPORT) for both; CPU = utime + stime from /proc over the run ÷ answers."
  echo
  echo "| run | req/s | ÷ no-op | p50 ms | p99 ms | server µs/req | Redis µs/req | answers | load before |"
  echo "|---|---:|---:|---:|---:|---:|---:|---|---|"
  row noop-1; row peer-buy; row ours-buy; row noop-2
  echo
  printf -- '- **ours ÷ the peer, req/s: %.2f×** (goal ≥ 3×)\n' "$RPS_RATIO"
  printf -- '- **the peer ÷ ours, server CPU per request: %.2f×** (%.1f vs %.1f µs; goal ≥ 4×)\n' "$CPU_RATIO" "$(cpu peer-buy server)" "$(cpu ours-buy server)"
  printf -- '- the drain, run start to the last order in the database: the peer %.1f s for %s orders (server %.0f µs per order over run and drain), ours %.1f s for %s orders (%.0f µs)\n' \
    "$P_SECS" "$P_ORDERS" "$(bench_cpu_us "$P_S0" "$P_TICKS" "$P_ORDERS")" "$O_SECS" "$O_ORDERS" "$(bench_cpu_us "$O_S0" "$O_TICKS" "$O_ORDERS")"
  echo
  echo "Correctness:"
  echo "$CHECKS"
  echo
})
echo "$SECTION" | tee "$OUT/summary.md"
echo "$SECTION" >>"$MD"
echo "appended to $MD; wrk outputs, logs and the peer's config in $OUT"
! grep -q FAILED "$OUT/summary.md"
