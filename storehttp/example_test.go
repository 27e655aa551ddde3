package storehttp_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	store "github.com/go-store/store"
	"github.com/go-store/store/storehttp"
)

// The handler mounted under /api/ in an application's own mux.
func ExampleNewHandler() {
	st, err := store.New(":memory:")
	if err != nil {
		panic(err)
	}
	defer st.Close()

	mux := http.NewServeMux()
	mux.Handle("/api/", http.StripPrefix("/api", storehttp.NewHandler(st, storehttp.Options{})))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	req, _ := http.NewRequest("PUT", srv.URL+"/api/v1/groups/config/keys/theme", strings.NewReader("dark"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	fmt.Println(resp.Status, resp.Header.Get("ETag"))

	resp, err = http.Get(srv.URL + "/api/v1/groups/config/keys")
	if err != nil {
		panic(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(b))
	// Output:
	// 200 OK "1"
	// {"entries":[{"key":"theme","value":"dark","version":1,"expires_at":null}],"next":"","revision":1}
}
