// Package logtest holds a log destination that the tests of several
// packages share: a logger's goroutines write it while the test reads. It
// is internal: only docket's tests use it.
package logtest
