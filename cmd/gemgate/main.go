// Command gemgate is an OAuth 2.1 resource-server gateway in front of MCP workers.
//
//	gemgate serve   run the gateway (the default)
//	gemgate dev     run it on loopback with a built-in issuer and the demo worker
//	gemgate check   validate the configuration and what serving would need, then exit
//	gemgate worker demo   the built-in demo MCP server on stdio (what `dev` runs per session)
//	gemgate version
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/gemgate/gemgate/worker/demo"
)

// version is stamped at build time: -ldflags "-X main.version=v1.2.3".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	if cmd == "serve" || cmd == "dev" {
		if err := hardenGateway(); err != nil {
			fmt.Fprintf(stderr, "gemgate %s: %v\n", cmd, err)
			return 1
		}
	}
	switch cmd {
	case "serve":
		err = serveCommand(ctx, args, stdout, stderr)
	case "dev":
		err = devCommand(ctx, args, stdout, stderr)
	case "check":
		return checkCommand(ctx, args, stdout, stderr)
	case "worker":
		err = workerCommand(ctx, args)
	case "version":
		fmt.Fprintln(stdout, "gemgate", version)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "gemgate: unknown command %q\n\n%s", cmd, usage)
		return 2
	}
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintf(stderr, "gemgate %s: %v\n", cmd, err)
		return 1
	}
	return 0
}

const usage = `usage: gemgate <command> [flags]

commands:
  serve         run the gateway (default); see gemgate serve -h for every setting
  dev           run on loopback with a development issuer and the demo worker
  check         validate the configuration and check what serving needs
  worker demo   the built-in demo MCP server on stdio
  version       print the version
`

func workerCommand(ctx context.Context, args []string) error {
	if len(args) != 1 || args[0] != "demo" {
		return errors.New("usage: gemgate worker demo")
	}
	return demo.Run(ctx, demo.OptionsFromEnv(), os.Stdin, os.Stdout)
}
