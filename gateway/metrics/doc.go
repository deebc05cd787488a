// Package metrics holds the gateway's Prometheus instruments (the pool's registered with
// them): sessions, requests and their duration, tool calls, streams, outbox drops. Names,
// labels and help texts are public: docs/ and the dashboards in deploy/ name them, and they
// never change without those.
//
// A label's value comes from a fixed set only: never a user, a subject, a session id, a
// token or a name a client chose.
package metrics
