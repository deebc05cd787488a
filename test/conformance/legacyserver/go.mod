// A separate module, so that gemgate's own go.mod keeps go-sdk v1.8.0. gemgate's legacy test
// worker is go-sdk v1.6.1's conformance everything-server, read from the module cache (not
// copied here), with this folder's diagnostics.go (the 2026-07-28 suite's diagnostic tools,
// written the legacy way) added to its package through a build overlay: see
// buildLegacyWorker in test/conformance_targets_test.go. It speaks MCP up to 2025-11-25 only
// (no server/discover).
module github.com/gemgate/gemgate/test/conformance/legacyserver

go 1.26.8

require (
	github.com/google/jsonschema-go v0.4.3
	github.com/modelcontextprotocol/go-sdk v1.6.1
	github.com/yosida95/uritemplate/v3 v3.0.2
)

require (
	github.com/segmentio/asm v1.1.3 // indirect
	github.com/segmentio/encoding v0.5.4 // indirect
	golang.org/x/oauth2 v0.35.0 // indirect
	golang.org/x/sys v0.41.0 // indirect
)
