#!/usr/bin/env bash
# .ci/services.sh — install (when missing) and start (when not answering) the
# local services the seckill tests need, without systemd:
#
#   MariaDB    127.0.0.1:3306  database `seckill`, user seckill/seckill (all privileges)
#   Redis      127.0.0.1:6379
#   Redis x3   127.0.0.1:6380, 6381, 6382 (independent Redlock nodes, no persistence)
#   Sentinel   a Sentinel-managed Redis, master name `seckill` (no persistence):
#              data nodes 127.0.0.1:6390 (first primary) and 6391 (first
#              replica, --replicaof 127.0.0.1 6390); after a failover either
#              may be the primary, the other its replica.
#              Sentinels 127.0.0.1:26390, 26391, 26392 (quorum 2,
#              down-after-milliseconds 1000, failover-timeout 5000), each
#              with its own config file under $SECKILL_CI_STATE/sentinel-PORT/
#              (Sentinel rewrites it)
#   Cluster    a Redis Cluster: masters 127.0.0.1:7001, 7002, 7003 (slots in
#              three ranges), replicas 7004, 7005, 7006 (one per master),
#              cluster-node-timeout 2000, no persistence; state under
#              $SECKILL_CI_STATE/cluster-PORT/
#   ZooKeeper  127.0.0.1:2181 (standalone, 4lw srvr/ruok/stat/mntr)
#   Chromium   installed only (Debian's chromium, with fonts-wqy-microhei for
#              Chinese text in screenshots); the browser tests start it
#
# Idempotent: a second run finds everything answering and only re-applies the
# (cheap) MariaDB grants (and waits until the Sentinels agree on the master). Runs as root. Safe to execute (`bash .ci/services.sh`)
# or to source: everything runs in a subshell so the caller's shell options and
# variables are untouched; a failure makes it return/exit non-zero.
#
# State (data + logs) lives under $SECKILL_CI_STATE (default /var/lib/seckill-ci);
# MariaDB uses the package's own datadir /var/lib/mysql.

seckill_services_main() (
	set -euo pipefail

	local state="${SECKILL_CI_STATE:-/var/lib/seckill-ci}"
	local logdir="$state/log"

	log() { printf '[services] %s\n' "$*"; }
	die() {
		printf '[services] ERROR: %s\n' "$*" >&2
		exit 1
	}

	# tcp_open PORT: true when something accepts TCP connections on 127.0.0.1:PORT.
	tcp_open() {
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
	}

	# ---------------------------------------------------------------- packages
	# chromium (and a CJK font for its screenshots) only installs: the
	# browser tests (testkit/browsertest) start it themselves.
	local wanted=(mariadb-server mariadb-client redis-server redis-tools redis-sentinel zookeeperd docker-compose wrk chromium fonts-wqy-microhei)
	local missing=() pkg
	for pkg in "${wanted[@]}"; do
		if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed'; then
			missing+=("$pkg")
		fi
	done
	if ((${#missing[@]} > 0)); then
		log "installing missing packages: ${missing[*]}"
		export DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=a
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
	else
		log "packages present: ${wanted[*]}"
	fi

	mkdir -p "$logdir"

	# ---------------------------------------------------------------- MariaDB
	mariadb_answers() {
		mariadb-admin --protocol=tcp -h127.0.0.1 -P3306 -useckill -pseckill \
			--connect-timeout=2 ping >/dev/null 2>&1
	}
	mariadb_socket_answers() {
		mariadb-admin --protocol=socket -uroot --connect-timeout=2 ping >/dev/null 2>&1
	}

	if mariadb_answers; then
		log "MariaDB already answering on 127.0.0.1:3306"
	else
		if ! tcp_open 3306 && ! mariadb_socket_answers; then
			local datadir=/var/lib/mysql
			mkdir -p "$datadir" /run/mysqld
			chown mysql:mysql "$datadir" /run/mysqld
			if [[ ! -d "$datadir/mysql" ]]; then
				log "initialising MariaDB datadir $datadir"
				mariadb-install-db --user=mysql --datadir="$datadir" \
					--auth-root-authentication-method=socket >"$logdir/mariadb-install.log" 2>&1 ||
					die "mariadb-install-db failed, see $logdir/mariadb-install.log"
			fi
			log "starting MariaDB (log: $logdir/mariadb.log)"
			setsid nohup mariadbd --user=mysql --datadir="$datadir" \
				--bind-address=127.0.0.1 --port=3306 \
				--socket=/run/mysqld/mysqld.sock --pid-file=/run/mysqld/mysqld.pid \
				--max-connections=1000 --skip-name-resolve \
				--log-error="$logdir/mariadb.log" \
				</dev/null >>"$logdir/mariadb.out" 2>&1 &
		fi
		local i
		for ((i = 0; i < 120; i++)); do
			mariadb_socket_answers && break
			sleep 0.5
		done
		mariadb_socket_answers || die "MariaDB did not come up; see $logdir/mariadb.log"
	fi

	# Grants are re-applied every run (cheap, idempotent). Root logs in through
	# the unix socket; when that is impossible but the seckill user works, skip.
	if mariadb_socket_answers; then
		mariadb --protocol=socket -uroot <<-'SQL'
			CREATE DATABASE IF NOT EXISTS seckill CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci;
			CREATE USER IF NOT EXISTS 'seckill'@'%' IDENTIFIED BY 'seckill';
			CREATE USER IF NOT EXISTS 'seckill'@'localhost' IDENTIFIED BY 'seckill';
			CREATE USER IF NOT EXISTS 'seckill'@'127.0.0.1' IDENTIFIED BY 'seckill';
			ALTER USER 'seckill'@'%' IDENTIFIED BY 'seckill';
			ALTER USER 'seckill'@'localhost' IDENTIFIED BY 'seckill';
			ALTER USER 'seckill'@'127.0.0.1' IDENTIFIED BY 'seckill';
			GRANT ALL PRIVILEGES ON *.* TO 'seckill'@'%' WITH GRANT OPTION;
			GRANT ALL PRIVILEGES ON *.* TO 'seckill'@'localhost' WITH GRANT OPTION;
			GRANT ALL PRIVILEGES ON *.* TO 'seckill'@'127.0.0.1' WITH GRANT OPTION;
			SET GLOBAL max_connections = GREATEST(@@GLOBAL.max_connections, 1000);
			FLUSH PRIVILEGES;
		SQL
	fi
	mariadb_answers || die "MariaDB does not accept seckill:seckill@127.0.0.1:3306"
	log "MariaDB ready: $(mariadb --protocol=tcp -h127.0.0.1 -P3306 -useckill -pseckill -N -e \
		'SELECT CONCAT(VERSION(), ", max_connections=", @@max_connections)')"

	# ---------------------------------------------------------------- Redis
	redis_answers() {
		[[ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" == PONG ]]
	}
	local port
	for port in 6379 6380 6381 6382; do
		if redis_answers "$port"; then
			log "Redis already answering on 127.0.0.1:$port"
			continue
		fi
		tcp_open "$port" && die "port $port is taken by something that is not Redis"
		local rdir="$state/redis-$port"
		mkdir -p "$rdir"
		log "starting Redis on 127.0.0.1:$port (log: $logdir/redis-$port.log)"
		setsid redis-server --bind 127.0.0.1 --port "$port" --protected-mode no \
			--dir "$rdir" --save '' --appendonly no \
			--daemonize yes --pidfile "$rdir/redis.pid" \
			--logfile "$logdir/redis-$port.log" </dev/null >/dev/null 2>&1
		local i
		for ((i = 0; i < 60; i++)); do
			redis_answers "$port" && break
			sleep 0.25
		done
		redis_answers "$port" || die "Redis on $port did not come up; see $logdir/redis-$port.log"
	done

	# ---------------------------------------------------------------- Sentinel
	# A primary and a replica managed by three Sentinels (master name
	# `seckill`). Which data node is the primary is whatever the Sentinels
	# say (a failover test may have swapped them); a data node that is down
	# is started as a replica of the current primary, or, when there is none,
	# 6390 as the primary and 6391 as its replica.
	local sentinel_master=seckill sentinel_ports=(26390 26391 26392) data_ports=(6390 6391)
	# role PORT: the replication role of the Redis on PORT (empty when down).
	role() {
		{ redis-cli -h 127.0.0.1 -p "$1" info replication 2>/dev/null || true; } | tr -d '\r' | sed -n 's/^role://p'
	}
	# sentinel_master_port PORT: the primary's port per the Sentinel on PORT
	# (empty when it does not answer or knows no primary).
	sentinel_master_port() {
		{ redis-cli -h 127.0.0.1 -p "$1" sentinel get-master-addr-by-name "$sentinel_master" 2>/dev/null || true; } | sed -n 2p
	}
	local primary="" p
	for p in "${sentinel_ports[@]}"; do
		local mp
		mp=$(sentinel_master_port "$p")
		if [[ -n "$mp" && "$(role "$mp")" == master ]]; then
			primary=$mp
			break
		fi
	done
	if [[ -z "$primary" ]]; then
		for p in "${data_ports[@]}"; do
			if [[ "$(role "$p")" == master ]]; then
				primary=$p
				break
			fi
		done
	fi
	primary=${primary:-6390}
	for p in "$primary" "${data_ports[@]}"; do
		if redis_answers "$p"; then
			continue
		fi
		tcp_open "$p" && die "port $p is taken by something that is not Redis"
		local rdir="$state/redis-$p" replicaof=()
		[[ "$p" != "$primary" ]] && replicaof=(--replicaof 127.0.0.1 "$primary")
		mkdir -p "$rdir"
		log "starting Redis on 127.0.0.1:$p ${replicaof[*]:-(primary)} (log: $logdir/redis-$p.log)"
		setsid redis-server --bind 127.0.0.1 --port "$p" --protected-mode no \
			--dir "$rdir" --save '' --appendonly no "${replicaof[@]}" \
			--daemonize yes --pidfile "$rdir/redis.pid" \
			--logfile "$logdir/redis-$p.log" </dev/null >/dev/null 2>&1
		local i
		for ((i = 0; i < 60; i++)); do
			redis_answers "$p" && break
			sleep 0.25
		done
		redis_answers "$p" || die "Redis on $p did not come up; see $logdir/redis-$p.log"
	done
	for p in "${sentinel_ports[@]}"; do
		if redis_answers "$p"; then
			log "Sentinel already answering on 127.0.0.1:$p"
			continue
		fi
		tcp_open "$p" && die "port $p is taken by something that is not Redis Sentinel"
		local sdir="$state/sentinel-$p"
		mkdir -p "$sdir"
		# A fresh file each start: a rewritten one may name a primary that
		# no longer is; the others Sentinels' hello messages bring it up to
		# date within seconds.
		cat >"$sdir/sentinel.conf" <<-EOF
			port $p
			bind 127.0.0.1
			protected-mode no
			daemonize yes
			pidfile $sdir/sentinel.pid
			logfile $logdir/sentinel-$p.log
			dir $sdir
			sentinel monitor $sentinel_master 127.0.0.1 $primary 2
			sentinel down-after-milliseconds $sentinel_master 1000
			sentinel failover-timeout $sentinel_master 5000
			sentinel parallel-syncs $sentinel_master 1
		EOF
		log "starting Sentinel on 127.0.0.1:$p monitoring $sentinel_master at 127.0.0.1:$primary (log: $logdir/sentinel-$p.log)"
		setsid redis-sentinel "$sdir/sentinel.conf" </dev/null >/dev/null 2>&1
	done
	# sentinels_agree: every Sentinel answers, names the same answering
	# primary, sees the two other Sentinels and a replica in sync with it.
	sentinels_agree() {
		local p mp="" m
		for p in "${sentinel_ports[@]}"; do
			m=$(sentinel_master_port "$p")
			[[ -n "$m" ]] || return 1
			[[ -z "$mp" || "$m" == "$mp" ]] || return 1
			mp=$m
			local info
			info=$(redis-cli -h 127.0.0.1 -p "$p" sentinel master "$sentinel_master" 2>/dev/null | paste - -)
			grep -qx $'flags\tmaster' <<<"$info" || return 1
			grep -qx $'num-other-sentinels\t2' <<<"$info" || return 1
			redis-cli -h 127.0.0.1 -p "$p" sentinel replicas "$sentinel_master" 2>/dev/null | paste - - |
				grep -qx $'flags\tslave' || return 1
		done
		[[ "$(role "$mp")" == master ]] || return 1
		redis-cli -h 127.0.0.1 -p "$mp" info replication 2>/dev/null | tr -d '\r' | grep -q '^slave0:.*state=online'
	}
	local i
	for ((i = 0; i < 120; i++)); do
		sentinels_agree && break
		sleep 0.25
	done
	sentinels_agree || die "the Sentinels do not agree on a primary with a replica after 30s; see $logdir/sentinel-*.log"
	log "Sentinel ready: master $sentinel_master at 127.0.0.1:$(sentinel_master_port "${sentinel_ports[0]}"), Sentinels on ${sentinel_ports[*]}"

	# ---------------------------------------------------------------- Redis Cluster
	# Three masters (7001-7003) with a replica each (7004-7006), slots in
	# three ranges (redis-cli --cluster create). Nodes keep nodes.conf in
	# their state dir and rejoin after a restart; a cluster that does not
	# reach state ok is reset and created anew (the data is test data).
	local cluster_ports=(7001 7002 7003 7004 7005 7006)
	cluster_ok() {
		local p
		for p in "${cluster_ports[@]}"; do
			redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok' || return 1
		done
		[[ "$(redis-cli -h 127.0.0.1 -p 7001 cluster nodes 2>/dev/null | grep -c master)" == 3 ]]
	}
	for p in "${cluster_ports[@]}"; do
		if redis_answers "$p"; then
			continue
		fi
		tcp_open "$p" && die "port $p is taken by something that is not Redis"
		local cdir="$state/cluster-$p"
		mkdir -p "$cdir"
		log "starting Redis Cluster node on 127.0.0.1:$p (log: $logdir/cluster-$p.log)"
		setsid redis-server --bind 127.0.0.1 --port "$p" --protected-mode no \
			--cluster-enabled yes --cluster-config-file "$cdir/nodes.conf" --cluster-node-timeout 2000 \
			--dir "$cdir" --save '' --appendonly no \
			--daemonize yes --pidfile "$cdir/redis.pid" \
			--logfile "$logdir/cluster-$p.log" </dev/null >/dev/null 2>&1
		local i
		for ((i = 0; i < 60; i++)); do
			redis_answers "$p" && break
			sleep 0.25
		done
		redis_answers "$p" || die "Redis Cluster node on $p did not come up; see $logdir/cluster-$p.log"
	done
	for ((i = 0; i < 40; i++)); do
		cluster_ok && break
		sleep 0.25
	done
	if ! cluster_ok; then
		log "creating the Redis Cluster on ${cluster_ports[*]} (3 masters, 1 replica each)"
		for p in "${cluster_ports[@]}"; do
			redis-cli -h 127.0.0.1 -p "$p" flushall >/dev/null 2>&1 || true
			redis-cli -h 127.0.0.1 -p "$p" cluster reset hard >/dev/null
		done
		local nodes=()
		for p in "${cluster_ports[@]}"; do nodes+=("127.0.0.1:$p"); done
		redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes >"$logdir/cluster-create.log" 2>&1 ||
			die "redis-cli --cluster create failed; see $logdir/cluster-create.log"
		for ((i = 0; i < 120; i++)); do
			cluster_ok && break
			sleep 0.25
		done
		cluster_ok || die "the Redis Cluster did not reach state ok after 30s; see $logdir/cluster-*.log"
	fi
	log "Redis Cluster ready: masters and replicas on ${cluster_ports[*]}"

	# ---------------------------------------------------------------- ZooKeeper
	# zk_srvr prints the reply to the srvr four-letter word (empty when down).
	zk_srvr() {
		(
			exec 3<>/dev/tcp/127.0.0.1/2181 || exit 1
			printf 'srvr' >&3
			timeout 3 cat <&3
		) 2>/dev/null || true
	}
	# ruok answers imok before the server serves; srvr tells the real state.
	zk_answers() {
		zk_srvr | grep -q '^Mode: '
	}

	if zk_answers; then
		log "ZooKeeper already answering on 127.0.0.1:2181"
	else
		tcp_open 2181 && die "port 2181 is taken by something that does not answer srvr"
		local zdir="$state/zookeeper"
		mkdir -p "$zdir/data"
		cat >"$zdir/zoo.cfg" <<-EOF
			tickTime=2000
			initLimit=10
			syncLimit=5
			dataDir=$zdir/data
			clientPort=2181
			clientPortAddress=127.0.0.1
			maxClientCnxns=0
			4lw.commands.whitelist=srvr,ruok,stat,mntr,conf,cons
			# the embedded Jetty admin server would take port 8080 (the app's)
			admin.enableServer=false
			autopurge.purgeInterval=1
		EOF
		# zookeeper.jar's manifest Class-Path pulls in its dependencies (jute,
		# netty, slf4j-api, ...); slf4j-simple is the logging binding (stderr).
		local cp=/etc/zookeeper/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar
		log "starting ZooKeeper on 127.0.0.1:2181 (log: $logdir/zookeeper.log)"
		setsid nohup java -Xms64m -Xmx256m \
			-Dzookeeper.log.dir="$logdir" \
			-Dorg.slf4j.simpleLogger.defaultLogLevel=warn \
			-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$zdir/zoo.cfg" \
			</dev/null >>"$logdir/zookeeper.log" 2>&1 &
		echo $! >"$zdir/zookeeper.pid"
		local i
		for ((i = 0; i < 120; i++)); do
			zk_answers && break
			sleep 0.5
		done
		zk_answers || die "ZooKeeper did not come up; see $logdir/zookeeper.log"
	fi
	log "ZooKeeper ready: $(zk_srvr | grep -E '^(Zookeeper version|Mode):' | tr '\n' ' ')"

	log "all services answering"
)

seckill_services_main "$@"
