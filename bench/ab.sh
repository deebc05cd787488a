#!/usr/bin/env bash
# Measures one part of bench/run.sh for two or more gemgate builds, interleaved round by round
# (A, B, A, B...), so that a busy moment of the machine falls on each of them alike; prints
# each figure's median and its range per build. It is how a piece of code is judged by what it
# changes in a published figure (docs/PERFORMANCE.md, "What the performance layer kept").
#
#   bench/ab.sh PART NAME=COMMAND NAME=COMMAND...
#
# COMMAND runs gemgate (a binary, or "env GOGC=100 /tmp/gemgate"). PART is one of
#   idle-user     K idle sessions with a GET stream, worker per user (tinyworker): KiB per session
#   idle-session  the same, a worker per session: KiB, descriptors and OS threads per session
#   calls-user    tools/call echo (PAYLOAD bytes) at LEVELS sessions, worker per user: gateway CPU per call
#   calls-sessionless  as calls-user, 2026-07-28 sessionless requests
# Environment: ROUNDS (5), K (1000), LEVELS ("1 32"), TOTAL (20000 calls per point), PAYLOAD (100),
# WARMUP (50 calls per session), OUT.
set -euo pipefail
cd "$(dirname "$0")"
BENCH=$PWD
part=$1
shift
ROUNDS=${ROUNDS:-5} K=${K:-1000} LEVELS=${LEVELS:-"1 32"} TOTAL=${TOTAL:-20000} PAYLOAD=${PAYLOAD:-100} WARMUP=${WARMUP:-50}
OUT=${OUT:-$BENCH/results/ab-$part-$(date -u +%Y%m%dT%H%M%SZ)}
BIN=$BENCH/bin
mkdir -p "$OUT/data" "$BIN"
(cd .. && go build -o "$BIN/loadgen" ./bench/cmd/loadgen && go build -o "$BIN/gemgate" ./cmd/gemgate)
gcc -O2 -Wall -static -o "$BIN/tinyworker" "$BENCH/tinyworker/tinyworker.c"
ulimit -n 1048576 2>/dev/null || ulimit -n "$(ulimit -Hn)"

run() { # run NAME COMMAND ROUND: one measurement, appended to results.jsonl
	local name=$1 cmd=$2 round=$3 per=user worker="$BIN/gemgate worker demo" base="$OUT/$1-$3"
	[[ $part == idle-session ]] && per=session
	[[ $part == idle-* ]] && worker=$BIN/tinyworker
	# shellcheck disable=SC2086 # COMMAND is words
	$cmd dev --json --listen 127.0.0.1:0 --metrics-listen off --data-dir "$OUT/data" \
		--max-sessions 0 --max-workers 0 --max-sessions-per-user 0 --worker-start-rate 0 \
		--worker-per "$per" --worker command --worker-command "$worker" >"$base.out" 2>"$base.log" &
	local pid=$!
	for _ in $(seq 1 300); do [[ -s $base.out ]] && break; sleep 0.05; done
	local url token
	url=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["url"])' "$base.out")
	token=$(python3 -c 'import json,sys;print(json.load(open(sys.argv[1]))["tokens"]["alice"])' "$base.out")
	local lg=("$BIN/loadgen" -label "$name" -url "$url" -pid "$pid" -token "$token")
	case $part in
	idle-*) "${lg[@]}" -mode idle -sessions "$K" -parallel 16 | sed "s/^{/{\"round\":$round,/" ;;
	calls-*)
		[[ $part == calls-sessionless ]] && lg+=(-era sessionless)
		for n in $LEVELS; do
			"${lg[@]}" -mode calls -sessions "$n" -calls $((TOTAL / n)) -warmup "$WARMUP" -payload "$PAYLOAD" |
				sed "s/^{/{\"round\":$round,/"
		done
		;;
	esac >>"$OUT/results.jsonl"
	kill -TERM "$pid"
	wait "$pid" || true
}

for round in $(seq 1 "$ROUNDS"); do
	for arg in "$@"; do
		echo "$(date -u +%T) $part round $round/$ROUNDS ${arg%%=*}" >&2
		run "${arg%%=*}" "${arg#*=}" "$round"
	done
done

python3 - "$OUT/results.jsonl" <<'EOF'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = ["per_session_kib", "threads_per_session", "fds_per_session", "gateway_cpu_us_per_call", "throughput"]
groups = {}
for r in rows:
    for k in keys:
        if k in r:
            groups.setdefault((k, r.get("sessions"), r["label"]), []).append(r[k])
for (k, n, label), v in sorted(groups.items(), key=lambda x: (x[0][0], x[0][1])):
    print(f"{k:26} sessions={n:<5} {label:14} median {statistics.median(v):9.2f}  range {min(v):.2f}-{max(v):.2f}  n={len(v)}")
EOF
echo "results: $OUT/results.jsonl" >&2
