package helm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// deployment is the chart's Deployment, typed.
func deployment(t *testing.T, docs map[string][]byte) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(docs["Deployment"], &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

// By default the chart runs workers in bubblewrap (worker_sandbox bwrap, so gemgate refuses to
// start where it cannot) and gives the pod what unprivileged bubblewrap needs: a user
// namespace of its own, an unmasked /proc, and seccomp and AppArmor profiles that allow
// namespaces and mounts. Every other hardening stays.
func TestChartSandboxSettings(t *testing.T) {
	for _, values := range []string{"minimal-values.yaml", "full-values.yaml"} {
		t.Run(values, func(t *testing.T) {
			docs := renderByKind(t, filepath.Join(chart, "ci", values))
			if cfg := chartConfig(t, docs); !strings.Contains(cfg, "\nworker_sandbox: bwrap\n") {
				t.Errorf("config.yaml does not ask for the sandbox:\n%s", cfg)
			}
			pod := deployment(t, docs).Spec.Template.Spec
			if pod.HostUsers == nil || *pod.HostUsers {
				t.Errorf("hostUsers = %v, want false (a user namespace for the pod)", pod.HostUsers)
			}
			if sp := pod.SecurityContext.SeccompProfile; sp == nil || sp.Type != corev1.SeccompProfileTypeUnconfined {
				t.Errorf("pod seccompProfile = %+v, want the values' Unconfined", sp)
			}
			c := pod.Containers[0].SecurityContext
			if c.ProcMount == nil || *c.ProcMount != corev1.UnmaskedProcMount {
				t.Errorf("procMount = %v, want Unmasked", c.ProcMount)
			}
			if c.AppArmorProfile == nil || c.AppArmorProfile.Type != corev1.AppArmorProfileTypeUnconfined {
				t.Errorf("appArmorProfile = %+v, want Unconfined", c.AppArmorProfile)
			}
			if c.AllowPrivilegeEscalation == nil || *c.AllowPrivilegeEscalation || c.ReadOnlyRootFilesystem == nil || !*c.ReadOnlyRootFilesystem ||
				len(c.Capabilities.Drop) != 1 || c.Capabilities.Drop[0] != "ALL" || !*pod.SecurityContext.RunAsNonRoot {
				t.Errorf("the sandbox settings cost other hardening: %+v", c)
			}
			if ok, out := gemgateCheck(t, chartConfig(t, docs)); !ok {
				t.Errorf("gemgate refuses the chart's config:\n%s", out)
			}
		})
	}
}

// A Localhost seccomp profile (the default's rules plus namespaces) renders as given.
func TestChartSandboxLocalhostSeccomp(t *testing.T) {
	docs := renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"),
		"sandbox.seccompProfile.type=Localhost", "sandbox.seccompProfile.localhostProfile=profiles/gemgate-bwrap.json")
	sp := deployment(t, docs).Spec.Template.Spec.SecurityContext.SeccompProfile
	if sp == nil || sp.Type != corev1.SeccompProfileTypeLocalhost || sp.LocalhostProfile == nil || *sp.LocalhostProfile != "profiles/gemgate-bwrap.json" {
		t.Errorf("seccompProfile = %+v", sp)
	}
	for _, doc := range render(t, filepath.Join(chart, "ci", "minimal-values.yaml"),
		"sandbox.seccompProfile.type=Localhost", "sandbox.seccompProfile.localhostProfile=profiles/gemgate-bwrap.json") {
		if kind, problems := check(t, doc); len(problems) > 0 {
			t.Errorf("%s: %v", kind, problems)
		}
	}
}

// sandbox.enabled false is the operator's choice of unsandboxed workers: worker_sandbox none,
// and the container defaults back (RuntimeDefault seccomp, masked /proc, the host's users).
func TestChartWithoutSandbox(t *testing.T) {
	docs := renderByKind(t, filepath.Join(chart, "ci", "minimal-values.yaml"), "sandbox.enabled=false")
	cfg := chartConfig(t, docs)
	if !strings.Contains(cfg, "\nworker_sandbox: none\n") {
		t.Errorf("config.yaml:\n%s", cfg)
	}
	pod := deployment(t, docs).Spec.Template.Spec
	if pod.HostUsers != nil || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		pod.Containers[0].SecurityContext.ProcMount != nil || pod.Containers[0].SecurityContext.AppArmorProfile != nil {
		t.Errorf("without the sandbox the pod keeps sandbox settings: %+v %+v", pod.SecurityContext, pod.Containers[0].SecurityContext)
	}
	if ok, out := gemgateCheckAsPod(t, cfg); !ok {
		t.Errorf("gemgate, as the pod's user, refuses the chart's config:\n%s", out)
	}
	// The chart owns worker_sandbox: config may not set it beside sandbox.enabled.
	out, err := exec.Command("go", "tool", "helm", "template", "gm", chart, "--kube-version", kubernetesVersion,
		"-f", filepath.Join(chart, "ci", "minimal-values.yaml"), "--set", "config.worker_sandbox=none").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "config.worker_sandbox is set by the chart") {
		t.Errorf("config.worker_sandbox: err %v\n%s", err, out)
	}
}

// gemgateCheckAsPod is gemgateCheck as the chart's pod runs gemgate: as uid 65532, whatever
// this test runs as (serve refuses unsandboxed workers as root without worker_user).
func gemgateCheckAsPod(t *testing.T, config string) (bool, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		return gemgateCheck(t, config)
	}
	dir, err := os.MkdirTemp("", "chart-pod-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	b, err := os.ReadFile(gemgateBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	bin, file := filepath.Join(dir, "gemgate"), filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check", "--config", file)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GEMGATE_ISSUER=http://127.0.0.1:1/realms/x", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	out, _ := cmd.CombinedOutput()
	return strings.Contains(string(out), "OK       configuration is valid"), string(out)
}
