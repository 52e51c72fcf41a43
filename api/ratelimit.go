package api

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// limiter is a per-key (org or client address) GCRA (generic cell rate algorithm): it allows limit
// requests per window with bursts up to limit, keeping one timestamp per org.
// It is per node: with N API nodes an org may reach N × limit in total.
type limiter struct {
	limit    int
	interval time.Duration // one request's share of the window
	window   time.Duration
	now      func() time.Time

	mu    sync.Mutex
	tat   map[string]time.Time // theoretical arrival time per key
	swept time.Time
}

// maxIdleKeys is how many keys the limiter keeps before it forgets those
// whose bucket is full again (they would be admitted as new anyway), so
// a flood of distinct addresses cannot grow it without bound.
const maxIdleKeys = 10000

func newLimiter(limit int, window time.Duration) *limiter {
	return &limiter{limit: limit, window: window, interval: window / time.Duration(limit), now: time.Now, tat: map[string]time.Time{}}
}

// allow admits or refuses one request and reports what is left and when the
// bucket is full again.
func (l *limiter) allow(key string) (ok bool, remaining int, reset, retry time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.tat) > maxIdleKeys && now.Sub(l.swept) > l.interval {
		for k, t := range l.tat {
			if !t.After(now) {
				delete(l.tat, k)
			}
		}
		l.swept = now
	}
	tat := l.tat[key]
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(l.interval)
	if allowAt := next.Add(-l.window); allowAt.After(now) {
		return false, 0, tat.Sub(now), allowAt.Sub(now)
	}
	l.tat[key] = next
	remaining = int((l.window - next.Sub(now)) / l.interval)
	return true, remaining, next.Sub(now), 0
}

// limited wraps a status endpoint with the per-org status limit.
func (s *Server) limited(h http.HandlerFunc) http.HandlerFunc { return s.limitedBy(s.limits, h) }

// limitedBy applies one per-org limit and sets the RateLimit headers clients
// use to pace themselves; an inner, stricter limit overwrites them.
func (s *Server) limitedBy(l *limiter, h http.HandlerFunc) http.HandlerFunc {
	return s.limitedByKey(l, orgOf, h)
}

// limitedByKey is limitedBy for any key of the request.
func (s *Server) limitedByKey(l *limiter, keyOf func(*http.Request) string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ok, remaining, reset, retry := l.allow(keyOf(r))
		hd := w.Header()
		hd.Set("RateLimit-Limit", strconv.Itoa(l.limit))
		hd.Set("RateLimit-Remaining", strconv.Itoa(remaining))
		hd.Set("RateLimit-Reset", strconv.Itoa(int(math.Ceil(reset.Seconds()))))
		hd.Set("RateLimit-Policy", strconv.Itoa(l.limit)+";w="+strconv.Itoa(int(l.window.Seconds())))
		if !ok {
			hd.Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(retry.Seconds())))))
			s.observeRateLimited(l)
			writeError(w, r, ErrRateLimited)
			return
		}
		h(w, r)
	}
}
