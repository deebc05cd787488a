#!/usr/bin/env bash
# Reproduces the side-by-side table of docs/PERFORMANCE.md in one invocation:
#   (a) the worker over stdio, no HTTP (the floor)      stdio
#   (b) a bare Go HTTP echo server (the HTTP floor)      echofloor
#   (c) gemgate, JWT validation on (dev issuer token)    gemgate-auth     (--worker-per session)
#   (d) gemgate --auth none                              gemgate-noauth   (--worker-per session)
#   (g) gemgate, JWT on, one worker per user: every      gemgate-user     (--worker-per user,
#       session is alice's, so all share ONE worker                        the default)
#   (e) supergateway 4.0.0, stateful Streamable HTTP     supergateway
#   (f) ToolHive's streamable proxy as a library         toolhive
#   (h) gemgate as (g), 2026-07-28 sessionless requests gemgate-sessionless (loadgen -era
#       (no initialize, no session; _meta and headers                        sessionless;
#       on every request)                                                    concurrency and
#                                                                            payload only)
#   (i) (g) behind HAProxy 2.6 with deploy/haproxy's     gemgate-haproxy  (the shipped config,
#       config: the balancer's added latency                                 addresses rewritten)
#   (j) a bare Go HTTP-to-stdio relay, one shared worker relayfloor       (concurrency only:
#       (the relay floor: no auth, no checks, JSON only)                     it re-encodes bodies)
#   (k) the worker over stdio, ONE worker shared by all  stdio-shared     (concurrency only:
#       sessions, their calls in flight at once (loadgen                     the ceiling of any
#       -shared): no HTTP, nothing in between                                 gateway in front of
#                                                                             one shared worker)
# All of them front the same worker binary, `gemgate worker demo` (its echo tool); the idle
# sessions test fronts bench/tinyworker, the cheapest worker there is. WORKER replaces that
# command for every scenario at once (e.g. WORKER="env GOGC=400 $PWD/bench/bin/gemgate worker
# demo", the binary this script builds).
#
#   bench/run.sh                 the full run (about 20 minutes on 2 cores)
#   QUICK=1 bench/run.sh         a smoke run of a minute
#   LEVELS="1 32" SCENARIOS="stdio gemgate-auth" bench/run.sh
#   LEVELS=32 SCENARIOS="gemgate-auth gemgate-user toolhive" TESTS=concurrency bench/run.sh
#
# Results: bench/results/<UTC time>/ (results.jsonl, machine.txt, table.md, chart.png, logs).
set -euo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
ROOT=$(cd .. && pwd)
BIN=$BENCH/bin
OUT=${OUT:-$BENCH/results/$(date -u +%Y%m%dT%H%M%SZ)}
LEVELS=${LEVELS:-"1 4 16 32 64"}
TOTAL=${TOTAL:-20000}   # measured calls per point, spread over the sessions
ROUNDS=${ROUNDS:-3}     # rounds of the throughput and idle parts, interleaved; report.py takes each point's median
MINCALLS=${MINCALLS:-300}
WARMUP=${WARMUP:-50}
PAYLOAD=${PAYLOAD:-100}
BIGPAYLOADS=${BIGPAYLOADS:-"10240 1048576"}
BIGSESSIONS=${BIGSESSIONS:-4}
BIGTOTAL=${BIGTOTAL:-400}
OPENS=${OPENS:-30}
IDLE_K=${IDLE_K:-"1000 3900 10000"}
IDLE_PEER_K=${IDLE_PEER_K:-1000}
SCENARIOS=${SCENARIOS:-"stdio stdio-shared echofloor relayfloor gemgate-auth gemgate-noauth gemgate-user gemgate-sessionless gemgate-haproxy supergateway toolhive"}
HAPROXY=${HAPROXY:-/usr/sbin/haproxy}
TESTS=${TESTS:-"concurrency payload open idle"} # which of the four parts below to run
if [[ -n ${QUICK:-} ]]; then
	LEVELS="1 4" ROUNDS=1 TOTAL=1000 MINCALLS=100 WARMUP=10 BIGPAYLOADS="10240" BIGTOTAL=40 OPENS=5 IDLE_K=100 IDLE_PEER_K=100
fi
mkdir -p "$OUT" "$BIN"

log() { printf '%s %s\n' "$(date -u +%T)" "$*" >&2; }

# ---- build ---------------------------------------------------------------------------------
log "building into $BIN"
(cd "$ROOT" && go build -o "$BIN/gemgate" ./cmd/gemgate && go build -o "$BIN/loadgen" ./bench/cmd/loadgen &&
	go build -o "$BIN/echofloor" ./bench/cmd/echofloor && go build -o "$BIN/relayfloor" ./bench/cmd/relayfloor)
(cd "$BENCH/peers" && go build -o "$BIN/thvproxy" ./thvproxy)
gcc -O2 -Wall -static -o "$BIN/tinyworker" "$BENCH/tinyworker/tinyworker.c"
[[ -d $BENCH/node_modules/supergateway ]] || (cd "$BENCH" && npm ci --no-audit --no-fund >&2)
SUPERGATEWAY="$BENCH/node_modules/supergateway/dist/index.js"
WORKER=${WORKER:-"$BIN/gemgate worker demo"}
TINY="$BIN/tinyworker"

# 10,000 sessions hold about 60,000 descriptors in the gateway with a worker per session (6 each: its
# pipes, pidfd and more, and the stream's socket), about 10,000 (1 each) with a worker per user.
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"
mkdir -p "$OUT/data" # the demo worker's notes, under gemgate only

{
	echo "date: $(date -u +%FT%TZ)"
	echo "nproc: $(nproc)"
	echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "mem: $(free -g | awk '/Mem:/{print $2 " GiB"}')"
	echo "kernel: $(uname -r)"
	echo "go: $(go version)"
	echo "node: $(node --version)"
	echo "supergateway: $(node -p 'require("'"$BENCH"'/node_modules/supergateway/package.json").version')"
	echo "haproxy: $("$HAPROXY" -v 2>/dev/null | head -1 | awk '{print $3}')"
	echo "toolhive: $(cd "$BENCH/peers" && go list -m -f '{{.Version}}' github.com/stacklok/toolhive)"
	echo "gemgate: $(cd "$ROOT" && git rev-parse --short HEAD)$(cd "$ROOT" && git diff --quiet HEAD -- . ':!bench' ':!docs' || echo ' + uncommitted changes')"
	echo "worker: ${WORKER#"$BIN/"}"
	# gemgate's workers run in bubblewrap where it works; without it, as root, gemgate dev runs
	# them as nobody. Either way the other gateways run the worker as they are.
	echo "bwrap: $(bwrap --version 2>/dev/null || echo 'none: gemgate runs its workers unsandboxed (as nobody when root)')"
	echo "ulimit -n: $(ulimit -n)"
	echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"
cat "$OUT/machine.txt" >&2

# ---- gateways ------------------------------------------------------------------------------
PID="" URL="" TOKEN="" HAPID=""

free_port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }

wait_port() { # wait_port PORT PID
	for _ in $(seq 1 300); do
		kill -0 "$2" 2>/dev/null || { log "gateway $2 died"; return 1; }
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.05
	done
	return 1
}

wait_line() { # wait_line FILE PID: the first stdout line of a gateway
	for _ in $(seq 1 300); do
		[[ -s $1 ]] && return 0
		kill -0 "$2" 2>/dev/null || { log "gateway $2 died: $(tail -3 "${1%.out}.log")"; return 1; }
		sleep 0.05
	done
	return 1
}

# start SCENARIO WORKER-COMMAND: sets PID, URL, TOKEN (the gateway process, not a wrapper).
start() {
	local name=$1 worker=$2 port
	local base="$OUT/logs/$name-$(date +%s%N)"
	mkdir -p "$OUT/logs"
	TOKEN=""
	case $name in
	gemgate-auth | gemgate-noauth | gemgate-user | gemgate-sessionless | gemgate-haproxy)
		local auth=oidc per=session
		[[ $name == gemgate-noauth ]] && auth=none
		# gemgate-user: every loadgen session carries alice's token, so with one worker per
		# user (the default) all of them share one worker process. Sessionless requests need it
		# (a sessionless request has no session to own a worker), and HAProxy fronts it.
		[[ $name == gemgate-user || $name == gemgate-sessionless || $name == gemgate-haproxy ]] && per=user
		# Defaults otherwise: log level info, so every tools/call writes its audit line (to a file).
		# The abuse limits are lifted: every loadgen session is alice's, opened at once, and the
		# idle part holds thousands (the default session cap is sized from memory and descriptors).
		"$BIN/gemgate" dev --json --listen 127.0.0.1:0 --metrics-listen off --auth "$auth" --data-dir "$OUT/data" \
			--max-sessions 0 --max-workers 0 --max-sessions-per-user 0 --worker-start-rate 0 --worker-per "$per" --worker command --worker-command "$worker" >"$base.out" 2>"$base.log" &
		PID=$!
		wait_line "$base.out" "$PID"
		URL=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["url"])' "$base.out")
		[[ $auth == oidc ]] && TOKEN=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["tokens"]["alice"])' "$base.out")
		if [[ $name == gemgate-haproxy ]]; then start_haproxy "$base"; fi
		;;
	supergateway)
		port=$(free_port)
		node "$SUPERGATEWAY" --stdio "$worker" --outputTransport streamableHttp --stateful \
			--sessionTimeout 600000 --port "$port" --logLevel none >"$base.out" 2>"$base.log" &
		PID=$!
		wait_port "$port" "$PID"
		URL=http://127.0.0.1:$port/mcp
		;;
	toolhive)
		port=$(free_port)
		# shellcheck disable=SC2086
		"$BIN/thvproxy" -port "$port" -- $worker >"$base.out" 2>"$base.log" &
		PID=$!
		wait_line "$base.out" "$PID"
		URL=$(awk '{print $2}' "$base.out")
		;;
	relayfloor)
		# shellcheck disable=SC2086
		"$BIN/relayfloor" -- $worker >"$base.out" 2>"$base.log" &
		PID=$!
		wait_line "$base.out" "$PID"
		URL=$(awk '{print $2}' "$base.out")
		;;
	echofloor)
		"$BIN/echofloor" >"$base.out" 2>"$base.log" &
		PID=$!
		wait_line "$base.out" "$PID"
		URL=$(awk '{print $2}' "$base.out")
		;;
	*) log "unknown scenario $name"; return 1 ;;
	esac
}

# start_haproxy BASE: deploy/haproxy/haproxy.cfg in front of the gemgate at $URL, with only
# its addresses changed (one replica, loopback ports); sets URL to HAProxy's. PID stays
# gemgate's: the CPU and RSS columns are the gateway's.
start_haproxy() {
	local gw=${URL#http://} port stats
	gw=${gw%%/*}
	port=$(free_port) stats=$(free_port)
	sed -e "s|^    bind :8080|    bind 127.0.0.1:$port|" -e "s|^    bind 127.0.0.1:8404|    bind 127.0.0.1:$stats|" \
		-e "/^    server gemgate[23] /d" -e "s|^    server gemgate1 gemgate1:8080|    server gemgate1 $gw|" \
		"$ROOT/deploy/haproxy/haproxy.cfg" >"$1.haproxy.cfg"
	"$HAPROXY" -f "$1.haproxy.cfg" -db >"$1.haproxy.log" 2>&1 &
	HAPID=$!
	wait_port "$port" "$HAPID"
	URL=http://127.0.0.1:$port/mcp
}

stop() {
	if [[ -n $HAPID ]]; then
		kill -TERM "$HAPID" 2>/dev/null || true
		wait "$HAPID" 2>/dev/null || true
		HAPID=""
	fi
	[[ -n $PID ]] || return 0
	kill -TERM "$PID" 2>/dev/null || true
	for _ in $(seq 1 400); do kill -0 "$PID" 2>/dev/null || break; sleep 0.05; done
	kill -KILL "$PID" 2>/dev/null || true
	wait "$PID" 2>/dev/null || true
	PID=""
}
trap stop EXIT

record() { # record KEY=VALUE... < loadgen JSON: adds the fields and appends to results.jsonl
	python3 -c 'import json,sys
r=json.loads(sys.stdin.read())
for kv in sys.argv[1:]:
    k,v=kv.split("=",1); r[k]=v
print(json.dumps(r))' "$@" | tee -a "$OUT/results.jsonl" >&2
}

# loadgen against SCENARIO; extra loadgen flags follow.
measure() {
	local name=$1
	shift
	if [[ $name == stdio ]]; then
		"$BIN/loadgen" -label stdio -stdio "$WORKER" "$@"
		return
	fi
	if [[ $name == stdio-shared ]]; then
		"$BIN/loadgen" -label stdio-shared -stdio "$WORKER" -shared "$@"
		return
	fi
	start "$name" "$WORKER"
	local cmd=("$BIN/loadgen" -label "$name" -url "$URL" -pid "$PID" "$@")
	[[ -n $TOKEN ]] && cmd+=(-token "$TOKEN")
	[[ $name == gemgate-sessionless ]] && cmd+=(-era sessionless)
	"${cmd[@]}" || { stop; return 1; }
	stop
}

calls_for() { local n=$(($1 / $2)); ((n < MINCALLS)) && n=$MINCALLS; echo $n; }

want() { [[ " $TESTS " == *" $1 "* ]]; }

# ---- 1. throughput and latency against concurrency ------------------------------------------
# ROUNDS rounds, each over every level and scenario, so that a point's rounds meet the machine
# in different states (what the row before left running down, the load average); the table
# shows each point's median and its spread.
want concurrency && for round in $(seq 1 "$ROUNDS"); do
	for n in $LEVELS; do
		for s in $SCENARIOS; do
			m=$(calls_for "$TOTAL" "$n")
			log "calls: round $round/$ROUNDS $s sessions=$n calls=$m payload=$PAYLOAD"
			measure "$s" -mode calls -sessions "$n" -calls "$m" -warmup "$WARMUP" -payload "$PAYLOAD" |
				record test=concurrency "round=$round" "load=$(cut -d' ' -f1 /proc/loadavg)" ||
				echo "{\"label\":\"$s\",\"test\":\"concurrency\",\"sessions\":$n,\"round\":\"$round\",\"error\":\"failed; see logs\"}" >>"$OUT/results.jsonl"
		done
	done
done

# ---- 2. large payloads ----------------------------------------------------------------------
want payload && for p in $BIGPAYLOADS; do
	for s in $SCENARIOS; do
		[[ $s == relayfloor || $s == stdio-shared ]] && continue
		m=$(calls_for "$BIGTOTAL" "$BIGSESSIONS")
		((p >= 1048576)) && m=$((m / 4))
		log "calls: $s sessions=$BIGSESSIONS payload=$p"
		measure "$s" -mode calls -sessions "$BIGSESSIONS" -calls "$m" -warmup 5 -payload "$p" |
			record test=payload "load=$(cut -d' ' -f1 /proc/loadavg)" ||
			echo "{\"label\":\"$s\",\"test\":\"payload\",\"payload\":$p,\"error\":\"failed; see logs\"}" >>"$OUT/results.jsonl"
	done
done

# ---- 3. session-open latency (initialize to its answer, worker start included) ---------------
# A sessionless request opens no session. Under (g), per user, the first open starts alice's worker
# and every later one attaches to it (a deleted session leaves the worker running), so (g)'s
# p50 is an open on a running worker, (c)'s an open with a worker start. ROUNDS rounds,
# interleaved as the other parts': one round's 30 opens met the machine in one state only
# (a run of 4c3b403 gave (g) 1.02 ms, where the same part run alone twice gave 0.70 and 0.68).
want open && for round in $(seq 1 "$ROUNDS"); do
	for s in $SCENARIOS; do
		[[ $s == gemgate-sessionless || $s == gemgate-haproxy || $s == relayfloor || $s == stdio-shared ]] && continue
		log "open: round $round/$ROUNDS $s"
		measure "$s" -mode open -opens "$OPENS" | record test=open "round=$round" ||
			echo "{\"label\":\"$s\",\"test\":\"open\",\"round\":\"$round\",\"error\":\"failed; see logs\"}" >>"$OUT/results.jsonl"
	done
done

# ---- 4. memory held by idle sessions with open GET streams ----------------------------------
idle() { # idle SCENARIO K ROUND
	start "$1" "$TINY"
	local cmd=("$BIN/loadgen" -label "$1" -mode idle -url "$URL" -pid "$PID" -sessions "$2" -parallel 16)
	[[ -n $TOKEN ]] && cmd+=(-token "$TOKEN")
	"${cmd[@]}" | record test=idle worker=tinyworker "round=$3" ||
		echo "{\"label\":\"$1\",\"test\":\"idle\",\"sessions\":$2,\"round\":\"$3\",\"error\":\"failed; see logs\"}" >>"$OUT/results.jsonl"
	stop
}
# (c) carries a worker per session (its pipes, pidfd and goroutines count per session); (g),
# the default worker_per: user, shares alice's one worker among all K sessions, so what it
# measures is the gateway's own cost of an idle session.
# ROUNDS rounds, interleaved as the throughput part's: a figure per session is a gateway's RSS,
# which depends on where its garbage collector stood when the last session opened, and swings
# by a tenth from run to run; report.py takes each point's median.
want idle && for round in $(seq 1 "$ROUNDS"); do
	for k in $IDLE_K; do
		for s in gemgate-auth gemgate-user; do
			[[ " $SCENARIOS " == *" $s "* ]] && { log "idle: round $round/$ROUNDS $s K=$k"; idle "$s" "$k" "$round"; }
		done
	done
	for s in echofloor supergateway toolhive; do
		[[ " $SCENARIOS " == *" $s "* ]] && { log "idle: round $round/$ROUNDS $s K=$IDLE_PEER_K"; idle "$s" "$IDLE_PEER_K" "$round"; }
	done
done

echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

# ---- report ---------------------------------------------------------------------------------
PY=$BENCH/.venv/bin/python
if [[ ! -x $PY ]]; then
	python3 -m venv "$BENCH/.venv"
	"$BENCH/.venv/bin/pip" install -q -r "$BENCH/requirements.txt"
fi
"$PY" "$BENCH/report.py" "$OUT"
log "done: $OUT/table.md, $OUT/chart.png"
