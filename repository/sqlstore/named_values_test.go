package sqlstore

import (
	"context"
	"testing"

	"seckill/testkit/testenv"
)

// TestNamedValuesList: rows by name prefix. A prefix with a LIKE wildcard is
// refused.
func TestNamedValuesList(t *testing.T) {
	testenv.Each(t, databases(t), func(t *testing.T, db *DB) {
		ctx := context.Background()
		m := NewNamedValues(db)
		p := "testlist" + randomSuffix() + ":"
		for _, n := range []string{p + "1", p + "2", "x" + p + "3"} {
			if err := m.InsertIfAbsent(ctx, n, "v-"+n); err != nil {
				t.Fatal(err)
			}
		}
		got, err := m.List(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got[p+"1"] != "v-"+p+"1" || got[p+"2"] != "v-"+p+"2" {
			t.Errorf("List(%q) = %v, want the rows %s1 and %s2", p, got, p, p)
		}
		if _, err := m.List(ctx, "a_b"); err == nil {
			t.Error("List with a LIKE wildcard in the prefix: got nil, want an error")
		}
	})
}
