package webhook

import "time"

// Defaults of a Client; each Option below names the one it changes.
const (
	DefaultTimeout          = 10 * time.Second
	DefaultMaxResponseBytes = 64 << 10
	DefaultUserAgent        = "docket-webhooks/1"
)

type config struct {
	allowPrivate     bool
	allowLoopback    bool
	timeout          time.Duration
	maxResponseBytes int64
	userAgent        string
}

func defaultConfig() config {
	return config{
		timeout:          DefaultTimeout,
		maxResponseBytes: DefaultMaxResponseBytes,
		userAgent:        DefaultUserAgent,
	}
}

// Option configures a Client; pass them to NewClient.
type Option interface {
	apply(*config)
}

type option func(*config)

func (o option) apply(c *config) { o(c) }

// AllowPrivate lets the client connect to non-public addresses: loopback,
// private (10/8, 172.16/12, 192.168/16), carrier-grade NAT (100.64/10),
// link-local (169.254/16 — including the cloud metadata service — and
// fe80::/10), unique-local (fc00::/7) and a few other special-purpose ranges,
// also when written as IPv4-mapped or NAT64 IPv6. Only for deployments where
// every endpoint is trusted. Unspecified (0.0.0.0, ::), multicast, broadcast
// and reserved addresses stay refused: no webhook endpoint lives there.
// Default false.
func AllowPrivate(allow bool) Option {
	return option(func(c *config) { c.allowPrivate = allow })
}

// AllowLoopback lets the client connect to loopback addresses (127/8, ::1)
// while every other non-public address stays refused; for embedded or local
// mode, where the receiver runs on the same machine. Default false.
func AllowLoopback(allow bool) Option {
	return option(func(c *config) { c.allowLoopback = allow })
}

// Timeout bounds one delivery attempt: connecting, TLS, sending the request,
// waiting for the response and reading its body (up to MaxResponseBytes).
// d <= 0 keeps the default. Default 10 s.
func Timeout(d time.Duration) Option {
	return option(func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	})
}

// MaxResponseBytes is how much of a response body is read, then discarded,
// before the connection is closed; reading a small body whole lets the
// connection be reused. n < 0 keeps the default; 0 reads nothing. Default
// 64 KiB.
func MaxResponseBytes(n int64) Option {
	return option(func(c *config) {
		if n >= 0 {
			c.maxResponseBytes = n
		}
	})
}

// UserAgent sets the User-Agent header of every delivery, overriding any in
// the headers passed to Deliver. "" keeps the default. Default
// "docket-webhooks/1".
func UserAgent(ua string) Option {
	return option(func(c *config) {
		if ua != "" {
			c.userAgent = ua
		}
	})
}
