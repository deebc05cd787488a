package policy

import "testing"

func TestVerdictString(t *testing.T) {
	for v, want := range map[Verdict]string{
		Allowed: "allowed", DeniedReadOnly: "readOnly", DeniedForbidden: "forbidden", Verdict(9): "Verdict(9)",
	} {
		if got := v.String(); got != want {
			t.Errorf("Verdict(%d).String() = %q, want %q", int(v), got, want)
		}
	}
}
