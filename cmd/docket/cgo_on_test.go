//go:build cgo

package main

// builtWithCgo is what the build tags say, independently of linksCgo's
// reading of the build information.
const builtWithCgo = true
