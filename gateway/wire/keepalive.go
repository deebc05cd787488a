package wire

import "time"

// KeepaliveInterval is sized to proxy and NAT idle timeouts, not to sessions: an idle stream
// carries a comment at least this often.
const KeepaliveInterval = 15 * time.Second
