package store_test

import (
	"fmt"
	"log"
	"strconv"

	store "github.com/go-store/store"
)

func ExampleStore_View() {
	st, err := store.New(":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	// A transfer writes both accounts in one transaction.
	if err := st.Transaction(func(tx *store.Tx) error {
		if err := tx.Set("accounts", "alice", "70"); err != nil {
			return err
		}
		return tx.Set("accounts", "bob", "30")
	}); err != nil {
		log.Fatal(err)
	}

	// Reading the two balances through one View gives a consistent pair:
	// a transfer committed between the two reads would not be seen, so
	// the total always adds up. Inside the function use only v, never st.
	var alice, bob int
	err = st.View(func(v *store.View) error {
		balance := func(key string) (int, error) {
			s, err := v.Get("accounts", key)
			if err != nil {
				return 0, err
			}
			return strconv.Atoi(s)
		}
		var err error
		if alice, err = balance("alice"); err != nil {
			return err
		}
		bob, err = balance("bob")
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("alice:", alice, "bob:", bob, "total:", alice+bob)
	// Output:
	// alice: 70 bob: 30 total: 100
}
