package main

import (
	"strings"
	"testing"

	"github.com/docket/docket/eventstore"
)

// TestMaxRecordBytesValidate: zero means the documented default, and
// values the event store would refuse, or that no broker takes, are
// refused with the flag's name.
func TestMaxRecordBytesValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want int
		err      string
	}{
		{0, eventstore.DefaultMaxRecordBytes, ""},
		{1 << 20, 1 << 20, ""},
		{64<<10 - 1, 0, "--max-record-bytes must be between"},
		{1<<30 + 1, 0, "--max-record-bytes must be between"},
	} {
		cfg := testConfig(t)
		cfg.MaxRecordBytes = tc.in
		err := cfg.Validate()
		switch {
		case tc.err == "" && (err != nil || cfg.MaxRecordBytes != tc.want):
			t.Errorf("%d: %v, MaxRecordBytes %d, want %d", tc.in, err, cfg.MaxRecordBytes, tc.want)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%d: %v, want an error with %q", tc.in, err, tc.err)
		}
	}
}
