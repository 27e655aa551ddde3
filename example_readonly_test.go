package store_test

import (
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	store "github.com/go-store/store"
)

// A tool reads the settings that an application keeps in a file, and
// cannot change them, while the application goes on writing.
func ExampleWithReadOnly() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "settings.db")

	app, err := store.New(path)
	if err != nil {
		log.Fatal(err)
	}
	defer app.Close()
	if err := app.Set("config", "theme", "dark"); err != nil {
		log.Fatal(err)
	}

	tool, err := store.New(path, store.WithReadOnly())
	if err != nil {
		log.Fatal(err)
	}
	defer tool.Close()
	theme, err := tool.Get("config", "theme")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("theme:", theme)

	err = tool.Set("config", "theme", "light")
	fmt.Println(err)
	fmt.Println("read-only:", errors.Is(err, store.ErrReadOnly))
	// Output:
	// theme: dark
	// store: set "config"/"theme": read-only
	// read-only: true
}
