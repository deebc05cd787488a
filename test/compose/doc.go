// Package compose checks deploy/docker-compose.yml with compose-go, the loader Docker
// Compose v2 itself uses, pinned in this module's go.mod. It is a module of its own so that
// compose-go and its dependencies stay out of gemgate's go.mod and binary; `go test ./...`
// at the repository root does not reach it, .ci/test runs it.
package compose
