// Package sessions holds what the gateway keeps of sessions without knowing their type: the
// session table with its caps (Table), the lifetime policy and its verdict on a session's
// state (Lifetime, Verdict, the end reasons), the reaper's ticker (Reap), a session's
// logger (Log), and when a long-lived stream must end with its token (StreamEnd).
//
// It never imports the gateway: the gateway gives it ids, owners, its sessions as an opaque
// type and a func for the reaper's look, and acts on its answers.
package sessions
