package worker

import (
	"time"

	"github.com/docket/docket/domain"
)

// observe reports one finished run to the Observe hook; the last result
// event says how it ended.
func (w *Worker) observe(phase string, results []domain.Event, took time.Duration) {
	if w.cfg.observe == nil || len(results) == 0 {
		return
	}
	outcome := "succeeded"
	switch results[len(results)-1].(type) {
	case *domain.DocumentFailed:
		outcome = "failed"
	case *domain.DocumentCanceled:
		outcome = "canceled"
	}
	w.cfg.observe(phase, outcome, took)
}
