//go:build !unix

package blobstore

import "os"

// tryLock is not supported here: a store uses its own temp dir, and never
// sweeps another's (a crashed store's temp files stay behind).
func tryLock(*os.File) (bool, error) { return false, errLockUnsupported }
