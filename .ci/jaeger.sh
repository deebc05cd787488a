#!/usr/bin/env bash
# .ci/jaeger.sh: Jaeger v2's all-in-one (OTLP in on 4317/4318, the query API and UI on 16686,
# traces in memory), built from its Go module for the tracing test (test/tracing_test.go) and
# the compose demo's CI image (.ci/images.sh). No image registry or release download is
# reachable here; the Go module proxy is.
#
#   .ci/jaeger.sh build   build it once into the cache (a binary already there is reused)
#   .ci/jaeger.sh path    print the binary's path (building it first if needed)
#   .ci/jaeger.sh env     print `export GEMGATE_JAEGER=...` for the test
#
# JAEGER_VERSION is the Go module's version; the binary reports the matching v2 release (Jaeger
# tags each release twice: v1.75.0 is v2.12.0). The binary serves a placeholder page, not the
# UI (the UI's built assets are not in the Go module): the query API is all the test reads.
# Cost on this 2-core machine: a cold build (empty build cache) is 460 CPU-seconds (383 user, 77
# system; 4 min wall on a machine nearly idle), after about a minute of module downloads;
# optimized it was about 13 CPU-minutes (measured twice while the machine was shared). With the
# binary cached, none.
set -euo pipefail

JAEGER_VERSION=v1.75.0
JAEGER_V2_VERSION=v2.12.0
CACHE=${GEMGATE_CACHE:-$HOME/.cache/gemgate}
BIN=$CACHE/jaeger-$JAEGER_VERSION/jaeger

cmd_build() {
	[ -x "$BIN" ] && return 0
	local t0=$SECONDS dir
	# One build at a time: .ci/test's and .ci/images.sh's may ask at once; the second waits and
	# reuses the first's binary.
	mkdir -p "$(dirname "$BIN")"
	exec 9>"$BIN.lock"
	flock 9
	[ -x "$BIN" ] && return 0
	# `go install` refuses the module (its go.mod has a replace directive); building inside the
	# module's own directory, as its own main module, builds it with its own pins.
	dir=$(go mod download -json "github.com/jaegertracing/jaeger@$JAEGER_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$dir" ] || {
		echo "jaeger.sh: go mod download github.com/jaegertracing/jaeger@$JAEGER_VERSION gave no directory" >&2
		exit 1
	}
	# -gcflags 'all=-N -l': no optimization and no inlining, which a test's collector does not
	# need, for a build of 460 CPU-seconds instead of about 13 CPU-minutes.
	(cd "$dir" && GOFLAGS=-mod=mod go build -trimpath -gcflags 'all=-N -l' \
		-ldflags "-s -w -X github.com/jaegertracing/jaeger/internal/version.latestVersion=$JAEGER_V2_VERSION" \
		-o "$BIN.part" ./cmd/jaeger)
	mv "$BIN.part" "$BIN"
	echo "jaeger.sh: built Jaeger $JAEGER_V2_VERSION (module $JAEGER_VERSION) in $((SECONDS - t0))s: $BIN" >&2
}

case "${1:-}" in
build) cmd_build ;;
path) cmd_build && echo "$BIN" ;;
env) cmd_build && echo "export GEMGATE_JAEGER=$BIN" ;;
*)
	echo "usage: .ci/jaeger.sh build|path|env" >&2
	exit 2
	;;
esac
