package webhook

import (
	"errors"
	"testing"
	"time"
)

// The dial hook sees the resolved address, whatever name led to it; this is
// what defeats DNS rebinding (a name that resolved to a public address at
// registration and to 169.254.169.254 at delivery).
func TestDialControlChecksResolvedAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		network, addr               string
		allowPrivate, allowLoopback bool
		ok                          bool
	}{
		{"tcp4", "93.184.216.34:443", false, false, true},
		{"tcp6", "[2606:2800:220:1:248:1893:25c8:1946]:443", false, false, true},
		{"tcp4", "169.254.169.254:80", false, false, false},
		{"tcp4", "10.1.2.3:443", false, false, false},
		{"tcp4", "100.100.100.200:80", false, false, false}, // Alibaba metadata, CGNAT
		{"tcp4", "127.0.0.1:8080", false, false, false},
		{"tcp4", "127.0.0.1:8080", false, true, true},
		{"tcp4", "10.1.2.3:443", false, true, false},
		{"tcp4", "10.1.2.3:443", true, false, true},
		{"tcp6", "[::1]:80", false, false, false},
		{"tcp6", "[::ffff:127.0.0.1]:80", false, false, false},
		{"tcp6", "[fe80::1%eth0]:80", false, false, false},
		{"tcp6", "[fd12:3456::1]:80", false, false, false},
		{"tcp4", "0.0.0.0:80", true, true, false},
		{"udp4", "93.184.216.34:53", false, false, false},
		{"tcp4", "not-an-address", true, true, false},
	}
	for _, tc := range tests {
		c := NewClient(AllowPrivate(tc.allowPrivate), AllowLoopback(tc.allowLoopback))
		err := c.control(tc.network, tc.addr, nil)
		if tc.ok && err != nil {
			t.Errorf("control(%s, %s, private=%v, loopback=%v) = %v, want nil", tc.network, tc.addr, tc.allowPrivate, tc.allowLoopback, err)
		}
		if !tc.ok && !errors.Is(err, ErrRefusedAddress) {
			t.Errorf("control(%s, %s, private=%v, loopback=%v) = %v, want ErrRefusedAddress", tc.network, tc.addr, tc.allowPrivate, tc.allowLoopback, err)
		}
	}
}

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for v, want := range map[string]time.Duration{
		"":                              0,
		"7":                             7 * time.Second,
		" 30 ":                          30 * time.Second,
		"0":                             0,
		"-5":                            0,
		"1.5":                           0,
		"999999999999999999":            MaxRetryAfter,
		"Fri, 02 Jan 2026 03:05:05 GMT": time.Minute,
		"Fri, 02 Jan 2026 03:00:00 GMT": 0, // in the past
		"Sat, 02 Jan 2027 03:00:00 GMT": MaxRetryAfter,
		"tomorrow":                      0,
	} {
		if got := parseRetryAfter(v, now); got != want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	c := NewClient(Timeout(0), MaxResponseBytes(-1), UserAgent(""))
	want := config{timeout: 10 * time.Second, maxResponseBytes: 64 << 10, userAgent: "docket-webhooks/1"}
	if c.cfg != want {
		t.Fatalf("defaults %+v, want %+v", c.cfg, want)
	}
}
