package worker

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// extraMode runs the fake worker modes of the hardening tests; it reports whether mode was one
// of them.
func extraMode(mode string) bool {
	switch mode {
	case "readpath":
		// Reports what it reads at each of GEMGATE_TEST_PATHS (files, or a directory's
		// entries), then serves.
		var found []string
		for _, p := range strings.Split(os.Getenv("GEMGATE_TEST_PATHS"), ":") {
			b, err := os.ReadFile(p)
			if entries, derr := os.ReadDir(p); derr == nil {
				b, err = []byte(fmt.Sprint(len(entries), " entries")), nil
			}
			if err != nil {
				b = []byte("error")
			}
			found = append(found, string(b))
		}
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"read\",\"params\":{\"found\":%q}}\n", strings.Join(found, "|"))
		return false
	case "readfd":
		// Reports what it reads from descriptor GEMGATE_TEST_FD, which gemgate never handed
		// over, then serves.
		fd, _ := strconv.Atoi(os.Getenv("GEMGATE_TEST_FD"))
		b := make([]byte, 64)
		found := "nothing"
		if n, err := syscall.Pread(fd, b, 0); err == nil {
			found = string(b[:n])
		}
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"fd\",\"params\":{\"found\":%q}}\n", found)
		return false
	case "deaf":
		// Never reads stdin: the gateway's writes fill the pipe and stay there.
		time.Sleep(time.Hour)
	case "credential":
		// Reports, as its first line, what it found on the credential descriptor and in its
		// environment, then serves.
		cred := readCredential()
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"cred\",\"params\":{\"fd\":%q,\"env\":%q,\"uid\":%d}}\n",
			cred, os.Getenv("GEMGATE_CREDENTIAL"), os.Getuid())
		return false
	case "credline":
		// Reads its first stdin line byte by byte (the rest stays in the pipe for the serve
		// loop), then reports it, the descriptor's variable and its environment, and serves.
		var line []byte
		for b := make([]byte, 1); len(line) < 1<<16; line = append(line, b[0]) {
			if n, _ := os.Stdin.Read(b); n == 0 || b[0] == '\n' {
				break
			}
		}
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"cred\",\"params\":{\"line\":%q,\"fdEnv\":%q,\"env\":%q}}\n",
			line, os.Getenv(CredentialFDEnv), os.Getenv("GEMGATE_CREDENTIAL"))
		return false
	case "daemonize":
		// Double-forks a sleeper into a session of its own and reports its pid: the pattern
		// of a descendant escaping its worker's process group.
		mid := exec.Command("sh", "-c", `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $!`)
		out, err := mid.Output() // the middle process exits at once: the sleeper is orphaned
		if err != nil {
			fmt.Fprintln(os.Stderr, "daemonize:", err)
			os.Exit(1)
		}
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"child\",\"params\":{\"pid\":%s}}\n", strings.TrimSpace(string(out)))
		return false
	case "scan":
		// The hostile worker: reads every /proc/<pid>/environ and cmdline it can and reports
		// where it found the needle (given on the credential descriptor), and how many
		// processes it could see at all.
		needle := readCredential()
		var found []string
		visible := 0
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == strconv.Itoa(os.Getpid()) {
				continue
			}
			visible++
			for _, f := range []string{"environ", "cmdline"} {
				b, err := os.ReadFile("/proc/" + e.Name() + "/" + f)
				if err == nil && needle != "" && strings.Contains(string(b), needle) {
					found = append(found, "/proc/"+e.Name()+"/"+f)
				}
			}
		}
		fmt.Printf("{\"jsonrpc\":\"2.0\",\"method\":\"scan\",\"params\":{\"visible\":%d,\"found\":%q}}\n", visible, strings.Join(found, " "))
		return false
	default:
		return false
	}
	return true
}

func readCredential() string {
	fd, err := strconv.Atoi(os.Getenv("GEMGATE_CREDENTIAL_FD"))
	if err != nil {
		return ""
	}
	f := os.NewFile(uintptr(fd), "credential")
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 1<<16))
	return string(b)
}
