package auth

import "context"

type cacheNoteKey struct{}

// WithCacheNote is ctx carrying cached, which a Verifier sets when it takes the request's
// token from its cache of verified tokens rather than checking it in full: tracing records
// it (gemgate.token.cached). Nothing else of the token is told.
func WithCacheNote(ctx context.Context, cached *bool) context.Context {
	return context.WithValue(ctx, cacheNoteKey{}, cached)
}

func noteCached(ctx context.Context) {
	if n, ok := ctx.Value(cacheNoteKey{}).(*bool); ok {
		*n = true
	}
}
