package limit

import (
	"cmp"
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// ConnectionCap configures Connections.
type ConnectionCap struct {
	Max     int          // connections open at once; 0 or less: no cap
	TLS     *tls.Config  // the listener's, to refuse in TLS too (cloned, HTTP/1.1 only)
	Logger  *slog.Logger // nil discards; refusals are logged at most once a minute
	Setting string       // what sets the cap, for the log (default "max_connections")
}

// A refusal is written by a goroutine of its own, so Accept never waits on a client; beyond
// maxRefusing of them, each bounded by refusalTimeout, connections are closed unanswered, so a
// flood cannot turn refusals into the descriptor exhaustion the cap prevents.
const (
	maxRefusing    = 64
	refusalTimeout = 2 * time.Second
	refusalBody    = "too many connections; try again shortly\n"
)

var refusalAnswer = []byte("HTTP/1.1 503 Service Unavailable\r\n" +
	"Content-Type: text/plain; charset=utf-8\r\n" +
	"Retry-After: 1\r\n" +
	"Connection: close\r\n" +
	"Content-Length: " + strconv.Itoa(len(refusalBody)) + "\r\n\r\n" + refusalBody)

// Connections caps a listener's open connections; one over the cap gets a minimal HTTP 503.
// Wrap the raw TCP listener, beneath TLS, so that the server still sees *tls.Conn.
func Connections(ln net.Listener, c ConnectionCap) net.Listener {
	if c.Max <= 0 {
		return ln
	}
	l := &cappedListener{Listener: ln, max: int64(c.Max), refusing: make(chan struct{}, maxRefusing), refusalTimeout: refusalTimeout,
		log: c.Logger, setting: cmp.Or(c.Setting, "max_connections")}
	l.warn.Interval = time.Minute
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if c.TLS != nil {
		l.tls = c.TLS.Clone()
		l.tls.NextProtos = []string{"http/1.1"}
	}
	return l
}

type cappedListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refusing chan struct{} // a slot per refusal being written
	tls      *tls.Config
	log      *slog.Logger
	warn     rate.Sometimes
	setting  string
	refused  atomic.Int64

	refusalTimeout time.Duration // refusalTimeout; tests set it
}

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.open.Add(1) <= l.max {
			return &cappedConn{Conn: c, release: func() { l.open.Add(-1) }}, nil
		}
		l.open.Add(-1)
		l.refuse(c)
	}
}

func (l *cappedListener) Open() int { return int(l.open.Load()) }

func (l *cappedListener) refuse(c net.Conn) {
	n := l.refused.Add(1)
	l.warn.Do(func() {
		l.log.Warn("connection cap reached: refusing connections with 503", "listener", l.Addr().String(), "cap", l.max, "set_by", l.setting, "refused_so_far", n)
	})
	select {
	case l.refusing <- struct{}{}:
	default:
		c.Close() // too many refusals in flight already
		return
	}
	go func() {
		defer func() { <-l.refusing }()
		answer(c, l.tls, l.refusalTimeout)
	}()
}

// answer writes the 503 and closes c, after reading what the client still sends: unread bytes
// would make the kernel reset the connection first.
func answer(c net.Conn, cfg *tls.Config, timeout time.Duration) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(timeout))
	rw := io.ReadWriter(c)
	if cfg != nil {
		tc := tls.Server(c, cfg)
		rw = tc
		defer tc.Close()
	}
	if _, err := rw.Write(refusalAnswer); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok && cfg == nil {
		_ = cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(rw, 64<<10))
}

// cappedConn gives its slot back when closed, once.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// CloseWrite keeps net/http's lingering close for TCP connections.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
