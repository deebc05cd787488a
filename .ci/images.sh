#!/usr/bin/env bash
# .ci/images.sh: what the compose tests (test/compose, TestComposeUp...) need to run the shipped
# demo and scale example for real on a machine that reaches no image registry, only Debian's
# packages, the Go module proxy and Maven Central.
#
#   .ci/images.sh tools   build Docker Compose v2 (the CLI plugin) from the Go module proxy
#   .ci/images.sh build   tools, then local images in a Docker daemon of this script's own,
#                         started in a network namespace of its own and stopped at the end
#   .ci/images.sh env     print `export ...` lines the compose tests read
#
# The images, all on ONE Debian base made by mmdebstrap (imported once, shared by every image):
#   gemgate-ci/debian:trixie   minbase + bubblewrap, ca-certificates, Java 21 (Keycloak),
#                              prometheus, haproxy: the packages every image below needs
#   gemgate-ci/go:local        the base + this machine's Go toolchain and gemgate's modules as a
#                              file GOPROXY: the Dockerfile's BUILD_IMAGE
#   gemgate:demo               the shipped Dockerfile, BUILD_IMAGE and RUNTIME_IMAGE local
#   gemgate-ci/keycloak:KEYCLOAK_VERSION  Keycloak's distribution from Maven Central (the one
#                              .ci/keycloak.sh caches) on Debian's Java 21
#   gemgate-ci/prometheus:local, gemgate-ci/haproxy:local  Debian's packages
#   gemgate-ci/jaeger:local    Jaeger v2's all-in-one, built from its Go module by .ci/jaeger.sh
# .ci/compose/*.yml (the CI override files) name them.
#
# Settings: GEMGATE_CACHE (default ~/.cache/gemgate) holds the base tarball, the compose
# plugin and the daemon's data root (GEMGATE_DOCKER_DATA, default $GEMGATE_CACHE/docker-data),
# which the tests' own daemon opens afterwards. DOCKER_CLI: Debian's docker client (20.10; it
# builds with the daemon's BuildKit without the buildx plugin, which no package here offers).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${GEMGATE_CACHE:-$HOME/.cache/gemgate}
COMPOSE_VERSION=v5.6.0
KEYCLOAK_VERSION=${KEYCLOAK_VERSION:-26.7.3}
SUITE=trixie # bookworm has no Java 21, which Keycloak 26 needs
PACKAGES=bubblewrap,ca-certificates,openjdk-21-jre-headless,prometheus,haproxy
DOCKER_CLI=${DOCKER_CLI:-/usr/bin/docker}
DATA=${GEMGATE_DOCKER_DATA:-$CACHE/docker-data}
CLI_CONFIG=$CACHE/docker-cli
PLUGIN=$CLI_CONFIG/cli-plugins/docker-compose

say() { printf 'images.sh: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}
t0=$SECONDS
took() { say "$* ($((SECONDS - t0))s)"; }

cmd_tools() {
	command -v dockerd >/dev/null && [ -x "$DOCKER_CLI" ] && command -v mmdebstrap >/dev/null ||
		die "needs Debian's docker.io and mmdebstrap (apt-get install docker.io mmdebstrap)"
	if [ -x "$PLUGIN" ] && [ "$(cat "$PLUGIN.version" 2>/dev/null)" = "$COMPOSE_VERSION" ]; then
		return 0
	fi
	# `go install` refuses the module (its go.mod has exclude directives); building inside the
	# module's own directory, as its own main module, honours them.
	local dir
	dir=$(go mod download -json "github.com/docker/compose/v5@$COMPOSE_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[ -d "$dir" ] || die "go mod download github.com/docker/compose/v5@$COMPOSE_VERSION gave no directory"
	mkdir -p "$(dirname "$PLUGIN")"
	(cd "$dir" && GOFLAGS=-mod=mod go build -trimpath \
		-ldflags "-s -w -X github.com/docker/compose/v5/internal.Version=$COMPOSE_VERSION" \
		-o "$PLUGIN.part" ./cmd)
	mv "$PLUGIN.part" "$PLUGIN"
	echo "$COMPOSE_VERSION" >"$PLUGIN.version"
	took "built Docker Compose $COMPOSE_VERSION from the Go module proxy"
}

# base_tar makes (once) the Debian root file system every local image starts from.
base_tar() {
	local key tar
	key=$(printf '%s %s\n' "$SUITE" "$PACKAGES" | sha256sum | cut -c1-12)
	tar=$CACHE/debian-$SUITE-$key.tar
	if [ ! -f "$tar" ] || [ ! -s "$tar" ]; then
		rm -rf "$tar" "$tar.part"
		# Documentation and translations left out; man1 kept for update-alternatives' links.
		mmdebstrap --quiet --variant=minbase --format=tar --include="$PACKAGES" \
			--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
			--dpkgopt='path-exclude=/usr/share/man/*' --setup-hook='mkdir -p "$1/usr/share/man/man1"' \
			"$SUITE" "$tar.part" >&2
		mv "$tar.part" "$tar"
		took "mmdebstrap $SUITE"
	fi
	echo "$tar"
}

# ---- a daemon of this script's own -------------------------------------------------------

RUN=""
start_daemon() {
	RUN=$(mktemp -d /tmp/gemgate-images.XXXXXX)
	mkdir -p "$DATA"
	# unshare --net: a network namespace of dockerd's own, gone with it (nothing named is left).
	# Not `ip netns exec`, which mounts a /sys without the cgroup file systems dockerd needs.
	unshare --net sh -c 'ip link set lo up && exec dockerd "$@"' dockerd --data-root "$DATA" \
		--exec-root "$RUN/exec" --pidfile "$RUN/dockerd.pid" -H "unix://$RUN/docker.sock" >"$RUN/dockerd.log" 2>&1 &
	echo $! >"$RUN/pid"
	export DOCKER_HOST=unix://$RUN/docker.sock
	local i
	for i in $(seq 1 120); do
		"$DOCKER_CLI" version >/dev/null 2>&1 && return 0
		kill -0 "$(cat "$RUN/pid")" 2>/dev/null || break
		sleep 0.5
	done
	tail -n 30 "$RUN/dockerd.log" >&2
	die "dockerd did not start"
}

stop_daemon() {
	[ -n "$RUN" ] || return 0
	local pid
	pid=$(cat "$RUN/pid" 2>/dev/null || true)
	if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid"
		local _
		for _ in $(seq 1 60); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.5
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -rf "$RUN"
	RUN=""
}

# ---- the images ----------------------------------------------------------------------------

# build TAG: docker build with the daemon's BuildKit, the context a tar on stdin.
build() {
	DOCKER_BUILDKIT=1 "$DOCKER_CLI" build --quiet -t "$1" - >/dev/null
	took "built $1"
}

go_image() {
	local ctx=$1 goroot
	goroot=$(go env GOROOT)
	# gemgate's modules only, as a file module proxy: builds in the image reach no network.
	mkdir -p "$ctx/mod"
	(cd "$REPO" && GOMODCACHE=$ctx/mod GOFLAGS=-modcacherw \
		GOPROXY="file://$(go env GOMODCACHE)/cache/download,$(go env GOPROXY)" go mod download)
	cat >"$ctx/Dockerfile" <<'EOF'
FROM gemgate-ci/debian:trixie
COPY go /usr/local/go
COPY mod/cache/download /goproxy
ENV GOPATH=/go PATH=/usr/local/go/bin:/go/bin:$PATH GOTOOLCHAIN=local GOPROXY=file:///goproxy GOSUMDB=off
EOF
	tar -c -C "$ctx" Dockerfile mod/cache/download -C "$(dirname "$goroot")" \
		--exclude=go/test --exclude=go/doc --exclude=go/api --exclude=go/misc --exclude='testdata' \
		--exclude=go/pkg/tool/*/pprof --exclude=go/pkg/tool/*/trace "$(basename "$goroot")" |
		build gemgate-ci/go:local
}

keycloak_image() {
	"$REPO/.ci/keycloak.sh" install >&2
	local ctx=$1 zip=$CACHE/keycloak/keycloak-quarkus-dist-$KEYCLOAK_VERSION.zip
	# The distribution as Maven Central serves it (the zip .ci/keycloak.sh downloaded and
	# checked), not its unpacked copy, which a Keycloak of .ci/keycloak.sh may be writing to.
	unzip -q "$zip" -d "$ctx"
	mv "$ctx/keycloak-$KEYCLOAK_VERSION" "$ctx/keycloak"
	cat >"$ctx/Dockerfile" <<'EOF'
FROM gemgate-ci/debian:trixie
RUN useradd --uid 1000 --gid 0 --home-dir /opt/keycloak --no-create-home keycloak
COPY --chown=1000:0 keycloak /opt/keycloak
# /bin/sh is bash, as in Keycloak's own (UBI) image: the compose health check uses /dev/tcp.
RUN mkdir -p /opt/keycloak/data/import && chown -R 1000:0 /opt/keycloak/data && ln -sf bash /bin/sh
ENV JAVA_HOME=/usr/lib/jvm/java-21-openjdk-amd64 LANG=C.UTF-8
USER 1000
EXPOSE 8080 9000
ENTRYPOINT ["/opt/keycloak/bin/kc.sh"]
EOF
	tar -c -C "$ctx" Dockerfile keycloak | build "gemgate-ci/keycloak:$KEYCLOAK_VERSION"
}

# jaeger_image: the binary .ci/jaeger.sh built (or is building: it waits for that build), run as
# the upstream image runs it (every interface, an unprivileged user, the embedded all-in-one
# configuration).
jaeger_image() {
	local ctx=$1
	cp "$("$REPO/.ci/jaeger.sh" path)" "$ctx/jaeger"
	cat >"$ctx/Dockerfile" <<'EOF'
FROM gemgate-ci/debian:trixie
COPY jaeger /usr/local/bin/jaeger
ENV JAEGER_LISTEN_HOST=0.0.0.0
USER 10001
EXPOSE 4317 4318 16686
ENTRYPOINT ["/usr/local/bin/jaeger"]
EOF
	tar -c -C "$ctx" Dockerfile jaeger | build gemgate-ci/jaeger:local
}

cmd_build() {
	cmd_tools
	local tar work
	# Jaeger's build (minutes, cold) runs beside the base image and the others; .ci/test may
	# have started it already, and then this one waits for that one.
	nice -n 10 "$REPO/.ci/jaeger.sh" build &
	local jaeger_pid=$!
	tar=$(base_tar)
	trap 'stop_daemon; rm -rf "${work:-}"' EXIT
	trap 'exit 1' TERM INT
	start_daemon
	took "dockerd up"
	"$DOCKER_CLI" import "$tar" gemgate-ci/debian:trixie >/dev/null
	took "imported the base"
	work=$(mktemp -d)
	mkdir -p "$work/go" "$work/kc"
	go_image "$work/go" &
	local go_pid=$!
	keycloak_image "$work/kc"
	# Debian's Prometheus and HAProxy, run as their images run them upstream.
	mkdir -p "$work/prom" "$work/haproxy"
	cat >"$work/prom/Dockerfile" <<'EOF2'
FROM gemgate-ci/debian:trixie
RUN mkdir /prometheus && chown nobody:nogroup /prometheus
USER nobody
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
EOF2
	tar -c -C "$work/prom" Dockerfile | build gemgate-ci/prometheus:local
	cat >"$work/haproxy/Dockerfile" <<'EOF2'
FROM gemgate-ci/debian:trixie
USER haproxy
STOPSIGNAL SIGUSR1
EXPOSE 8080
ENTRYPOINT ["/usr/sbin/haproxy", "-W", "-db", "-f", "/usr/local/etc/haproxy/haproxy.cfg"]
EOF2
	tar -c -C "$work/haproxy" Dockerfile | build gemgate-ci/haproxy:local
	wait "$jaeger_pid" || die "building Jaeger failed"
	mkdir -p "$work/jaeger"
	jaeger_image "$work/jaeger"
	wait "$go_pid"
	# The shipped Dockerfile, as users build it, with the two base images local.
	DOCKER_BUILDKIT=1 "$DOCKER_CLI" build --quiet -t gemgate:demo --build-arg VERSION=demo \
		--build-arg BUILD_IMAGE=gemgate-ci/go:local --build-arg RUNTIME_IMAGE=gemgate-ci/debian:trixie \
		"$REPO" >/dev/null
	took "built gemgate:demo from the Dockerfile"
	"$DOCKER_CLI" image prune -f >/dev/null # the previous run's images these tags replaced
	# Each run's build of the shipped Dockerfile leaves its layers in BuildKit's cache: bounded,
	# or a contributor's runs fill the disk (50 GB after a few days of runs); and the contexts
	# made above go (half a gigabyte each).
	"$DOCKER_CLI" builder prune -f --keep-storage 4000000000 >/dev/null
	rm -rf "$work"
	"$DOCKER_CLI" image ls >&2
}

cmd_env() {
	cat <<EOF
export GEMGATE_DOCKER_DATA=$DATA
export GEMGATE_DOCKER_CLI=$DOCKER_CLI
export DOCKER_CONFIG=$CLI_CONFIG
EOF
}

case ${1:-} in
tools) cmd_tools ;;
build) cmd_build ;;
env) cmd_env ;;
*)
	echo "usage: $0 tools|build|env" >&2
	exit 2
	;;
esac
