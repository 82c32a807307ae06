# tools/bench/lib.sh: helpers shared by the shell benches (room.sh,
# peer.sh). Source it; it defines functions and nothing runs.
#
#   bench_redis_start PORT DIR  a private Redis on PORT (no persistence),
#                               refused when something answers there; sets
#                               BENCH_RPID; bench_redis_stop stops it
#   bench_ticks PID             utime + stime of PID in clock ticks
#   bench_cpu_us T0 T1 N        (T1 - T0) ticks in µs per N
#   bench_seckill_start BIN PORT LOG [VAR=value ...]
#                               `BIN serve` on 127.0.0.1:PORT with the extra
#                               environment, waits for /readyz; sets BENCH_SPID
#   bench_tokens BIN DIR USERS  DIR/users.csv (USERS users) and DIR/admin.csv
#                               by `seckill tokens`, once (reused while there)
#   bench_post BASE TOKEN PATH JSON  POST with the token, the body on stdout
#   bench_id                    the envelope's "data" id from stdin
#   bench_voucher BASE TOKEN SHOP STOCK BEGIN_OFFSET_S ROOM  a seckill
#                               voucher, its id on stdout
#   bench_wrk OUTFILE TOKENS METHOD URL ONCE [VAR=value ...]
#                               wrk -t2 -c32 -d${BENCH_DURATION}s with
#                               rotate.lua, the extra environment for it
#   bench_fig FILE KEY          a "BENCH KEY value" figure of a wrk output
#
# Needs BENCH_ROOT (the repository) and BENCH_DURATION (seconds) set by the
# caller.

bench_redis_start() {
  local port=$1 dir=$2
  # Never one that already runs: it may be another engineer's.
  if redis-cli -p "$port" PING >/dev/null 2>&1; then
    echo "bench: something already answers on port $port: pick another port" >&2
    return 2
  fi
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize yes \
    --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
  local i
  for i in $(seq 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
  BENCH_REDIS_PORT=$port
  redis-cli -p "$port" INFO server | grep -q "^tcp_port:$port" || { echo "bench: the private Redis did not start" >&2; return 2; }
  BENCH_RPID=$(redis-cli -p "$port" INFO server | awk -F: '/^process_id/{print $2+0}')
}

bench_redis_stop() {
  [ -n "${BENCH_REDIS_PORT:-}" ] && redis-cli -p "$BENCH_REDIS_PORT" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  BENCH_REDIS_PORT=
}

bench_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

bench_cpu_us() {
  [ "${3:-0}" -gt 0 ] 2>/dev/null || { echo 0; return; }
  echo "($2 - $1) * 1000000 / $(getconf CLK_TCK) / $3" | bc -l
}

bench_seckill_start() {
  local bin=$1 port=$2 log=$3 i
  shift 3
  env SECKILL_HTTP_ADDR=127.0.0.1:$port "$@" "$bin" serve >"$log" 2>&1 &
  BENCH_SPID=$!
  for i in $(seq 150); do curl -fs -m 2 "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && return 0; sleep 0.2; done
  echo "bench: the server did not become ready (see $log)" >&2
  return 2
}

bench_tokens() {
  local bin=$1 dir=$2 users=$3
  mkdir -p "$dir"
  if [ ! -s "$dir/users.csv" ] || [ "$(wc -l <"$dir/users.csv")" -lt "$users" ]; then
    "$bin" tokens --count $((users + 5000)) --out "$dir/all.csv"
    tail -n +5001 "$dir/all.csv" >"$dir/users.csv"
    "$bin" tokens --count 1 --admin --out "$dir/admin.csv"
  fi
}

bench_post() { curl -fs -m 30 -X POST -H "authorization: $2" -H 'content-type: application/json' -d "$4" "$1$3"; }

bench_id() { sed -n 's/.*"data":"\{0,1\}\([0-9]*\).*/\1/p'; }

bench_voucher() {
  local base=$1 tok=$2 shop=$3 stock=$4 off=$5 room=$6 b e
  b=$(date -u -d "@$(($(date +%s) + off))" +%Y-%m-%dT%H:%M:%SZ)
  e=$(date -u -d "@$(($(date +%s) + 7200))" +%Y-%m-%dT%H:%M:%SZ)
  bench_post "$base" "$tok" /voucher/seckill "{\"shopId\":$shop,\"title\":\"bench\",\"subTitle\":\"\",\"rules\":\"\",\"payValue\":100,\"actualValue\":100,\"type\":1,\"stock\":$stock,\"beginTime\":\"$b\",\"endTime\":\"$e\",\"waitingRoom\":$room}" | bench_id
}

bench_wrk() {
  local out=$1 tokens=$2 method=$3 url=$4 once=$5
  shift 5
  env BENCH_TOKENS="$tokens" BENCH_THREADS=2 BENCH_ONCE="$once" BENCH_METHOD="$method" "$@" \
    wrk -t2 -c32 -d"${BENCH_DURATION}s" --latency -s "$BENCH_ROOT/tools/bench/rotate.lua" "$url" >"$out"
}

bench_fig() { awk -v k="$2" '$1=="BENCH" && $2==k {print $3}' "$1"; }
