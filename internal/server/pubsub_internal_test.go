package server

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestSlowSubscriberDroppedOnce checks that a subscriber whose queue
// overflows is dropped once, with one warning, however many messages
// keep coming for it before the drop has run. Before, every further
// message logged again and started another drop: 411 warnings for 16
// subscribers in a soak test.
func TestSlowSubscriberDroppedOnce(t *testing.T) {
	_, s := newInternalServer(t)
	var logs bytes.Buffer
	s.log = slog.New(slog.NewTextHandler(&logs, nil))
	ps := s.ps
	c := newClient(s, nil)
	sub := &subscriber{chans: map[string]string{}, pats: map[string]string{}, out: make(chan []byte, 2), done: make(chan struct{})}
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
