package store

// QuotaConfig limits what a namespace may hold. A zero field is unlimited.
// Expired keys do not count, and overwriting an existing key never counts
// as a new key (though MaxBytes counts the change in its size).
type QuotaConfig struct {
	// MaxKeys bounds the live keys in the namespace.
	MaxKeys int
	// MaxGroups bounds the groups (with at least one live key).
	MaxGroups int
	// MaxBytes bounds the sum of the lengths of keys and values.
	MaxBytes int64
}

// quota is a scoped handle's limits.
type quota struct {
	cfg QuotaConfig
	ns  string
}
