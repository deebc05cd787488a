// Package metrics holds the gateway's Prometheus instruments (the pool's registered with
// them). Names, labels and help texts are public (docs/, deploy/ dashboards): they never
// change without those. A label's value comes from a fixed set only: never a user, a session
// id, a token or a name a client chose.
package metrics
