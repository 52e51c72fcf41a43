package blobstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// journalDirName is where a store keeps its journal, inside its temporary
// directory: what the sweep of a dead store's directory must recover first.
const journalDirName = "journal"

// recoverJournal restores the blobs recorded in the journal of a dead
// store (its temporary directory, dead): every record whose blob is
// missing, of another size or of other bytes (a machine crash can keep a
// renamed file's name but not its data) is written again, and all of them
// are made durable before this returns, so that the caller may remove the
// journal.
func (s *FS) recoverJournal(dead string) (int, error) {
	segs, err := filepath.Glob(filepath.Join(dead, journalDirName, "journal-*"))
	if err != nil {
		return 0, fmt.Errorf("blobstore: list journal: %w", err)
	}
	var wrote []string
	for _, name := range segs {
		err := scanSegment(name, func(sum, data []byte) error {
			final := s.path(hex.EncodeToString(sum))
			if intact(final, sum, len(data)) {
				return nil
			}
			if err := s.rewrite(final, data); err != nil {
				return err
			}
			wrote = append(wrote, final)
			return nil
		})
		if err != nil {
			return 0, err
		}
	}
	if len(wrote) == 0 {
		return 0, nil
	}
	d, err := os.Open(s.dir)
	if err != nil {
		return 0, fmt.Errorf("blobstore: open store dir: %w", err)
	}
	defer d.Close()
	if err := checkpointFiles(d, wrote); err != nil {
		return 0, fmt.Errorf("blobstore: sync recovered blobs: %w", err)
	}
	return len(wrote), nil
}

// intact reports whether path holds exactly the bytes whose SHA-256 is sum.
func intact(path string, sum []byte, size int) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(size) {
		return false
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return false
	}
	return bytes.Equal(h.Sum(nil), sum)
}

// rewrite puts data at path through a temporary file of this store; the
// caller makes it durable.
func (s *FS) rewrite(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Join(s.tmp, "00"), "recover-*")
	if err != nil {
		return fmt.Errorf("blobstore: create temp file: %w", err)
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("blobstore: recover %s: %w", filepath.Base(path), err)
	}
	return nil
}

// scanSegment calls fn with the key and bytes of each record of the
// segment's current lap, in order, and stops at the first that is not one:
// another magic or epoch (zeros, an earlier lap), a length past the end,
// or bytes whose SHA-256 is not the key (a record torn by a crash).
func scanSegment(name string, fn func(sum, data []byte) error) error {
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("blobstore: read journal: %w", err)
	}
	if len(b) < segHeader || binary.LittleEndian.Uint32(b) != segMagic {
		return nil
	}
	epoch := binary.LittleEndian.Uint64(b[4:])
	for off := segHeader; off+recHeader <= len(b); {
		h := b[off : off+recHeader]
		if binary.LittleEndian.Uint32(h) != recMagic || binary.LittleEndian.Uint64(h[4:]) != epoch {
			return nil
		}
		n := int(binary.LittleEndian.Uint32(h[12:]))
		if n == 0 || n > len(b)-off-recHeader {
			return nil
		}
		sum, data := h[16:recHeader], b[off+recHeader:off+recHeader+n]
		if got := sha256.Sum256(data); !bytes.Equal(got[:], sum) {
			return nil
		}
		if err := fn(sum, data); err != nil {
			return err
		}
		off += recHeader + n
	}
	return nil
}
