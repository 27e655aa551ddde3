package store

import (
	"regexp"
	"sync"
	"sync/atomic"
)

// validNamespace is the contract's namespace syntax. It excludes ':', so
// no namespace is a prefix of another's stored groups ("a:" is not a
// prefix of "a-b:").
var validNamespace = regexp.MustCompile(`^[a-zA-Z0-9-]+$`)

// ScopedStore is a view of a [Store] confined to one namespace, for handing
// to a tenant. It has the Store's whole method set (the methods listed
// under the embedded handle, plus [ScopedStore.Transaction]), implemented
// by the same code with group names mapped: group g is stored as
// "namespace:g". Everything it returns — groups, entries, events — uses
// the tenant's own group names, and no argument, prefix or pattern can
// reach outside the namespace. It is safe for concurrent use. Closing
// its Store closes it; [ScopedStore.Close] closes it alone.
type ScopedStore struct {
	handle
	namespace string
}

// ScopedTx is a transaction opened by [ScopedStore.Transaction]: a [Tx]
// confined to the namespace, with its quota.
type ScopedTx struct {
	handle
}

// NewScoped returns a handle on st confined to namespace, which must match
// ^[a-zA-Z0-9-]+$ (else [ErrInvalidNamespace]) and be at most
// [Limits.MaxKeyBytes] long (else an error matching both [ErrKeyTooLong]
// and ErrInvalidNamespace). On a closed store it returns a handle whose
// every method returns [ErrClosed], like the Store's own; a nil st is an
// error matching [ErrInvalidArgument].
func NewScoped(st *Store, namespace string) (*ScopedStore, error) {
	return NewScopedWithQuota(st, namespace, QuotaConfig{})
}

// NewScopedWithQuota is like [NewScoped] with limits on what the namespace
// may hold; see [QuotaConfig]. Writes that would exceed a limit fail with a
// [*QuotaError] matching [ErrQuotaExceeded] and change nothing.
func NewScopedWithQuota(st *Store, namespace string, q QuotaConfig) (*ScopedStore, error) {
	if st == nil {
		return nil, errorf("store: scope %q: nil *Store: %w", namespace, ErrInvalidArgument)
	}
	if err := CheckNamespace(namespace); err != nil {
		return nil, err
	}
	if lim := st.e.cfg.limits.MaxKeyBytes; lim > 0 && len(namespace) > lim {
		return nil, errorf("store: scope: namespace is %d bytes, limit %d: %w (%w)", len(namespace), lim, ErrKeyTooLong, ErrInvalidNamespace)
	}
	if q.MaxKeys < 0 || q.MaxGroups < 0 || q.MaxBytes < 0 {
		return nil, errorf("store: scope %q: negative quota %+v", namespace, q)
	}
	ss := &ScopedStore{handle: handle{reader: reader{e: st.e, ns: namespace + ":", scope: &scopeState{}}}, namespace: namespace}
	if q != (QuotaConfig{}) {
		ss.quota = &quota{cfg: q, ns: namespace}
	}
	return ss, nil
}

// CheckNamespace reports whether ns can name a namespace: it must match
// ^[a-zA-Z0-9-]+$, else the error wraps [ErrInvalidNamespace]. It does not
// know a store's limits: [NewScoped] also checks the length against
// [Limits.MaxKeyBytes].
func CheckNamespace(ns string) error {
	if !validNamespace.MatchString(ns) {
		return errorf("store: namespace %q: want letters, digits and '-': %w", ns, ErrInvalidNamespace)
	}
	return nil
}

// Close revokes the handle: afterwards every method of ss, and of the
// views and transactions it opens, returns [ErrClosed]; the watchers made
// through it are closed and its OnChange callbacks unregistered. A
// transaction or view already running on it finishes. The Store and its
// other handles, including other ScopedStores of the same namespace, are
// not affected: a service can end one tenant's session this way. Close
// is idempotent and returns nil.
func (ss *ScopedStore) Close() error {
	if ss.scope != nil { // nil for a zero ScopedStore, which has nothing to close
		ss.scope.close()
	}
	return nil
}

// scopeState is what the copies of one ScopedStore's handle share:
// whether it is closed, and how to end the subscriptions made through it.
type scopeState struct {
	closed atomic.Bool
	mu     sync.Mutex
	subs   map[any]func() // a *Watcher or *callback → what ends it
}

// track records how to end a subscription. If the handle was closed
// meanwhile, it ends the subscription at once instead.
func (s *scopeState) track(sub any, end func()) {
	s.mu.Lock()
	if s.closed.Load() {
		s.mu.Unlock()
		end()
		return
	}
	if s.subs == nil {
		s.subs = map[any]func(){}
	}
	s.subs[sub] = end
	s.mu.Unlock()
}

// forget drops a subscription that was ended otherwise.
func (s *scopeState) forget(sub any) {
	s.mu.Lock()
	delete(s.subs, sub)
	s.mu.Unlock()
}

// close marks the handle closed and ends its subscriptions.
func (s *scopeState) close() {
	s.mu.Lock()
	s.closed.Store(true)
	subs := s.subs
	s.subs = nil
	s.mu.Unlock()
	for _, end := range subs {
		end()
	}
}

// Namespace returns the handle's namespace.
func (ss *ScopedStore) Namespace() string { return ss.namespace }

// Transaction is [Store.Transaction] confined to the namespace.
func (ss *ScopedStore) Transaction(fn func(tx *ScopedTx) error) error {
	if fn == nil {
		return ss.handle.transaction(nil)
	}
	return ss.handle.transaction(func(h *handle) error { return fn(&ScopedTx{*h}) })
}
