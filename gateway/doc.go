// Package gateway is gemgate's HTTP front end: the MCP Streamable HTTP endpoint, the table of
// client sessions and their workers, the server-to-client streams and their outboxes, session
// lifetime, the Origin and protocol-version gates, the message trace and the metrics.
//
// It is where auth, policy and worker meet; they never meet anywhere else. Every request is
// authenticated on its own (a session is never authentication), a session answers only to the
// subject that opened it, and a response reaches only the request that caused it. Nothing a
// client or a worker does may stop the gateway or disturb another session.
package gateway
