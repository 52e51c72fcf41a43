package api

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// readyBrokerWait bounds the broker probe of one /readyz, below the 3 s
// of `docket health`.
const readyBrokerWait = 2 * time.Second

// readyz answers 200 when the node can serve: its components run, its views
// caught up with the log as it was at start, the broker answers, and the
// views trail the log by at most ReadyMaxLag events on every partition. The
// body says why not, with the applied offsets, the log's end offsets and
// the lag per partition, so an operator (or the console) sees where a node
// stands; the cluster tests compare the applied offsets of nodes.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	body := map[string]any{"status": "ready"}
	var reasons []string
	if s.ready != nil {
		if err := s.ready(r.Context()); err != nil {
			reasons = append(reasons, err.Error())
		}
	}
	applied := map[string]int64{}
	if s.views != nil {
		for p, o := range s.views.Offsets() {
			applied[strconv.Itoa(int(p))] = o
		}
	}
	body["applied"] = applied
	if s.views != nil && s.store != nil {
		ctx, cancel := context.WithTimeout(r.Context(), readyBrokerWait)
		end, err := s.store.EndOffsets(ctx)
		cancel()
		if err != nil {
			body["broker"] = "unreachable"
			reasons = append(reasons, "broker unreachable: "+err.Error())
		} else {
			body["broker"] = "ok"
			ends, lags := map[string]int64{}, map[string]int64{}
			for p, o := range end {
				ends[strconv.Itoa(int(p))] = o
			}
			var worst int64
			worstP := int32(-1)
			for p, l := range s.views.Lag(end) {
				lags[strconv.Itoa(int(p))] = l
				if l > worst {
					worst, worstP = l, p
				}
			}
			body["end"], body["lag"], body["max_lag"] = ends, lags, s.cfg.ReadyMaxLag
			if worst > s.cfg.ReadyMaxLag {
				reasons = append(reasons, fmt.Sprintf("projections %d events behind on partition %d (limit %d)", worst, worstP, s.cfg.ReadyMaxLag))
			}
		}
	}
	if len(reasons) > 0 {
		body["status"] = "not_ready"
		body["reason"] = reasons[0]
		body["reasons"] = reasons
		writeJSON(w, r, http.StatusServiceUnavailable, body)
		return
	}
	writeJSON(w, r, http.StatusOK, body)
}
