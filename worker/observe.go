package worker

import (
	"time"

	"github.com/rs/zerolog"

	"github.com/docket/docket/domain"
)

// observe logs one finished run and reports it to the Observe hook; the
// last result event says how it ended.
func (w *Worker) observe(log *zerolog.Logger, phase string, results []domain.Event, took time.Duration) {
	if len(results) == 0 {
		return
	}
	outcome := "succeeded"
	switch results[len(results)-1].(type) {
	case *domain.DocumentFailed:
		outcome = "failed"
	case *domain.DocumentCanceled:
		outcome = "canceled"
	}
	log.Info().Str("phase", phase).Str("outcome", outcome).Dur("took", took).Msg("document processed")
	if w.cfg.observe != nil {
		w.cfg.observe(phase, outcome, took)
	}
}
