package gemstone

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeBin is the fake stone's program, built once for the package's tests.
var fakeBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gemgate-fakestone-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeBin = filepath.Join(dir, "fakestone")
	build := exec.Command("go", "build", "-o", fakeBin, "./internal/fakestone")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the fake stone:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// stone is a fake GemStone laid out for one test: $GEMSTONE with bin/topaz and bin/gslist,
// a global dir with lock files, and a 0600 service ini.
type stone struct {
	home, global, ini string
	gemConfig         string // Config.GemConfig
}

func newStone(t *testing.T, cfg map[string]any, servers ...string) stone {
	t.Helper()
	root := t.TempDir()
	s := stone{home: filepath.Join(root, "GemStone64Bit3.7.5"), global: filepath.Join(root, "global"), ini: filepath.Join(root, "service.ini")}
	for _, d := range []string{filepath.Join(s.home, "bin"), filepath.Join(s.global, "locks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exe, err := os.ReadFile(fakeBin)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"topaz", "gslist"} {
		if err := os.WriteFile(filepath.Join(s.home, "bin", n), exe, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	base := map[string]any{"version": "3.7.5", "service_user": "gemgate_svc", "service_password": "s3cret", "server": "0.8.0",
		"users": map[string]any{"alice": map[string]any{"audiences": []string{"gemstone"}, "issuers": []string{"*"}}}}
	for k, v := range cfg {
		base[k] = v
	}
	writeJSON(t, filepath.Join(s.home, "fakestone.json"), base)
	writeVersionTxt(t, s.home, base["version"].(string))
	if servers == nil {
		servers = []string{"Stone gs64stone", "Netldi gs64ldi"}
	}
	for i, sv := range servers {
		// "Type name [status]": the status as gslist -l prints it, default OK.
		f := strings.SplitN(sv, " ", 3)
		typ, name, status := f[0], f[1], "OK"
		if len(f) == 3 {
			status = f[2]
		}
		writeJSON(t, filepath.Join(s.global, "locks", name+"..LCK"), map[string]any{"type": typ, "status": status, "version": base["version"], "pid": 100 + i, "port": 50000 + i})
	}
	if err := os.WriteFile(s.ini, []byte("set gemstone gs64stone\nset user gemgate_svc\nset password s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return s
}

// writeVersionTxt writes the product's version.txt, as a GemStone product directory holds it.
func writeVersionTxt(t *testing.T, home, version string) {
	t.Helper()
	text := "GemStone/S 64 Bit\n" + version + " Build: 64bit-fakestone (branch " + version + ")\n"
	if err := os.WriteFile(filepath.Join(home, "version.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s stone) config(t *testing.T) Config {
	return Config{Home: s.home, GlobalDir: s.global, ServiceINI: s.ini, ScriptDir: t.TempDir(), GemConfig: s.gemConfig}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// token is an unsigned JWT with these claims: the fake stone reads claims, not signatures.
func token(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","kid":"k1"}`)) + "." + enc(b) + ".c2ln"
}

func goodClaims(user string) map[string]any {
	return map[string]any{"iss": "https://issuer.example", "sub": user, "aud": "gemstone", "exp": time.Now().Add(time.Hour).Unix()}
}
