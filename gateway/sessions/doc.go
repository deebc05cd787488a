// Package sessions holds what the gateway keeps of sessions without knowing their type: the
// table (Table), the lifetime policy (Lifetime, Verdict, the end reasons), the reaper (Reap),
// a session's logger (Log), and when a long-lived stream must end with its token (StreamEnd).
// It never imports the gateway.
package sessions
