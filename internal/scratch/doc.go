// Package scratch hands each live process a directory of temporary files
// of its own under a shared root, and removes what dead processes left
// there.
//
// A process that writes temporary files (a blob store's partial uploads,
// the copies of an upload that poppler and Tesseract read) and is killed,
// or ends while it writes them, cannot remove them itself. The next one to
// start on the same root does, without touching the files of another that
// is still alive: each directory has a lock file beside it, held for as
// long as its owner lives, and only directories whose lock nobody holds
// are swept.
package scratch
