package blobstore

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
)

// copyHashed streams r into w while hashing, reading at most maxSize+1 bytes
// so an oversized body is detected without consuming the rest of it. It
// returns the size and SHA-256 of what was copied, ErrEmpty for an empty
// body and ErrTooLarge past maxSize. Cancelling ctx is noticed between
// reads. Every Store's Put goes through it, so all backends enforce the
// limit identically.
func copyHashed(ctx context.Context, w io.Writer, r io.Reader, maxSize int64) (int64, []byte, error) {
	h := sha256.New()
	lr := io.LimitReader(r, maxSize+1)
	buf := make([]byte, copyBuf)
	var size int64
	for {
		if err := ctx.Err(); err != nil {
			return 0, nil, fmt.Errorf("blobstore: put: %w", err)
		}
		n, rerr := lr.Read(buf)
		if n > 0 {
			if size+int64(n) > maxSize {
				return 0, nil, fmt.Errorf("%w (limit %d bytes)", ErrTooLarge, maxSize)
			}
			size += int64(n)
			h.Write(buf[:n])
			if _, err := w.Write(buf[:n]); err != nil {
				return 0, nil, fmt.Errorf("blobstore: write temp file: %w", err)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return 0, nil, fmt.Errorf("blobstore: read: %w", rerr)
		}
	}
	if size == 0 {
		return 0, nil, ErrEmpty
	}
	return size, h.Sum(nil), nil
}
