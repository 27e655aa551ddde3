package cli

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws a one-line progress bar on a terminal:
//
//	exporting [=========>          ]  47%  4700/10000 keys
//
// It redraws at most every tick, overwriting the line with a carriage
// return, and ends it with a newline in finish. A nil *progress draws
// nothing, so callers need not check whether they have a terminal.
type progress struct {
	w     io.Writer
	label string
	unit  string
	total int64 // what at counts towards; 0 if unknown
	count int64 // items processed (shown when total measures bytes)
	at    int64 // progress towards total
	bytes bool  // total is in bytes, not items
	now   func() time.Time
	last  time.Time
	tick  time.Duration
	done  bool
}

const barWidth = 30

// newBar returns a bar on w. Callers draw one only when isTerminal.
func newBar(w io.Writer, label, unit string, total int64, bytes bool) *progress {
	return &progress{w: w, label: label, unit: unit, total: total, bytes: bytes, now: time.Now, tick: 100 * time.Millisecond}
}

// add records n more items and, for a byte-measured bar, b more bytes.
func (p *progress) add(n, b int64) {
	if p == nil {
		return
	}
	p.count += n
	if p.bytes {
		p.at += b
	} else {
		p.at += n
	}
	if t := p.now(); t.Sub(p.last) >= p.tick {
		p.last = t
		p.draw()
	}
}

// finish draws the final state and ends the line. Only the first call
// does, so a command can defer it to end the line before its error is
// printed, and still call it earlier on success.
func (p *progress) finish() {
	if p == nil || p.done {
		return
	}
	p.done = true
	p.draw()
	fmt.Fprintln(p.w)
}

func (p *progress) draw() {
	var b strings.Builder
	b.WriteString("\r")
	b.WriteString(p.label)
	if p.total > 0 {
		frac := min(float64(p.at)/float64(p.total), 1)
		full := int(frac * barWidth)
		b.WriteString(" [")
		b.WriteString(strings.Repeat("=", full))
		if full < barWidth {
			b.WriteString(">")
			b.WriteString(strings.Repeat(" ", barWidth-full-1))
		}
		fmt.Fprintf(&b, "] %3d%%", int(frac*100))
	}
	if p.bytes || p.total == 0 {
		fmt.Fprintf(&b, "  %d %s", p.count, p.unit)
	} else {
		fmt.Fprintf(&b, "  %d/%d %s", p.count, p.total, p.unit)
	}
	b.WriteString("\x1b[K") // clear what a longer previous line left
	io.WriteString(p.w, b.String())
}
