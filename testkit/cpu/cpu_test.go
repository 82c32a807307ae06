package cpu

import (
	"testing"
	"time"
)

func TestParseRedis(t *testing.T) {
	got, err := parseRedis("# CPU\r\nused_cpu_sys:1.500000\r\nused_cpu_user:2.250000\r\nused_cpu_sys_children:9.0\r\n")
	if err != nil || got != 3750*time.Millisecond {
		t.Errorf("got %v, %v, want 3.75s", got, err)
	}
	if _, err := parseRedis("# CPU\r\nused_cpu_sys:x\r\nused_cpu_user:1\r\n"); err == nil {
		t.Error("a malformed figure: got nil, want an error")
	}
	if _, err := parseRedis("# Server\r\n"); err == nil {
		t.Error("no cpu figures: got nil, want an error")
	}
}

func TestSelfGrows(t *testing.T) {
	a, err := Self()
	if err != nil {
		t.Fatal(err)
	}
	for x, deadline := 0, time.Now().Add(time.Second); time.Now().Before(deadline); x++ {
		_ = x * x
	}
	b, err := Self()
	if err != nil || b <= a {
		t.Errorf("CPU time after a busy second: %v -> %v (%v), want more", a, b, err)
	}
}
