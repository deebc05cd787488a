// Command gemgate is an OAuth 2.1 resource-server gateway in front of MCP workers. Its
// commands (serve, dev, issuer, check, worker demo, version) are listed in usage, which
// `gemgate help` prints.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
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
	if len(args) > 0 {
		// Help and version are answered before a leading flag could route to serve.
		switch args[0] {
		case "help", "-h", "-help", "--help":
			fmt.Fprint(stdout, usage)
			return 0
		case "version", "-version", "--version":
			fmt.Fprintln(stdout, "gemgate", version)
			return 0
		}
		if len(args[0]) > 0 && args[0][0] != '-' {
			cmd, args = args[0], args[1:]
		}
	}
	// The first signal starts the graceful stop; a second one (Ctrl-C again, a supervisor
	// that lost patience) gets the default action and ends gemgate at once. Workers die with
	// it: each is started with a parent-death signal. The commands see the first signal only
	// once its catching has stopped, so no second one can fall in between.
	signalled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	context.AfterFunc(signalled, func() {
		stop()
		cancel()
	})
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
	case "issuer":
		err = issuerCommand(ctx, args, stdout, stderr)
	case "check":
		return checkCommand(ctx, args, stdout, stderr)
	case "worker":
		err = workerCommand(ctx, args)
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
  serve               run the gateway (the default when the first argument is a flag)
  dev                 run on loopback with a development issuer, tokens and the demo worker
  issuer              the development issuer alone, on loopback, for several replicas
                      (behind a load balancer) and tests to share
  check               check the configuration and what serving needs (issuer, worker,
                      TLS files, free ports), then exit: 0 when all is well
  check --health URL  exit 0 when URL answers 200: a container health check without curl
  worker demo         the built-in demo MCP server on stdio (what dev runs per session)
  version             print the version (also --version)
  help                this text (also -h, --help)

Every setting has three spellings: a flag (--stream-loss-grace), an environment variable
(GEMGATE_STREAM_LOSS_GRACE) and a config file key (stream_loss_grace). gemgate serve -h lists
them all; docs/configuration.md explains them.
`

func workerCommand(ctx context.Context, args []string) error {
	if len(args) != 1 || args[0] != "demo" {
		return errors.New("usage: gemgate worker demo")
	}
	workerProcs()
	return demo.Run(ctx, demo.OptionsFromEnv(), os.Stdin, os.Stdout)
}

// workerProcs runs a worker process on one P unless GOMAXPROCS is set. A worker handles one
// message at a time, and more Ps only add thread wake-ups between its goroutines
// (docs/PERFORMANCE.md).
func workerProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}
