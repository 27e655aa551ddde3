package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// slowSubscriber returns a server's pub/sub, a client and a subscriber
// for it with a queue of capacity n that nothing drains, not yet
// registered, and the buffer the server logs to.
func slowSubscriber(t *testing.T, n int) (*pubsub, *client, *subscriber, *bytes.Buffer) {
	_, s := newInternalServer(t)
	logs := &bytes.Buffer{}
	s.log = slog.New(slog.NewTextHandler(logs, nil))
	sub := &subscriber{chans: map[string]string{}, pats: map[string]string{}, out: make(chan []byte, n), done: make(chan struct{})}
	return s.ps, newClient(s, nil), sub, logs
}

// TestSlowSubscriberDroppedOnce checks that a subscriber whose queue
// overflows is dropped once, with one warning, however many messages
// keep coming for it before the drop has run. Before, every further
// message logged again and started another drop: 411 warnings for 16
// subscribers in a soak test.
func TestSlowSubscriberDroppedOnce(t *testing.T) {
	ps, c, sub, logs := slowSubscriber(t, 2)
	// Hold the lock, so that the drop the first overflow starts waits
	// until every message has been sent.
	ps.mu.Lock()
	ps.subs[c] = sub
	ps.addLocked(c, sub, "ch", false)
	for range 100 {
		ps.sendLocked(c, func(r *reply) { r.bulk("m") })
	}
	ps.mu.Unlock()
	if n := strings.Count(logs.String(), "fell behind"); n != 1 {
		t.Errorf("%d warnings for one slow subscriber; want 1:\n%s", n, logs.String())
	}
	<-sub.done // dropped
}

// TestSubscriberBoundedByBytes: a subscriber that does not read is
// dropped once its queue holds subscriberMaxBytes, however few messages
// that is, so that large messages cannot pile up subscriberBuffer deep.
func TestSubscriberBoundedByBytes(t *testing.T) {
	ps, c, sub, logs := slowSubscriber(t, subscriberBuffer)
	msg := strings.Repeat("x", 64<<10)
	ps.mu.Lock()
	ps.subs[c] = sub
	ps.addLocked(c, sub, "ch", false)
	ps.mu.Unlock()
	const sent = 2 * subscriberMaxBytes / (64 << 10)
	if sent >= subscriberBuffer {
		t.Fatalf("%d messages would reach the count bound first", sent)
	}
	for range sent {
		ps.publish("", "ch", msg)
	}
	<-sub.done // dropped
	if n := strings.Count(logs.String(), "fell behind"); n != 1 {
		t.Errorf("%d warnings; want 1:\n%s", n, logs.String())
	}
	if q := sub.queued.Load(); q > subscriberMaxBytes || q < subscriberMaxBytes-(128<<10) {
		t.Errorf("%d bytes queued when dropped; want just under %d", q, subscriberMaxBytes)
	}
	var held int
	for len(sub.out) > 0 {
		held += len(<-sub.out)
	}
	if held > subscriberMaxBytes {
		t.Errorf("%d bytes were queued; want at most %d", held, subscriberMaxBytes)
	}
}

// TestResubscribeAnnouncesOnce: when the last subscriber leaves, the
// store subscription is ended on another goroutine; a subscriber that
// comes back before that has run must still get each notification once,
// not once from the old callback and once from the new.
func TestResubscribeAnnouncesOnce(t *testing.T) {
	st, s := newInternalServer(t)
	if !s.config.setNotify("KA") {
		t.Fatal("setNotify")
	}
	ps := s.ps
	var pending []func()
	ps.unregister = func(unreg func()) { pending = append(pending, unreg) } // run at the end
	defer func() {
		for _, f := range pending {
			f()
		}
	}()
	c := newClient(s, nil)
	sub := &subscriber{chans: map[string]string{}, pats: map[string]string{}, out: make(chan []byte, 16), done: make(chan struct{})}
	const ch = "__keyspace@0__:k"
	subscribe := func() {
		ps.mu.Lock()
		defer ps.mu.Unlock()
		ps.subs[c] = sub
		ps.addLocked(c, sub, ch, false)
		ps.listenLocked()
	}
	subscribe()
	ps.mu.Lock()
	ps.removeLocked(c, sub, ch, false)
	ps.listenLocked()
	ps.mu.Unlock()
	if len(pending) != 1 {
		t.Fatalf("%d store subscriptions being ended; want 1", len(pending))
	}
	subscribe() // the old callback is still registered
	if err := st.Set(strGroup, "k", "v"); err != nil {
		t.Fatal(err)
	}
	// OnChange callbacks have run by the time Set returns.
	if n := len(sub.out); n != 1 {
		t.Errorf("%d notifications of one SET; want 1", n)
	}
}
