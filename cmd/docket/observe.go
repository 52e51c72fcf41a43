package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// serveMetrics serves /metrics on --metrics-listen when it is set, so a
// worker-only node (which has no API listener) can be scraped too.
func (n *node) serveMetrics() error {
	if n.cfg.MetricsListen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", n.cfg.MetricsListen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", n.cfg.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", n.metrics.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	n.extra = append(n.extra, srv)
	n.metricsAddr = ln.Addr().String()
	n.goRun("metrics", func() error {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	n.log.Info().Str("addr", "http://"+ln.Addr().String()+"/metrics").Msg("metrics listening")
	return nil
}
