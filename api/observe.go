package api

import (
	"net/http"
	"time"

	"github.com/gorilla/mux"
	"github.com/rs/zerolog"
)

// Observer receives what the API counts (cmd/docket passes the node's
// *metrics.Metrics). Config.Observer nil counts nothing.
type Observer interface {
	// HTTPRequest is called once per answered request with the matched
	// route template ("unmatched" when no route matched).
	HTTPRequest(route, method string, status int, took time.Duration)
	// RateLimited is called for every 429, naming the limit ("general" or
	// "status").
	RateLimited(limit string)
}

type keyRoute struct{}

// reqState is what the inner router and handlers tell the outer
// middleware: the matched route and the fields already on the log lines.
type reqState struct {
	route string
	noted map[string]string
}

func stateOf(r *http.Request) *reqState {
	st, _ := r.Context().Value(keyRoute{}).(*reqState)
	return st
}

// nameRoute runs inside the router, where the matched route is known: it
// records the route template for the access log and metrics, and puts the
// ids a path names (batch, document) on the request's log lines.
func nameRoute(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cur := mux.CurrentRoute(r); cur != nil {
			if tmpl, err := cur.GetPathTemplate(); err == nil {
				if st := stateOf(r); st != nil {
					st.route = tmpl
				}
				vars := mux.Vars(r)
				if b := vars["batch_name"]; b != "" {
					annotate(r, "batch", b)
				}
				if id := vars["id"]; id != "" && tmpl == "/v1/documents/{id}" {
					annotate(r, "document", id)
				}
				if id := vars["notification_id"]; id != "" {
					annotate(r, "notification", id)
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// annotate adds a field to every later log line of the request, the access
// log line included, once per key and value (a stream resolves its job for
// every state). A request is handled by one goroutine at a time, so
// updating its logger in place is safe.
func annotate(r *http.Request, key, value string) {
	if st := stateOf(r); st != nil {
		if st.noted[key] == value {
			return
		}
		st.noted[key] = value
	}
	logger(r).UpdateContext(func(c zerolog.Context) zerolog.Context { return c.Str(key, value) })
}

func (s *Server) observeRequest(route, method string, status int, took time.Duration) {
	if s.cfg.Observer != nil {
		s.cfg.Observer.HTTPRequest(route, method, status, took)
	}
}

func (s *Server) observeRateLimited(l *limiter) {
	if s.cfg.Observer == nil {
		return
	}
	name := "general"
	if l == s.limits {
		name = "status"
	}
	s.cfg.Observer.RateLimited(name)
}

// metricsHandler serves Config.Metrics, or an empty exposition when the
// server has none.
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	if s.cfg.Metrics == nil {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		return
	}
	s.cfg.Metrics.ServeHTTP(w, r)
}
