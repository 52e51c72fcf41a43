package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MaxRetryAfter caps Result.RetryAfter, so that an endpoint cannot park its
// deliveries for years with one header.
const MaxRetryAfter = 24 * time.Hour

// Outcome is what the caller should do after one delivery attempt. The zero
// Outcome is not a valid result.
type Outcome int

const (
	// OutcomeDelivered: the endpoint answered 2xx. Done.
	OutcomeDelivered Outcome = iota + 1
	// OutcomeRetry: the attempt failed and may succeed later — timeouts,
	// connection errors, 408, 429, 5xx, redirects and every other 4xx but
	// 410. Retry with backoff, no sooner than Result.RetryAfter.
	OutcomeRetry
	// OutcomeGone: the endpoint answered 410 Gone, the receiver's way of
	// saying "stop sending". The caller disables the endpoint.
	OutcomeGone
	// OutcomeRefused: the URL is not allowed (see ValidateURL) or its host
	// resolved to a refused address. Nothing was sent; retrying is useless
	// until the URL or the client's options change.
	OutcomeRefused
)

func (o Outcome) String() string {
	switch o {
	case OutcomeDelivered:
		return "delivered"
	case OutcomeRetry:
		return "retry"
	case OutcomeGone:
		return "gone"
	case OutcomeRefused:
		return "refused"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Result describes one delivery attempt.
type Result struct {
	// Status is the HTTP status of the response; 0 if none arrived.
	Status int
	// Latency runs from sending the request until the response headers
	// arrived or the attempt failed; it includes DNS, connecting and TLS.
	Latency time.Duration
	// RetryAfter is the response's Retry-After (delay-seconds or HTTP-date,
	// whatever the status), capped at MaxRetryAfter; 0 if absent, invalid or
	// in the past.
	RetryAfter time.Duration
	// Outcome classifies the attempt.
	Outcome Outcome
	// Err is nil when delivered. Otherwise it wraps ErrStatus (with Status
	// set), ErrBadURL or ErrRefusedAddress (OutcomeRefused), or the network
	// or context error; IsTimeout and IsRefused test for those. It does not
	// repeat the URL, whose query may hold a token.
	Err error
}

// Client delivers webhooks. It is safe for concurrent use and keeps
// connections alive between deliveries; make one and share it.
type Client struct {
	cfg config
	hc  *http.Client
}

// NewClient returns a Client. Without options it refuses every non-public
// address, allows 10 s per attempt, reads at most 64 KiB of a response and
// sends User-Agent "docket-webhooks/1"; see the Option functions.
func NewClient(opts ...Option) *Client {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	c := &Client{cfg: cfg}
	dialer := &net.Dialer{
		Timeout:   cfg.timeout,
		KeepAlive: 30 * time.Second,
		// The address check runs here, on the IP actually being dialled
		// after DNS resolution, once per connection attempt.
		Control: c.control,
	}
	tr := &http.Transport{
		// Never a proxy: the check would see only the proxy's address, and
		// the proxy would connect anywhere.
		Proxy:                  nil,
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    cfg.timeout,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		// The body is discarded; asking for gzip would only make the
		// MaxResponseBytes limit count decompressed bytes.
		DisableCompression: true,
	}
	c.hc = &http.Client{
		Transport: tr,
		// Redirects are not followed: a redirect could point anywhere, and
		// the receiver is expected to answer at the registered URL.
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
	return c
}

// Deliver POSTs body with headers h (usually from Headers) to url, once, and
// classifies the attempt. h is not modified; Content-Type defaults to
// application/json and User-Agent is the client's. The attempt is bounded by
// the client's Timeout and by ctx.
//
// Statuses:
//   - 2xx: OutcomeDelivered.
//   - 410 Gone: OutcomeGone.
//   - 3xx: OutcomeRetry, with Status set. The redirect is not followed (its
//     target never passed ValidateURL); it is usually a configuration
//     mistake such as http→https that the endpoint's owner can fix, and the
//     caller's retry budget ends it if they do not.
//   - 408, 429, 5xx: OutcomeRetry.
//   - Any other 4xx: OutcomeRetry as well. Receivers answer 400, 401, 403 or
//     404 transiently far more often than they mean it — during a deploy,
//     while a secret rotation propagates, behind a misrouted load balancer —
//     and the Standard Webhooks guidance treats every non-2xx as a failed
//     attempt to retry with backoff. 410 is the one status that says
//     "stop"; a consumer expects the rest to be retried until the caller's
//     retry schedule gives up.
//
// Timeouts and connection errors are OutcomeRetry; a URL that fails
// ValidateURL, or whose host resolves only to refused addresses, is
// OutcomeRefused and no request is sent.
func (c *Client) Deliver(ctx context.Context, url string, h http.Header, body []byte) Result {
	if err := ValidateURL(url, c.cfg.allowPrivate, c.cfg.allowLoopback); err != nil {
		return Result{Outcome: OutcomeRefused, Err: err}
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Result{Outcome: OutcomeRefused, Err: fmt.Errorf("%w: %v", ErrBadURL, unwrapURLError(err))}
	}
	if h != nil {
		req.Header = h.Clone()
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", c.cfg.userAgent)

	start := time.Now()
	resp, err := c.hc.Do(req)
	latency := time.Since(start)
	if err != nil {
		err = unwrapURLError(err)
		res := Result{Latency: latency, Outcome: OutcomeRetry, Err: fmt.Errorf("webhook: post: %w", err)}
		if errors.Is(err, ErrRefusedAddress) {
			res.Outcome = OutcomeRefused
		}
		return res
	}
	// Read (a bounded part of) the body so that a small response leaves the
	// connection reusable; a larger one is cut off and its connection closed.
	// Errors here do not matter: the status already arrived.
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, c.cfg.maxResponseBytes))
	_ = resp.Body.Close()

	res := Result{
		Status:     resp.StatusCode,
		Latency:    latency,
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()),
	}
	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		res.Outcome = OutcomeDelivered
	case code == http.StatusGone:
		res.Outcome = OutcomeGone
		res.Err = fmt.Errorf("%w: %d %s", ErrStatus, code, http.StatusText(code))
	case code >= 300 && code < 400:
		res.Outcome = OutcomeRetry
		res.Err = fmt.Errorf("%w: %d %s (redirects are not followed)", ErrStatus, code, http.StatusText(code))
	default:
		res.Outcome = OutcomeRetry
		res.Err = fmt.Errorf("%w: %d %s", ErrStatus, code, http.StatusText(code))
	}
	return res
}

// unwrapURLError drops the *url.Error layer, whose message repeats the URL.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) && ue.Err != nil {
		return ue.Err
	}
	return err
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP-date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs > int64(MaxRetryAfter/time.Second) {
			return MaxRetryAfter
		}
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), MaxRetryAfter)
}

// control is the net.Dialer hook: address is the resolved "ip:port" about to
// be connected to.
func (c *Client) control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %q", ErrRefusedAddress, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot parse dial address %q", ErrRefusedAddress, address)
	}
	return checkAddr(ap.Addr(), c.cfg.allowPrivate, c.cfg.allowLoopback)
}

// ValidateURL checks an endpoint URL at registration time, with the same
// policy a Client built with AllowPrivate(allowPrivate) and
// AllowLoopback(allowLoopback) applies. The scheme must be http or https,
// the host present, the port (if any) 1 to 65535, and there must be no
// user:password@. A literal IP address is checked against the address
// policy (ErrRefusedAddress); a host name passes, because what it resolves
// to can change — the Client checks the resolved address when it connects.
// Host names that only look numeric ("2130706433", "127.1", "0x7f.1"),
// which some resolvers read as IPv4 addresses, are rejected.
// Errors wrap ErrBadURL or ErrRefusedAddress.
func ValidateURL(raw string, allowPrivate, allowLoopback bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadURL, unwrapURLError(err))
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "":
		return fmt.Errorf("%w: no scheme; want http or https", ErrBadURL)
	default:
		return fmt.Errorf("%w: scheme %q; want http or https", ErrBadURL, u.Scheme)
	}
	if u.Opaque != "" {
		return fmt.Errorf("%w: no host", ErrBadURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: credentials in URL", ErrBadURL)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Errorf("%w: no host", ErrBadURL)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%w: port %q", ErrBadURL, p)
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("%w: empty port", ErrBadURL)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return checkAddr(ip, allowPrivate, allowLoopback)
	}
	if strings.HasPrefix(u.Host, "[") {
		return fmt.Errorf("%w: %q is not an IPv6 address", ErrBadURL, host)
	}
	if numericLooking(host) {
		return fmt.Errorf("%w: host %q looks like a non-standard IPv4 address", ErrBadURL, host)
	}
	return nil
}

// numericLooking reports whether host's last label is a number (decimal or
// 0x hex). No top-level domain is numeric, so such a "name" is an IPv4
// address in a form netip does not accept but inet_aton does.
func numericLooking(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	digits, base := last, "0123456789"
	if len(last) > 2 && (last[:2] == "0x" || last[:2] == "0X") {
		digits, base = last[2:], "0123456789abcdefABCDEF"
	}
	for _, r := range digits {
		if !strings.ContainsRune(base, r) {
			return false
		}
	}
	return true
}

// Address classes, from most to least restricted.
type addrClass int

const (
	classPublic    addrClass = iota
	classLoopback            // allowed by AllowLoopback or AllowPrivate
	classPrivate             // allowed by AllowPrivate
	classForbidden           // never allowed
)

type rangeInfo struct {
	prefix netip.Prefix
	class  addrClass
	what   string
}

var specialRanges = func() []rangeInfo {
	r := func(cidr string, class addrClass, what string) rangeInfo {
		return rangeInfo{netip.MustParsePrefix(cidr), class, what}
	}
	return []rangeInfo{
		// IPv4
		r("0.0.0.0/8", classForbidden, "unspecified (this network)"),
		r("127.0.0.0/8", classLoopback, "loopback"),
		r("10.0.0.0/8", classPrivate, "private (RFC 1918)"),
		r("172.16.0.0/12", classPrivate, "private (RFC 1918)"),
		r("192.168.0.0/16", classPrivate, "private (RFC 1918)"),
		r("100.64.0.0/10", classPrivate, "carrier-grade NAT (RFC 6598)"),
		r("169.254.0.0/16", classPrivate, "link-local (cloud metadata lives here)"),
		r("192.0.0.0/24", classPrivate, "IETF protocol assignments"),
		r("198.18.0.0/15", classPrivate, "benchmarking"),
		r("192.0.2.0/24", classForbidden, "documentation"),
		r("198.51.100.0/24", classForbidden, "documentation"),
		r("203.0.113.0/24", classForbidden, "documentation"),
		r("224.0.0.0/4", classForbidden, "multicast"),
		r("240.0.0.0/4", classForbidden, "reserved or broadcast"),
		// IPv6 (IPv4-mapped, IPv4-compatible, NAT64 and 6to4 forms are
		// classified by the IPv4 address they embed, before this table).
		r("::/128", classForbidden, "unspecified"),
		r("::1/128", classLoopback, "loopback"),
		r("fe80::/10", classPrivate, "link-local"),
		r("fec0::/10", classPrivate, "site-local"),
		r("fc00::/7", classPrivate, "unique-local"),
		r("64:ff9b:1::/48", classPrivate, "local-use NAT64"),
		r("2001::/32", classPrivate, "Teredo"),
		r("100::/64", classForbidden, "discard-only"),
		r("2001:db8::/32", classForbidden, "documentation"),
		r("ff00::/8", classForbidden, "multicast"),
	}
}()

var (
	nat64Prefix    = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour      = netip.MustParsePrefix("2002::/16")
	v4CompatPrefix = netip.MustParsePrefix("::/96")
)

// classify returns ip's class and, unless public, what it is.
func classify(ip netip.Addr) (addrClass, string) {
	ip = ip.WithZone("").Unmap()
	if ip.Is6() {
		b := ip.As16()
		var embedded netip.Addr
		switch {
		case ip == netip.IPv6Unspecified() || ip == netip.IPv6Loopback():
		case v4CompatPrefix.Contains(ip):
			embedded = netip.AddrFrom4([4]byte(b[12:16]))
		case nat64Prefix.Contains(ip):
			embedded = netip.AddrFrom4([4]byte(b[12:16]))
		case sixToFour.Contains(ip):
			embedded = netip.AddrFrom4([4]byte(b[2:6]))
		}
		if embedded.IsValid() {
			class, what := classify(embedded)
			if class != classPublic {
				what += " (embedded in IPv6)"
			}
			return class, what
		}
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(ip) {
			return r.class, r.what
		}
	}
	return classPublic, ""
}

// checkAddr applies the address policy to ip.
func checkAddr(ip netip.Addr, allowPrivate, allowLoopback bool) error {
	class, what := classify(ip)
	switch {
	case class == classPublic,
		class == classLoopback && (allowLoopback || allowPrivate),
		class == classPrivate && allowPrivate:
		return nil
	}
	return fmt.Errorf("%w: %s is %s", ErrRefusedAddress, ip, what)
}
