package demo

import (
	"context"
	"io"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Run serves one MCP session over newline-delimited JSON: requests from in,
// messages to out. It returns nil when in ends (EOF), and ctx.Err() when ctx
// ends; either way every tool call still running is cancelled first. Run
// closes neither in nor out. When in or out is a pipe or socket in blocking
// mode (a worker's stdin and stdout), Run waits on it in the runtime's
// poller, not in a blocking system call (see pollable), and puts its
// blocking mode back when it returns.
//
// With o.OTLP it exports a span per request and flushes them before it
// returns (see traceRequests).
//
// The session starts at log level "info", so slow's log messages reach a
// client that never sent logging/setLevel; the client may change the level.
func Run(ctx context.Context, o Options, in io.Reader, out io.Writer) error {
	srv, err := NewServer(o)
	if err != nil {
		return err
	}
	// The SDK does not cancel running handlers when the connection's context
	// ends, and closing the session waits for them: tie them to ctx.
	srv.AddReceivingMiddleware(cancelWith(ctx))
	if tp := o.Tracer; tp != nil {
		srv.AddReceivingMiddleware(traceRequests(tp))
	} else if o.OTLP {
		tp, err := newOTLPProvider(ctx)
		if err != nil {
			o.logger().Warn("demo worker: serving without traces", "err", err)
		} else {
			defer flushTraces(tp, o.logger().Warn)
			srv.AddReceivingMiddleware(traceRequests(tp))
		}
	}

	if f, ok := in.(*os.File); ok {
		p, undo := pollable(f)
		defer undo()
		in = p
	}
	if f, ok := out.(*os.File); ok {
		p, undo := pollable(f)
		defer undo()
		out = p
	}
	var w io.Writer = out
	if o.Chatter {
		w = &chatterWriter{w: out}
	}
	t := &mcp.IOTransport{Reader: io.NopCloser(in), Writer: nopWriteCloser{w}}
	ss, err := srv.Connect(ctx, t, &mcp.ServerSessionOptions{State: &mcp.ServerSessionState{LogLevel: "info"}})
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-ctx.Done():
		ss.Close()
		<-ended
		return ctx.Err()
	}
}

// cancelWith returns middleware that cancels each handler's context when
// ctx ends.
func cancelWith(ctx context.Context) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(hctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			hctx, cancel := context.WithCancel(hctx)
			defer cancel()
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			return next(hctx, method, req)
		}
	}
}

// nopWriteCloser keeps the SDK from closing the caller's writer.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
