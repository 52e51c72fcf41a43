package extract

import (
	"os"
	"testing"
)

// missing skips a test whose tools or files are absent on a developer's
// machine, but fails it in CI (CI set), where .ci/run installs Tesseract and
// poppler and the corpus sits beside the clone: there a skip would hide a
// broken set-up behind a green run.
func missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("required in CI: "+format, args...)
	}
	tb.Skipf(format, args...)
}
