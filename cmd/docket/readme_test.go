package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// TestREADMEFlags keeps the README's flag table complete: every flag of
// `docket serve` must be documented there as `--name`.
func TestREADMEFlags(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var cfg Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg.bindFlags(fs)
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if !strings.Contains(string(readme), "`--"+f.Name+"`") {
			t.Errorf("--%s is not in README's flag table", f.Name)
		}
	})
	if n == 0 {
		t.Fatal("serve binds no flags")
	}
}
