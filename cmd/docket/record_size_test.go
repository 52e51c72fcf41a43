package main

import (
	"fmt"
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
		cfg := validated(t, fmt.Sprint(tc.in), func(c *Config) { c.MaxRecordBytes = tc.in }, tc.err)
		if tc.err == "" && cfg.MaxRecordBytes != tc.want {
			t.Errorf("%d: MaxRecordBytes %d, want %d", tc.in, cfg.MaxRecordBytes, tc.want)
		}
	}
}

// validated applies set to a test configuration and validates it: with
// wantErr "" it must pass, else fail with an error that contains wantErr.
// It returns the configuration as Validate left it (defaults filled in).
func validated(t *testing.T, name string, set func(*Config), wantErr string) Config {
	t.Helper()
	cfg := testConfig(t)
	set(&cfg)
	err := cfg.Validate()
	switch {
	case wantErr == "" && err != nil:
		t.Errorf("%s: %v", name, err)
	case wantErr != "" && (err == nil || !strings.Contains(err.Error(), wantErr)):
		t.Errorf("%s: %v, want an error with %q", name, err, wantErr)
	}
	return cfg
}
