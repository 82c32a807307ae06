package model

import (
	"strings"
	"testing"
)

func i64(v int64) *int64 { return &v }

// sound is a voucher of initial stock 5 with orders 1 -> user 10 and
// 2 -> user 20, both announced.
func sound() Facts {
	return Facts{
		InitialStock: 5, Stock: 3,
		Orders:         map[int64]int64{1: 10, 2: 20},
		Announced:      []Announced{{1, 10}, {2, 20}},
		CheckAnnounced: true,
	}
}

func TestFactsViolations(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Facts)
		want   map[int]string // invariant -> substring of its message
	}{
		{"all held", func(*Facts) {}, nil},
		{"all held, async drained", func(f *Facts) { f.Async = &AsyncCounts{RedisStock: 3, Buyers: i64(2)} }, nil},
		{"all held, async pending", func(f *Facts) {
			f.Async = &AsyncCounts{RedisStock: 2, Pending: 1, Buyers: i64(3)}
		}, nil},
		{"1 oversold", func(f *Facts) {
			f.InitialStock, f.Stock = 1, -1
		}, map[int]string{1: "oversold"}},
		{"2 stock drift", func(f *Facts) { f.Stock = 4 }, map[int]string{2: "2 orders != initial 5 - stock 4"}},
		{"3 two orders one user", func(f *Facts) {
			f.Orders[2] = 10
			f.Announced[1].UserID = 10
		}, map[int]string{3: "user 10 has 2 orders"}},
		{"4 announced but missing", func(f *Facts) {
			f.Announced = append(f.Announced, Announced{OrderID: 9})
		}, map[int]string{4: "1 order ids answered with 200 are not in the database [9]"}},
		{"4 never announced", func(f *Facts) { f.Announced = f.Announced[:1] },
			map[int]string{4: "never answered with 200 [2]"}},
		{"4 another user", func(f *Facts) { f.Announced[0].UserID = 11 },
			map[int]string{4: "belong to another user"}},
		{"4 announced twice", func(f *Facts) { f.Announced = append(f.Announced, Announced{OrderID: 1}) },
			map[int]string{4: "answered twice [1]"}},
		{"4 unknown users are not compared", func(f *Facts) { f.Announced = []Announced{{OrderID: 1}, {OrderID: 2}} }, nil},
		{"4 skipped", func(f *Facts) { f.Announced, f.CheckAnnounced = nil, false }, nil},
		{"5 redis stock", func(f *Facts) { f.Async = &AsyncCounts{RedisStock: 2, Buyers: i64(2)} },
			map[int]string{5: "redis stock 2 + orders 2 + pending 0 + give-backs due 0 = 4 != initial 5"}},
		{"5 buyers", func(f *Facts) { f.Async = &AsyncCounts{RedisStock: 3, Buyers: i64(3)} },
			map[int]string{5: "buyers set 3 != orders 2 + cancelled 0 + pending 0"}},
		{"5 buyers unknown", func(f *Facts) { f.Async = &AsyncCounts{RedisStock: 3} }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := sound()
			tt.change(&f)
			got := f.Violations()
			if len(got) != len(tt.want) {
				t.Fatalf("violations = %v, want invariants %v", got, tt.want)
			}
			for _, v := range got {
				sub, ok := tt.want[v.Invariant]
				if !ok || !strings.Contains(v.Msg, sub) {
					t.Errorf("violation %v, want invariant %d containing %q", v, v.Invariant, sub)
				}
			}
		})
	}
}

func TestFactsViolationsOrdered(t *testing.T) {
	f := sound()
	f.InitialStock, f.Stock = 1, 0
	f.Announced = nil
	f.Async = &AsyncCounts{RedisStock: 0, Buyers: i64(0)}
	var got []int
	for _, v := range f.Violations() {
		got = append(got, v.Invariant)
	}
	if want := []int{1, 2, 4, 5}; !equalInts(got, want) {
		t.Errorf("invariants = %v, want %v", got, want)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The server's audit judges with the same rules.
func TestAuditCheckUsesCounts(t *testing.T) {
	tests := []struct {
		name                 string
		a                    Audit
		buyers               int64
		async                bool
		oversold, consistent bool
	}{
		{"sound", Audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 2}, 0, false, false, true},
		{"oversold", Audit{InitialStock: 1, Stock: -1, Orders: 2, DistinctUsers: 2}, 0, false, true, false},
		{"stock drift", Audit{InitialStock: 5, Stock: 4, Orders: 2, DistinctUsers: 2}, 0, false, false, false},
		{"duplicate buyer", Audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 1}, 0, false, false, false},
		{"async sound", Audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 2, RedisStock: i64(2), Pending: i64(1)}, 3, true, false, true},
		{"async redis drift", Audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 2, RedisStock: i64(3), Pending: i64(1)}, 3, true, false, false},
		{"async buyers drift", Audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 2, RedisStock: i64(2), Pending: i64(1)}, 2, true, false, false},
		{"async unknown redis", Audit{InitialStock: 5, Stock: 3, Orders: 2, DistinctUsers: 2}, 2, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := tt.a
			if tt.async {
				a.CheckAsync(tt.buyers, 0)
			} else {
				a.Check()
			}
			if a.Oversold != tt.oversold || a.Consistent != tt.consistent {
				t.Errorf("oversold %v consistent %v, want %v %v", a.Oversold, a.Consistent, tt.oversold, tt.consistent)
			}
		})
	}
}
