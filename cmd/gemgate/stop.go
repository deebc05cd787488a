package main

import (
	"context"
	"time"

	"github.com/gemgate/gemgate/worker"
)

// answerWriteBound is how long handlers get, once Close has answered the calls cut by the end
// of shutdown_grace with a JSON-RPC error, to write those answers before their connections
// are closed.
const answerWriteBound = 2 * time.Second

// stopTail is the allowance of the stop after shutdown_grace: the workers' stop (stdin
// closed, SIGTERM, SIGKILL, DefaultStopGrace apart) and answerWriteBound. The last spans'
// export takes what is left of it, so that a collector that does not answer cannot lengthen
// the stop past what docs/operations.md and the Helm chart's terminationGracePeriodSeconds
// allow.
const stopTail = 2*worker.DefaultStopGrace + answerWriteBound

// stop ends serving in three phases (gateway/drain.go), each bounded, so that the whole stop
// takes at most drain_delay + shutdown_grace + stopTail (the workers' stop + answerWriteBound):
//
//  1. drain_delay: /readyz answers 503 while the listener stays open, so a balancer's health
//     checks see the 503 (not a refused connection) and move traffic; new sessions and users
//     without a worker here get a retryable 503, everything else is served. Skipped when the
//     server already failed (broken is true): nothing is served any more.
//  2. shutdown_grace: the listener closes, streams end with a reconnection hint, calls in
//     flight may finish.
//  3. Calls still running are answered with a JSON-RPC error, then every worker stops.
func (s *server) stop(broken bool) {
	s.log.Info("draining", "sessions", s.gw.Sessions(), "drain_delay", s.cfg.DrainDelay)
	s.gw.BeginDrain()
	if d := s.cfg.DrainDelay; d > 0 && !broken {
		time.Sleep(d)
	}
	s.log.Info("shutting down", "sessions", s.gw.Sessions(), "shutdown_grace", s.cfg.ShutdownGrace)
	s.gw.BeginShutdown()
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace)
	defer cancel()
	cut := s.http.Shutdown(sctx) != nil
	tail := time.Now().Add(stopTail)
	if cut {
		s.log.Warn("in-flight requests did not finish within shutdown_grace; answering them with an error")
	}
	if s.metrics != nil {
		s.metrics.Close()
	}
	// Close answers each call still running (its session ends, or its worker lets go of it)
	// before it stops the workers; the handlers write those answers meanwhile.
	s.gw.Close()
	if cut {
		wctx, cancel := context.WithTimeout(context.Background(), answerWriteBound)
		defer cancel()
		if s.http.Shutdown(wctx) != nil {
			s.log.Warn("some answers could not be written in time; closing their connections")
		}
		s.http.Close()
	}
	s.errorLog.Flush() // what the servers' error log did not write is counted before the end
	if err := s.tracing.Shutdown(tail); err != nil {
		s.log.Warn("spans could not be exported at shutdown", "error", err)
	}
	s.log.Info("stopped")
}
