# gemgate image: one static binary (the gateway and its built-in demo worker) and bubblewrap,
# which gemgate serve runs every worker in (it refuses to run workers unsandboxed unless
# worker_sandbox is none), as a non-root user on Debian slim. Build:
#   docker build --build-arg VERSION=$(git describe --always) .
# Run with what unprivileged bubblewrap needs: user namespaces, mounts and a /proc it may
# mount over (docker run --security-opt seccomp=unconfined --security-opt apparmor=unconfined
# --security-opt systempaths=unconfined; Kubernetes: the chart's sandbox values). See
# deploy/README.md, "The worker sandbox in a container".

# The base images are arguments whose defaults are the upstream images users pull. CI, which
# reaches no image registry, builds local ones from Debian's packages and passes them
# (.ci/images.sh): BUILD_IMAGE any image with Go on PATH (and a GOPROXY it can reach),
# RUNTIME_IMAGE a Debian (a base that already has bubblewrap and ca-certificates installs
# nothing).
ARG GO_VERSION=1.26
ARG BUILD_IMAGE=golang:${GO_VERSION}
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
# Modules first, so the download layer is reused when only sources change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/gemgate ./cmd/gemgate && \
    mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
ARG VERSION=dev
LABEL org.opencontainers.image.title="gemgate" \
      org.opencontainers.image.description="OAuth 2.1 resource-server gateway for MCP servers" \
      org.opencontainers.image.version="${VERSION}"
# bubblewrap: the worker sandbox (not setuid in Debian: it needs user namespaces).
# ca-certificates: the issuer and token exchange over https. The account is distroless's
# nonroot (65532), so volumes and the chart's securityContext stay as they were.
RUN if ! command -v bwrap >/dev/null || [ ! -s /etc/ssl/certs/ca-certificates.crt ]; then \
      apt-get update \
      && apt-get install -y --no-install-recommends bubblewrap ca-certificates \
      && rm -rf /var/lib/apt/lists/*; \
    fi \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --home-dir /data --no-create-home --shell /usr/sbin/nologin nonroot
COPY --from=build /out/gemgate /usr/local/bin/gemgate
# Writable home of the account, and the data_dir (the workers' files, the demo's notes) that
# the compose files (GEMGATE_DATA_DIR) and the Helm chart (data_dir in its config file) give
# gemgate. No ENV GEMGATE_DATA_DIR here: the environment wins over a config file
# (docs/configuration.md), so it would override the data_dir of every config file given to
# the image.
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
EXPOSE 8080 9464
# Exec form: the image has no curl, so gemgate probes its own /healthz.
# The address must match GEMGATE_LISTEN (the compose file listens on 0.0.0.0:8080).
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/gemgate", "check", "--health", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/gemgate"]
CMD ["serve"]
