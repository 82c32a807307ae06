#!/usr/bin/env bash
# .ci/services.sh — install (when missing) and start (when not answering) the
# local services the seckill tests need, without systemd:
#
#   MariaDB    127.0.0.1:3306  database `seckill`, user seckill/seckill (all privileges)
#   Redis      127.0.0.1:6379
#   Redis x3   127.0.0.1:6380, 6381, 6382 (independent Redlock nodes, no persistence)
#   ZooKeeper  127.0.0.1:2181 (standalone, 4lw srvr/ruok/stat/mntr)
#
# Idempotent: a second run finds everything answering and only re-applies the
# (cheap) MariaDB grants. Runs as root. Safe to execute (`bash .ci/services.sh`)
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
	local wanted=(mariadb-server mariadb-client redis-server redis-tools zookeeperd docker-compose wrk)
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
