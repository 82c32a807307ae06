#!/usr/bin/env bash
# loadtest/jmeter/run-jmeter.sh OUT BASE_URLS STOCK DUPS THREADS SCENARIO
#
# Runs seckill.jmx with Debian's JMeter 2.13 through SeckillJMeter.java (see
# its comment: as shipped, 2.13 on Java 17 loads no plan and still exits 0),
# then reads the results file, never JMeter's exit code. Called by
# loadtest/run.sh, which has made OUT/tokens.csv and OUT/admin.csv and started
# the instances behind BASE_URLS. Leaves what run.sh reads:
#   OUT/voucher       the published voucher id
#   OUT/ok-orders     the order id of every 200
#   OUT/summary.env   purchases, rps, p50_ms, p95_ms, p99_ms, code_<CODE>
# Exits non-zero when the plan did not run, a response was neither 200 nor
# 409, or the audit sample failed.
set -euo pipefail

out="$1" base_urls="$2" stock="$3" dups="$4" threads="$5" scenario="${6:-burst}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jhome="${JMETER_HOME:-/usr/share/jmeter}"
log() { printf '[jmeter] %s\n' "$*" >&2; }

[[ -f "$jhome/bin/ApacheJMeter.jar" ]] || {
	log "no JMeter at $jhome (apt-get install jmeter)"
	exit 2
}

# The launcher, compiled once per source change.
classes="$out/../.jmeter-launcher"
mkdir -p "$classes"
if [[ ! -f "$classes/SeckillJMeter.class" || "$here/SeckillJMeter.java" -nt "$classes/SeckillJMeter.class" ]]; then
	javac -nowarn -cp "$jhome/bin/ApacheJMeter.jar" -d "$classes" "$here/SeckillJMeter.java"
fi

# One CSV line per purchase: userId,token,port. burst: each user's DUPS
# purchases on consecutive lines, round-robin over the instances, so that the
# threads send them at about the same time; random: the same lines shuffled.
IFS=, read -r -a urls <<<"$base_urls"
ports=()
for u in "${urls[@]}"; do
	ports+=("${u##*:}")
done
awk -F, -v dups="$dups" -v ports="${ports[*]}" '
	BEGIN { n = split(ports, p, " ") }
	NF >= 2 { for (i = 0; i < dups; i++) print $1 "," $2 "," p[(i % n) + 1] }' \
	"$out/tokens.csv" >"$out/requests.csv"
if [[ "$scenario" == random ]]; then
	shuf -o "$out/requests.csv" "$out/requests.csv"
fi

admin_token="$(head -1 "$out/admin.csv" | cut -d, -f2)"
jtl="$out/results.jtl"
rm -f "$jtl"
java -Xms256m -Xmx1g -Djmeter.home="$jhome" \
	-cp "$classes:$jhome/bin/ApacheJMeter.jar" SeckillJMeter \
	-n -t "$here/seckill.jmx" -l "$jtl" -j "$out/jmeter-run.log" \
	-Jhost=127.0.0.1 -Jport="${ports[0]}" \
	-Jrequests="$out/requests.csv" -Jadmin_token="$admin_token" \
	-Jstock="$stock" -Jthreads="$threads" -Jrampup=1 \
	-Jsample_variables=voucherId,orderId,code \
	-Jjmeter.save.saveservice.output_format=csv \
	-Jjmeter.save.saveservice.print_field_names=true \
	-Jjmeter.save.saveservice.response_message=false \
	-Jjmeter.save.saveservice.thread_name=false \
	-Jjmeter.save.saveservice.data_type=false \
	-Jjmeter.save.saveservice.bytes=false \
	-Jjmeter.save.saveservice.sent_bytes=false \
	-Jjmeter.save.saveservice.thread_counts=false \
	-Jjmeter.save.saveservice.latency=false \
	-Jjmeter.save.saveservice.connect_time=false \
	-Jjmeter.save.saveservice.idle_time=false \
	-Jjmeter.save.saveservice.url=false \
	-Jjmeter.save.saveservice.assertion_results_failure_message=false \
	>"$out/jmeter.log" 2>&1 || true

if [[ ! -s "$jtl" ]] || grep -q 'ERROR.*NonGUIDriver' "$out/jmeter-run.log" 2>/dev/null; then
	log "JMeter ran no sample (see $out/jmeter.log and $out/jmeter-run.log)"
	grep -m3 ERROR "$out/jmeter-run.log" >&2 || true
	exit 2
fi

# Read the results by column name.
awk -F, -v out="$out" '
	NR == 1 {
		for (i = 1; i <= NF; i++) { gsub(/"/, "", $i); col[$i] = i }
		next
	}
	{
		label = $col["label"]; rc = $col["responseCode"]
		if (label == "publish voucher" && rc == "200") print $col["voucherId"] > (out "/voucher")
		if (label == "audit") audit = $col["success"]
		if (label != "buy") next
		n++
		print $col["elapsed"] + 0 > (out "/elapsed")
		t0 = (n == 1 || $col["timeStamp"] < t0) ? $col["timeStamp"] : t0
		end = $col["timeStamp"] + $col["elapsed"]; if (end > t1) t1 = end
		code = $col["code"]; id = $col["orderId"]
		if (rc == "200" && id ~ /^[0-9]+$/) { codes["OK"]++; print id > (out "/ok-orders"); next }
		if (rc !~ /^[0-9]+$/) { codes["TRANSPORT"]++; next }
		if (code ~ /^[A-Z_]+$/) codes[code]++; else codes["OTHER"]++
	}
	END {
		s = out "/summary.env"
		secs = (t1 - t0) / 1000
		printf "purchases=%d\nseconds=%.3f\nrps=%.1f\n", n, secs, (secs > 0 ? n / secs : 0) > s
		split("OK SOLD_OUT DUPLICATE_ORDER SECKILL_NOT_STARTED SECKILL_ENDED VOUCHER_NOT_FOUND INVALID_ARGUMENT UNAUTHORIZED FORBIDDEN RATE_LIMITED UNAVAILABLE INTERNAL OTHER TRANSPORT", all, " ")
		for (k in all) known[all[k]] = 1
		for (c in codes) if (!(c in known)) codes["OTHER"] += codes[c]
		for (k = 1; k in all; k++) printf "code_%s=%d\n", all[k], codes[all[k]] + 0 > s
		printf "driver_violations=%d\n", (audit == "true" ? 0 : 1) > s
		print (audit == "true" ? "ok" : "failed") > (out "/audit-sample")
	}' "$jtl"
touch "$out/ok-orders" "$out/elapsed"
# Percentiles of the elapsed times (ms), nearest rank.
sort -n "$out/elapsed" | awk '
	{ v[NR] = $1 }
	END {
		split("50 95 99", ps, " ")
		for (k = 1; k <= 3; k++) {
			r = int(ps[k] / 100 * NR + 0.999999); if (r < 1) r = 1
			printf "p%d_ms=%.1f\n", ps[k], (NR > 0 ? v[r] : 0)
		}
	}' >>"$out/summary.env"

if [[ "$(cat "$out/audit-sample")" != ok ]]; then
	log "the audit sample failed (oversold or inconsistent): see $jtl"
	exit 1
fi
