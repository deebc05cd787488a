// Package compose checks deploy/docker-compose.yml and deploy/docker-compose.scale.yml: as
// files, with compose-go, the loader Docker Compose v2 itself uses, pinned in this module's
// go.mod; and for real (TestComposeUp...), brought up by Compose v2 on a Docker daemon the test
// starts in a network namespace of its own, with the images .ci/images.sh builds from Debian's
// packages. It is a module of its own so that compose-go and its dependencies stay out of
// gemgate's go.mod and binary; `go test ./...` at the repository root does not reach it,
// .ci/test runs it.
package compose
