// Command quickstart opens ./quickstart.db, writes, reads, sets a TTL and
// prints what it finds: the shortest tour of go-store.
package main

import (
	"fmt"
	"log"
	"time"

	store "github.com/go-store/store"
)

func main() {
	st, err := store.New("quickstart.db")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	if err := st.Set("config", "theme", "dark"); err != nil {
		log.Fatal(err)
	}
	if err := st.SetWithTTL("session", "token", "abc123", 10*time.Minute); err != nil {
		log.Fatal(err)
	}

	theme, err := st.Get("config", "theme")
	if err != nil {
		log.Fatal(err)
	}
	ttl, err := st.TTL("session", "token")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("config/theme = %s\n", theme)
	fmt.Printf("session/token expires in %v\n", ttl.Round(time.Second))

	groups, err := st.Groups("")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("groups: %v\n", groups)
}
