// Package sessionless is the gateway's adapter for the 2026-07-28 era, where every request
// names its protocol version and no session is opened: the era's rules (which request is of
// the era, its required _meta, the Mcp-Method, Mcp-Name and Mcp-Param-* headers that mirror
// the body) and the requestState gemgate seals for a call that waits for the client's input.
//
// It never imports the core (package gateway): the core imports it and decides, once per
// request, which era's adapter a message goes to.
package sessionless
