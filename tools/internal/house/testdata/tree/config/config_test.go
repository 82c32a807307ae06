package config

import "testing"

func TestLoad(t *testing.T) {
	t.Setenv("SECKILL_ADDR", "x")
	_ = Load().Addr
}
