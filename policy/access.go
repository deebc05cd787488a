package policy

import "slices"

// Access is what one token (or a session and the token now presented on it) may do. Get
// it from [Policy.DecideToken]. The zero Access is undecided: it grants nothing, and CheckTool
// refuses every tool for it, so a forgotten DecideToken fails closed.
//
// ReadOnly may be set to true to force a decided Access read-only; setting it to false
// does not add the write scope to its grants but does lift the read-only gate.
type Access struct {
	// ReadOnly is true when the write scope was not granted.
	ReadOnly bool

	decided bool
	granted []string // sorted, no duplicates
	missing []string // required scopes not granted, in configured order
	tok     *token   // what rules read of the token besides its scopes; nil: nothing
}

// Token is what rules may read of a verified token. Claims are every claim, shared with
// the verifier: read, never changed, never logged.
type Token struct {
	Subject, User string
	Scopes        []string
	Claims        map[string]any
}

type token struct {
	sub, user     string
	groups, roles []string
	claims        map[string]any
}

// DecideToken makes the Access for a token. Its groups are the "groups" claim; its roles
// the "roles" claim and Keycloak's realm_access.roles. A claim of another shape counts as
// none.
func (p *Policy) DecideToken(t Token) Access {
	a := p.decideScopes(t.Scopes)
	if len(p.rules[KindTool])+len(p.rules[KindPrompt])+len(p.rules[KindResource]) == 0 {
		return a // nothing reads the token's other claims
	}
	tok := &token{sub: t.Subject, user: t.User, claims: t.Claims, groups: claimStrings(t.Claims["groups"])}
	if tok.claims == nil {
		tok.claims = map[string]any{}
	}
	tok.roles = claimStrings(t.Claims["roles"])
	if realm, ok := t.Claims["realm_access"].(map[string]any); ok {
		tok.roles = append(tok.roles, claimStrings(realm["roles"])...)
	}
	a.tok = tok
	return a
}

// WithScope is a with scope also granted: what another token of the same caller would get.
func (p *Policy) WithScope(a Access, scope string) Access {
	w := p.decideScopes(append(slices.Clip(a.granted), scope))
	w.tok = a.tok
	return w
}

// claimStrings reads a claim as a list of strings: a string is one, an array keeps its
// strings.
func claimStrings(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func (p *Policy) decideScopes(scopes []string) Access {
	granted := slices.DeleteFunc(slices.Clone(scopes), func(s string) bool { return s == "" })
	slices.Sort(granted)
	granted = slices.Compact(granted)

	a := Access{decided: true, granted: granted}
	for _, s := range p.required {
		if !a.HasScope(s) {
			a.missing = append(a.missing, s)
		}
	}
	a.ReadOnly = !a.HasScope(p.write)
	return a
}

// Missing returns the required scopes the token lacks; non-empty means 403
// insufficient_scope. For an undecided Access it returns nil, but CheckTool still refuses.
func (a Access) Missing() []string { return slices.Clone(a.missing) }

// Granted returns the granted scopes, sorted and without duplicates.
func (a Access) Granted() []string { return slices.Clone(a.granted) }

// HasScope reports whether s was granted.
func (a Access) HasScope(s string) bool {
	_, ok := slices.BinarySearch(a.granted, s)
	return ok
}

// Narrow returns the stricter of a and b: read-only if either is, a scope granted only if
// both grant it, missing what either misses. A session opened read-only stays read-only
// whatever later tokens carry, and a later token with fewer scopes loses what it lacks.
func (a Access) Narrow(b Access) Access {
	n := Access{
		ReadOnly: a.ReadOnly || b.ReadOnly,
		decided:  a.decided && b.decided,
		tok:      b.tok, // what rules read is the token presented now
	}
	// An Access is never changed once made, so n may share a's slices; they are clipped
	// so that an append to them copies.
	n.granted = slices.Clip(a.granted)
	bLacks := func(s string) bool { return !b.HasScope(s) }
	if slices.ContainsFunc(n.granted, bLacks) {
		n.granted = slices.DeleteFunc(slices.Clone(n.granted), bLacks)
	}
	n.missing = slices.Clip(a.missing)
	for _, s := range b.missing {
		if !slices.Contains(n.missing, s) {
			n.missing = append(n.missing, s)
		}
	}
	return n
}
