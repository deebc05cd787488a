package devissuer

import (
	"encoding/json"
	"net/http"
)

// tokenError is an RFC 6749 §5.2 error response of the token endpoint (RFC 8693 §2.2.2
// adds invalid_target). Description goes to the client; it never holds a token or secret.
type tokenError struct {
	Status      int    `json:"-"`
	Code        string `json:"error"`
	Description string `json:"error_description,omitempty"`
}

// refusal is the token error code with desc: a 401 for invalid_client, else a 400.
func refusal(code, desc string) *tokenError {
	status := http.StatusBadRequest
	if code == "invalid_client" {
		status = http.StatusUnauthorized
	}
	return &tokenError{status, code, desc}
}

// writeJSON writes v with the headers RFC 6749 §5.1 asks of token responses; they are
// harmless on the metadata documents too.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func writeTokenError(w http.ResponseWriter, e *tokenError) {
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Basic realm="gemgate-dev"`)
	}
	writeJSON(w, e.Status, e)
}
