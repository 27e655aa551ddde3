package server

import (
	"fmt"
	"path/filepath"
	"testing"

	store "github.com/go-store/store"
	"github.com/tidwall/redcon"
)

// BenchmarkPipelineGet runs a pipeline of 16 GETs of existing keys through
// the command layer (execPipeline: parsing done, no network), next to its
// twin, the same 16 lookups in one store.View: the difference is what the
// server adds to each GET.
func BenchmarkPipelineGet(b *testing.B) {
	st, err := store.New(filepath.Join(b.TempDir(), "bench.db"), store.WithPurgeInterval(-1))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	keys := make([]string, 10000)
	err = st.Transaction(func(tx *store.Tx) error {
		for i := range keys {
			keys[i] = fmt.Sprintf("key:%012d", i)
			if err := tx.Set(strGroup, keys[i], "xxx"); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(st, Config{})
	if err != nil {
		b.Fatal(err)
	}
	const pipeline = 16
	b.Run("impl=server", func(b *testing.B) {
		c := newClient(s, nil)
		cmds := make([]redcon.Command, pipeline)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			for j := range cmds {
				cmds[j] = redcon.Command{Args: [][]byte{[]byte("GET"), []byte(keys[i%len(keys)])}}
				i++
			}
			if out := c.execPipeline(cmds, nil); len(out) == 0 {
				b.Fatal("no reply")
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/get")
	})
	b.Run("impl=view", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			err := st.View(func(v *store.View) error {
				for range pipeline {
					if _, err := v.GetEntry(strGroup, keys[i%len(keys)]); err != nil {
						return err
					}
					i++
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(i), "ns/get")
	})
}
