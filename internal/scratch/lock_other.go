//go:build !unix

package scratch

import "os"

// tryLock is not supported here: an owner uses its own directory, and
// never sweeps another's (what a crashed one wrote stays behind).
func tryLock(*os.File) (bool, error) { return false, errLockUnsupported }
