// Package helm checks the Helm chart deploy/helm/gemgate without a cluster: it renders the
// chart with helm (a pinned Go tool of this module) for every ci/*-values.yaml and validates
// each rendered manifest twice, offline:
//
//   - strictly decoded into its typed Go struct (k8s.io/api through client-go's scheme; the
//     ServiceMonitor through the Prometheus Operator's API module): an unknown field, a field
//     given twice or a value of the wrong type fails, as the API server's strict field
//     validation (kubectl's default) refuses it;
//   - validated against the JSON schema of its kind in the OpenAPI document that Kubernetes
//     publishes with a release (api/openapi-spec/swagger.json of the Go module
//     k8s.io/kubernetes at a pinned version and hash, fetched through the Go module proxy),
//     with unknown fields refused (additionalProperties false on every object that lists its
//     properties, as kubeconform -strict does with schemas generated from that same document):
//     missing required fields and wrong types fail. Allowed values (pathType: Prefix, protocol:
//     TCP) are not checked: Kubernetes' published OpenAPI names them only in descriptions.
//
// It is a module of its own so that helm, client-go and the Kubernetes API types stay out of
// gemgate's go.mod and binary; .ci/helm runs it.
package helm
