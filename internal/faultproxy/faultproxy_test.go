package faultproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// echo starts a TCP server that writes back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return ln.Addr().String()
}

// proxied starts a proxy in front of an echo server and connects through
// it. Both close when the test ends.
func proxied(t *testing.T) (*Proxy, net.Conn) {
	t.Helper()
	p, err := Start(echo(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c
}

func TestPartitionHoldsUntilHeal(t *testing.T) {
	p, c := proxied(t)
	r := bufio.NewReader(c)
	p.Partition()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(200 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if line, err := r.ReadString('\n'); err == nil {
		t.Fatalf("got %q through a partition, want nothing", line)
	}
	p.Heal()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("got %q (%v) after heal, want %q", line, err, "ping\n")
	}
}

func TestDelayKeepsOrder(t *testing.T) {
	p, c := proxied(t)
	p.SetDelay(func() time.Duration { return 5 * time.Millisecond })
	r := bufio.NewReader(c)
	for _, want := range []string{"a\n", "b\n", "c\n"} {
		if _, err := c.Write([]byte(want)); err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadString('\n')
		if err != nil || got != want {
			t.Fatalf("got %q (%v), want %q", got, err, want)
		}
	}
}

func TestCutClosesConnections(t *testing.T) {
	p, c := proxied(t)
	if _, err := c.Write([]byte("x\n")); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadString('\n'); err != io.EOF {
		t.Fatalf("got %v after Cut, want EOF", err)
	}
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("got %v, want a new connection after Cut", err)
	}
	c2.Close()
}
