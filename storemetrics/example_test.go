package storemetrics_test

import (
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"strings"

	store "github.com/go-store/store"
	"github.com/go-store/store/storemetrics"
)

// ExampleNew serves a store's metrics to Prometheus from an
// application's own HTTP server.
func ExampleNew() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	if err := st.Set("config", "theme", "dark"); err != nil {
		log.Fatal(err)
	}
	m := storemetrics.New(st)
	srv := httptest.NewServer(m.Handler()) // mux.Handle("/metrics", m.Handler())
	defer srv.Close()

	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		log.Fatal(err)
	}
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "gostore_revision ") {
			fmt.Print(line)
		}
	}
	// Output:
	// gostore_revision 1
}
