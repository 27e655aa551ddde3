package busypoll

import "testing"

// skipped runs reads until one polls and returns how many it skipped.
func skipped(b *backoff) int {
	n := 0
	for !b.poll() {
		n++
	}
	return n
}

// TestBackoffWastedPolls: a connection starts out polling every read;
// once most of its polls run out, polls are spaced out exponentially up
// to maxSkip reads apart.
func TestBackoffWastedPolls(t *testing.T) {
	b := newBackoff()
	var got []int
	for range 38 {
		if n := skipped(&b); n != 0 {
			t.Fatalf("a read skipped %d reads after %d wasted polls", n, len(got))
		}
		b.record(false)
		got = append(got, 0)
	}
	got = got[:0]
	for range 13 {
		b.record(false)
		got = append(got, skipped(&b))
	}
	// After 38 wasted polls the average is still above a quarter; from
	// the 39th on, the connection backs off.
	want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 1024, 1024}
	if len(got) != len(want) {
		t.Fatalf("reads skipped before each poll: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("reads skipped before each poll: %v, want %v", got, want)
		}
	}

	// Polls that pay bring polling back: each halves the spacing and
	// lets the next read poll, and once half of the recent polls pay
	// again every read polls.
	hits := 0
	for b.n > 0 || b.score < payScore {
		b.record(true)
		hits++
		if n := skipped(&b); n != 0 {
			t.Fatalf("the read after a paying poll skipped %d", n)
		}
	}
	if hits > 40 {
		t.Errorf("%d paying polls to resume polling, want at most 40", hits)
	}
	for range 4 {
		b.record(true)
	}
	b.record(false)
	if n := skipped(&b); n != 0 {
		t.Errorf("one wasted poll after a run of paying ones skipped %d reads", n)
	}
}

// TestBackoffMostlyPaying: polls that pay nine times in ten, as on a
// loopback connection with a core to spare, never skip a read, not even
// when the tenth come in bursts of twenty; polls that pay once in ten,
// as on a machine with no core to spare, poll only a few times in a
// thousand reads.
func TestBackoffMostlyPaying(t *testing.T) {
	b := newBackoff()
	for i := range 2000 {
		if n := skipped(&b); n != 0 {
			t.Fatalf("poll %d, nine in ten paying, came after %d skipped reads", i, n)
		}
		b.record(i%200 >= 20)
	}
	b = newBackoff()
	polls, reads := 0, 0
	for reads < 100_000 {
		reads += skipped(&b) + 1
		b.record(polls%10 == 9)
		polls++
	}
	if polls*1000 > 5*reads {
		t.Errorf("%d polls in %d reads with one in ten paying; want under 5 in 1000", polls, reads)
	}
}
