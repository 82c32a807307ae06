package schema

import (
	"strings"
	"testing"
)

func TestStatements(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"two", "-- c\nCREATE A (x);\n\nCREATE B (\n y\n);\n", []string{"CREATE A (x)", "CREATE B (\n y\n)"}},
		{"unterminated tail", "CREATE A;\nCREATE B", []string{"CREATE A", "CREATE B"}},
		{"empty", "-- only\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Statements(tt.in)
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSchemasHaveSameTables(t *testing.T) {
	for _, table := range []string{"tb_user", "tb_voucher", "tb_seckill_voucher", "tb_voucher_order", "tb_lock_fence", "tb_seckill_meta", "tb_order_outcome", "tb_shop", "tb_shop_bigram", "tb_shop_gram", "tb_token_revocation", "tb_shop_staff", "tb_pay_mismatch"} {
		if !strings.Contains(mysqlSchema, "EXISTS "+table+" ") || !strings.Contains(sqliteSchema, "EXISTS "+table+" ") {
			t.Errorf("table %s missing from one of the schemas", table)
		}
	}
	if !strings.Contains(mysqlSchema, "UNIQUE KEY uk_user_voucher (user_id, voucher_id)") {
		t.Error("schema.sql lost the unique key on (user_id, voucher_id)")
	}
}
