package blobstore

// DefaultMaxSize is the size limit used when MaxSize is not given: 25 MiB.
const DefaultMaxSize int64 = 25 << 20

// Option configures a store created by NewFS.
type Option func(*config)

type config struct {
	maxSize int64
}

func defaultConfig() config {
	return config{maxSize: DefaultMaxSize}
}

// MaxSize sets the largest blob Put accepts, in bytes. The default is
// DefaultMaxSize (25 MiB). A body of exactly n bytes is accepted; n+1 bytes
// is ErrTooLarge. NewFS rejects n <= 0.
func MaxSize(n int64) Option {
	return func(c *config) { c.maxSize = n }
}
