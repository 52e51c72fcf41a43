package scratch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func setup(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "tmp")
}

func exists(t *testing.T, path string) bool {
	t.Helper()
	_, err := os.Lstat(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return err == nil
}

func write(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("a copy of an upload"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSweepTakesOnlyWhatNobodyHolds: a directory whose owner lives stays
// with its files; one whose owner died (its lock free) goes, after
// recover saw it, and so do files without a lock at all.
func TestSweepTakesOnlyWhatNobodyHolds(t *testing.T) {
	t.Parallel()
	root := setup(t)
	live, err := Claim(root)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Remove()
	dead, err := Claim(root)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(live.Path(), "in.pdf"))
	write(t, filepath.Join(dead.Path(), "in.pdf"))
	write(t, filepath.Join(root, "docket-s3-put-1"))
	dead.Abandon()

	own, err := Claim(root)
	if err != nil {
		t.Fatal(err)
	}
	defer own.Remove()
	write(t, filepath.Join(own.Path(), "in.pdf"))
	var recovered []string
	if err := Sweep(root, own.Path(), func(dir string) error {
		recovered = append(recovered, dir)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(recovered, []string{dead.Path()}) {
		t.Fatalf("recovered %v, want only the dead owner's %s", recovered, dead.Path())
	}
	for _, gone := range []string{dead.Path(), dead.Path() + LockSuffix, filepath.Join(root, "docket-s3-put-1")} {
		if exists(t, gone) {
			t.Errorf("%s is still there", gone)
		}
	}
	for _, kept := range []string{filepath.Join(live.Path(), "in.pdf"), live.Path() + LockSuffix, filepath.Join(own.Path(), "in.pdf"), own.Path() + LockSuffix} {
		if !exists(t, kept) {
			t.Errorf("%s was swept", kept)
		}
	}
}

// TestSweepKeepsWhatRecoverRefused: a dead directory whose recovery
// failed is left, with its lock file, for the next sweeper.
func TestSweepKeepsWhatRecoverRefused(t *testing.T) {
	t.Parallel()
	root := setup(t)
	dead, err := Claim(root)
	if err != nil {
		t.Fatal(err)
	}
	dead.Abandon()
	refused := errors.New("journal unreadable")
	if err := Sweep(root, "", func(string) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("Sweep: %v, want the recovery's error", err)
	}
	if !exists(t, dead.Path()) || !exists(t, dead.Path()+LockSuffix) {
		t.Fatal("a directory whose recovery failed was removed")
	}
}

// TestRemoveLeavesNothing: an owner that ends in order leaves neither its
// directory nor its lock file, and the next claim gets another name.
func TestRemoveLeavesNothing(t *testing.T) {
	t.Parallel()
	root := setup(t)
	d, err := Claim(root)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(d.Path(), "in.pdf"))
	if err := d.Remove(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Fatalf("%d entries left under %s, the first %s", len(entries), root, entries[0].Name())
	}
	if err := Sweep(filepath.Join(root, "never-made"), "", nil); err != nil {
		t.Fatalf("sweeping a root that does not exist: %v", err)
	}
}

// TestClaimAfterASweeperTookIt: an owner that starts while another
// sweeps may have its lock file taken and removed between creating and
// locking it (the sweeper saw it unlocked). It must then claim another
// directory, not one whose lock file is gone and which the next sweeper
// would take for a stray.
func TestClaimAfterASweeperTookIt(t *testing.T) {
	t.Parallel()
	root := setup(t)
	if err := os.MkdirAll(root, 0o750); err != nil {
		t.Fatal(err)
	}
	var swept []string
	d, err := claimRacing(root, func(path string) {
		if len(swept) == 0 {
			swept = append(swept, path)
			name := strings.TrimSuffix(filepath.Base(path), LockSuffix)
			if err := sweepIfFree(root, name, nil); err != nil {
				t.Errorf("sweep: %v", err)
			}
		}
	})
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	defer d.Remove()
	if len(swept) != 1 {
		t.Fatalf("the race was not staged: %v", swept)
	}
	if _, err := os.Stat(swept[0]); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the sweeper did not remove %s: %v", swept[0], err)
	}
	if d.Path()+LockSuffix == swept[0] {
		t.Fatalf("claimed %s, whose lock file the sweeper removed", d.Path())
	}
	if same, err := samePath(d.lock, d.Path()+LockSuffix); err != nil || !same {
		t.Fatalf("the claimed directory's lock file is not the one held: %v, %v", same, err)
	}
	// A sweeper now leaves it alone.
	if err := Sweep(root, "", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d.Path()); err != nil {
		t.Fatalf("a sweeper removed the claimed directory: %v", err)
	}
}

// TestClaimIsAbsolute: a relative root (a relative --data-dir) still gives
// an absolute directory, which programs run elsewhere can use. Not
// parallel: it changes the working directory.
func TestClaimIsAbsolute(t *testing.T) {
	wd := t.TempDir()
	t.Chdir(wd)
	d, err := Claim("tmp")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Remove()
	if !filepath.IsAbs(d.Path()) || filepath.Dir(d.Path()) != filepath.Join(wd, "tmp") {
		t.Fatalf("claimed %s under %s", d.Path(), wd)
	}
}
