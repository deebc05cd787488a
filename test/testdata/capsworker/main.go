// Command capsworker is the worker of gemgate's resource cap tests: a minimal stdio MCP server
// whose tools take what a runaway or hostile worker would take of the host.
//
//	limits  its own limits (/proc/self/limits), cgroup and uid
//	alloc   take {"mib": N} MiB of memory, every page touched, and answer
//	fork    start {"n": N} processes that sleep, and answer; it exits at the first the kernel
//	        refuses, as a worker that cannot go on
//	echo    answer at once
//
// "sleeper" is its own re-execution for fork.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"time"
)

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  any             `json:"result,omitempty"`
	Error   any             `json:"error,omitempty"`
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "sleeper" {
		time.Sleep(time.Hour)
		return
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 16<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var m message
		if json.Unmarshal(in.Bytes(), &m) != nil || m.ID == nil || m.Method == "" {
			continue
		}
		resp := message{JSONRPC: "2.0", ID: m.ID}
		switch m.Method {
		case "initialize":
			var p struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			json.Unmarshal(m.Params, &p)
			resp.Result = map[string]any{
				"protocolVersion": p.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{}},
				"serverInfo":      map[string]any{"name": "capsworker", "version": "1"},
			}
		case "ping":
			resp.Result = map[string]any{}
		case "tools/list":
			var tools []any
			for _, n := range []string{"limits", "alloc", "fork", "echo"} {
				tools = append(tools, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
			}
			resp.Result = map[string]any{"tools": tools}
		case "tools/call":
			var p struct {
				Name      string         `json:"name"`
				Arguments map[string]any `json:"arguments"`
			}
			json.Unmarshal(m.Params, &p)
			report, _ := json.Marshal(tool(p.Name, p.Arguments))
			resp.Result = map[string]any{"content": []any{map[string]any{"type": "text", "text": string(report)}}}
		default:
			resp.Error = map[string]any{"code": -32601, "message": "method not found"}
		}
		b, _ := json.Marshal(resp)
		out.Write(append(b, '\n'))
		out.Flush()
	}
}

var kept [][]byte // what alloc took, kept reachable

func tool(name string, args map[string]any) any {
	switch name {
	case "limits":
		limits := map[string]string{"uid": itoa(os.Getuid())}
		raw, _ := os.ReadFile("/proc/self/limits")
		for _, line := range strings.Split(string(raw), "\n") {
			for prefix, key := range map[string]string{"Max data size": "data", "Max processes": "nproc", "Max open files": "nofile"} {
				if rest, ok := strings.CutPrefix(line, prefix); ok {
					if f := strings.Fields(rest); len(f) > 0 {
						limits[key] = f[0]
					}
				}
			}
		}
		cg, _ := os.ReadFile("/proc/self/cgroup")
		limits["cgroup"] = strings.TrimSpace(string(cg))
		return limits
	case "alloc":
		mib, _ := args["mib"].(float64)
		for i := 0; i < int(mib); i++ {
			b := make([]byte, 1<<20)
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			kept = append(kept, b)
		}
		return map[string]any{"allocated_mib": len(kept)}
	case "fork":
		n, _ := args["n"].(float64)
		for i := 0; i < int(n); i++ {
			if err := exec.Command("/proc/self/exe", "sleeper").Start(); err != nil {
				os.Stderr.WriteString("capsworker: cannot start a process: " + err.Error() + "\n")
				os.Exit(5)
			}
		}
		return map[string]any{"started": int(n)}
	case "echo":
		return map[string]any{"ok": true}
	}
	return map[string]any{"error": "unknown tool"}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
