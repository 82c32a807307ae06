#!/usr/bin/env bash
# tools/bench/room.sh BIN LABEL: the waiting room's join in both phases and
# the async purchase, beside the no-op endpoint, in one run of one server
# (issue 46). It runs on a private Redis of its own (ROOM_REDIS_PORT, default
# 6399, started and stopped here; it refuses a port something answers on), so that its INFO commandstats and its CPU
# are this run's alone; MariaDB is the shared one of .ci/env.sh (new
# vouchers, the users of `seckill tokens`, as make bench).
#
# Runs, wrk -t2 -c32 -d${ROOM_DURATION:-10}s, tools/bench/rotate.lua, a
# no-op run before and after each other run (the machine is shared: each
# run is divided by the mean of the no-ops on either side of it):
#   noop-<i>    GET /debug/noop, the limit
#   join-pool   POST .../queue, a new user per request, the sale starts in an
#               hour: every join enters the pool
#   join-line   POST .../queue, a new user per request, the sale started with
#               ample stock: every join enters the line and is admitted
#   async-buy   POST the purchase (async mode, no room), a new user per
#               request; CPU profile over its middle and allocations during it
#
# Per run: req/s, ratio to the no-ops beside it, server and Redis CPU µs per
# request (/proc), Redis commandstats calls and µs per request, load average.
# Writes $OUT/summary.md and the profiles; nothing in the repository.
set -euo pipefail
BIN=$(realpath "$1")
LABEL=$2
ROOT=${ROOM_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
OUT=${ROOM_OUT:-/tmp/roombench}/$LABEL
RPORT=${ROOM_REDIS_PORT:-6399}
PORT=${ROOM_PORT:-18190}
DUR=${ROOM_DURATION:-10}
USERS=${ROOM_USERS:-300000}
TOK=${ROOM_OUT:-/tmp/roombench}/tokens
mkdir -p "$OUT" "$TOK"
source "$ROOT/.ci/env.sh"
source "$ROOT/tools/bench/lib.sh"
BENCH_ROOT=$ROOT
BENCH_DURATION=$DUR
export SECKILL_ENV=development
HZ=$(getconf CLK_TCK)
BASE=http://127.0.0.1:$PORT

rcli() { redis-cli -p "$RPORT" "$@"; }

SPID=
cleanup() {
  [ -n "$SPID" ] && kill "$SPID" 2>/dev/null && wait "$SPID" 2>/dev/null || true
  bench_redis_stop
}
trap cleanup EXIT

# The private Redis (lib.sh refuses a port something answers on).
bench_redis_start "$RPORT" "$OUT" || exit 2
RPID=$BENCH_RPID

# Tokens: once, reused by every run of the script (a user joins each run's
# own vouchers once).
bench_tokens "$BIN" "$TOK" "$USERS"
ADMIN=$(cut -d, -f2 "$TOK/admin.csv" | head -1)

bench_seckill_start "$BIN" "$PORT" "$OUT/server.log" SECKILL_REDIS_ADDR=127.0.0.1:$RPORT SECKILL_ORDER_MODE=async \
  SECKILL_LOCK_MODE=lua SECKILL_LOG_LEVEL=warn SECKILL_WAITING_ROOM_TOKEN_TTL=10m
SPID=$BENCH_SPID

SHOP=$(bench_post "$BASE" "$ADMIN" /shop '{"name":"room bench","typeId":1,"address":"loopback 1","x":120.15,"y":30.28}' | bench_id)
voucher() { bench_voucher "$BASE" "$ADMIN" "$SHOP" "$@"; } # stock begin-offset-seconds room
VPOOL=$(voucher 10000000 3600 true)
VLINE=$(voucher 10000000 -60 true)
VBUY=$(voucher 10000000 -60 false)
echo "vouchers: pool $VPOOL line $VLINE buy $VBUY" | tee "$OUT/vouchers.txt"

ticks() { bench_ticks "$1"; }
cmdstats() { rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_\([^:]*\):calls=\([0-9]*\),usec=\([0-9]*\),.*/\1 \2 \3/p'; }

SUMMARY=$OUT/summary.md
{
  echo "# room.sh $LABEL: $(date -u '+%Y-%m-%d %H:%M:%S UTC'), $(nproc) cores, binary $BIN"
  echo
  echo "| run | req/s | ÷ no-ops beside | p50 ms | p99 ms | non-2xx | server µs/req | Redis µs/req | Redis commands µs/req (calls/req) | load before |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---|---|"
} >"$SUMMARY"

run() { # name method path once
  local name=$1 load s0 r0 s1 r1 rps recv
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  cmdstats >"$OUT/$name.cmd0"
  s0=$(ticks "$SPID"); r0=$(ticks "$RPID")
  bench_wrk "$OUT/wrk-$name.txt" "$TOK/users.csv" "$2" "$BASE$3" "$4"
  s1=$(ticks "$SPID"); r1=$(ticks "$RPID")
  cmdstats >"$OUT/$name.cmd1"
  fig() { bench_fig "$OUT/wrk-$name.txt" "$1"; }
  rps=$(fig rps); recv=$(fig received)
  echo "$name $rps" >>"$OUT/rps.txt"
  local cmds
  cmds=$(awk -v n="$recv" 'NR==FNR {c[$1]=$2; u[$1]=$3; next}
      { dc=$2-c[$1]; du=$3-u[$1]; if (dc>0) { t+=du; s=s sprintf("%s %.2f (%.2f), ", $1, du/n, dc/n) } }
      END { printf "total %.1f: %s", t/n, s }' "$OUT/$name.cmd0" "$OUT/$name.cmd1" | tr '|' '/')
  printf '| %s | %.0f | RATIO_%s | %.2f | %.2f | %s | %.1f | %.1f | %s | %s |\n' "$name" "$rps" \
    "$name" "$(echo "$(fig p50_us) / 1000" | bc -l)" "$(echo "$(fig p99_us) / 1000" | bc -l)" \
    "$(fig non2xx3xx)" "$(echo "($s1 - $s0) * 1000000 / $HZ / $recv" | bc -l)" \
    "$(echo "($r1 - $r0) * 1000000 / $HZ / $recv" | bc -l)" "$cmds" "$load" | tee -a "$SUMMARY"
}

if [ -n "${ROOM_SLOWLOG:-}" ]; then
  # Each script's own time: SLOWLOG of every call over a short join run of
  # each phase (the log costs time itself: not a figure of the table).
  for v in "pool $VPOOL" "line $VLINE"; do
    set -- $v
    rcli CONFIG SET slowlog-max-len 100000 >/dev/null; rcli SLOWLOG RESET >/dev/null
    rcli CONFIG SET slowlog-log-slower-than 0 >/dev/null
    BENCH_TOKENS=$TOK/users.csv BENCH_THREADS=2 BENCH_ONCE=1 BENCH_METHOD=POST \
      wrk -t2 -c32 -d3s -s "$ROOT/tools/bench/rotate.lua" "$BASE/voucher-order/seckill/$2/queue" >/dev/null
    rcli CONFIG SET slowlog-log-slower-than 10000 >/dev/null
    echo "SLOWLOG, join-$1 (3 s): calls, mean µs, p50, p99 per command (EVALSHA by script)"
    rcli --json SLOWLOG GET 100000 | python3 -c '
import json, sys, collections
by = collections.defaultdict(list)
for e in json.load(sys.stdin):
    args = e[3]
    k = args[0].lower() + (" " + args[1][:8] if args[0].lower() == "evalsha" else "")
    by[k].append(e[2])
for k, d in sorted(by.items(), key=lambda kv: -sum(kv[1])):
    d.sort()
    print("  %-18s %6d calls, mean %5.1f us, p50 %3d, p99 %4d" % (k, len(d), sum(d) / len(d), d[len(d) // 2], d[len(d) * 99 // 100]))
'
    rcli SLOWLOG RESET >/dev/null
  done | tee "$OUT/slowlog.txt"
  exit 0
fi

rm -f "$OUT/rps.txt"
run noop-1 GET /debug/noop 0
# profiled NAME METHOD PATH ONCE: run with a CPU profile over its middle and
# the allocations during it (the profiler's cost is in its figures).
profiled() {
  local prof
  curl -fs -o "$OUT/$1.allocs-before.pprof" "$BASE/debug/pprof/allocs"
  (sleep 1; curl -fs -o "$OUT/$1.cpu.pprof" "$BASE/debug/pprof/profile?seconds=$((DUR - 2))") &
  prof=$!
  run "$@"
  wait $prof || true
  curl -fs -o "$OUT/$1.allocs.pprof" "$BASE/debug/pprof/allocs"
}
profiled join-pool POST "/voucher-order/seckill/$VPOOL/queue" 1
run noop-2 GET /debug/noop 0
profiled join-line POST "/voucher-order/seckill/$VLINE/queue" 1
run noop-3 GET /debug/noop 0
m0=$(curl -fs "$BASE/metrics" | awk '/^seckill_admission_pipeline_size_(sum|count)/ {printf "%s ", $2}')
profiled async-buy POST "/voucher-order/seckill/$VBUY" 1
m1=$(curl -fs "$BASE/metrics" | awk '/^seckill_admission_pipeline_size_(sum|count)/ {printf "%s ", $2}')
echo "async-buy: admissions per round trip to Redis (seckill_admission_pipeline_size sum ÷ count over the run): $(echo "$m0 $m1" | awk '{ if ($4-$2 > 0) printf "%.2f (%d round trips)", ($3-$1)/($4-$2), $4-$2 }')" >"$OUT/pipeline.txt"
run noop-4 GET /debug/noop 0
# Each run's ratio to the mean of the no-ops before and after it.
awk 'NR==FNR { name[NR]=$1; rps[NR]=$2; n=NR; next }
  FNR==1 { for (i=1;i<=n;i++) { r="-"; if (name[i] !~ /^noop/) r=sprintf("%.2f", rps[i]*2/(rps[i-1]+rps[i+1])); else r="1 (no-op)"; ratio["RATIO_" name[i]]=r } }
  { for (k in ratio) gsub(k " ", ratio[k] " "); print }' "$OUT/rps.txt" "$SUMMARY" >"$SUMMARY.tmp" && mv "$SUMMARY.tmp" "$SUMMARY"
{
  echo
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); vouchers $(cat "$OUT/vouchers.txt"); wrk outputs and profiles in $OUT"
  cat "$OUT/pipeline.txt"
} >>"$SUMMARY"
grep -h "BENCH status_\|BENCH code_" "$OUT"/wrk-*.txt | sort | uniq -c | head -20 >>"$SUMMARY" || true
