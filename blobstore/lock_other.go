//go:build !unix

package blobstore

import (
	"errors"
	"os"
)

var errLockUnsupported = errors.New("blobstore: file locks not supported")

// tryLock is not supported here: a store uses its own temp dir, and never
// sweeps another's (a crashed store's temp files stay behind).
func tryLock(*os.File) (bool, error) { return false, errLockUnsupported }
