# syntax=docker/dockerfile:1
#
# gemgate image: one static binary (the gateway and its built-in demo worker), run as a
# non-root user on distroless. Build: docker build --build-arg VERSION=$(git describe --always) .

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION} AS build
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

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="gemgate" \
      org.opencontainers.image.description="OAuth 2.1 resource-server gateway for MCP servers" \
      org.opencontainers.image.version="${VERSION}"
COPY --from=build /out/gemgate /usr/local/bin/gemgate
# Writable home for the demo worker's per-user store (distroless has no shell to mkdir at run time).
COPY --from=build --chown=65532:65532 /out/data /data
ENV GEMGATE_DATA_DIR=/data
USER 65532:65532
EXPOSE 8080 9464
# Exec form: distroless has no shell and no curl, so gemgate probes its own /healthz.
# The address must match GEMGATE_LISTEN (the compose file listens on 0.0.0.0:8080).
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
    CMD ["/usr/local/bin/gemgate", "check", "--health", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/gemgate"]
CMD ["serve"]
