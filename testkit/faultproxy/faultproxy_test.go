package faultproxy

import (
	"bufio"
	"io"
	"net"
	"strconv"
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

// resp is the RESP array of args, as a client sends a command.
func resp(args ...string) string {
	s := "*" + strconv.Itoa(len(args)) + "\r\n"
	for _, a := range args {
		s += "$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n"
	}
	return s
}

// TestCutPipeline: a pipeline of EVALSHA of one hash reaches the server cut
// after its first command and half the second, then the connection drops. A
// lone command of that hash, or a pipeline of another, passes untouched.
func TestCutPipeline(t *testing.T) {
	p, c := proxied(t)
	p.CutPipeline("EVALSHA", "abc", 1)
	r := bufio.NewReader(c)
	for _, pass := range []string{resp("evalsha", "abc", "0"), resp("evalsha", "xyz", "0") + resp("evalsha", "xyz", "1")} {
		if _, err := c.Write([]byte(pass)); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, len(pass))
		if _, err := io.ReadFull(r, got); err != nil || string(got) != pass {
			t.Fatalf("got %q (%v), want %q untouched", got, err, pass)
		}
	}
	first, second := resp("evalsha", "abc", "1"), resp("evalsha", "abc", "2")
	if _, err := c.Write([]byte(first + second + resp("evalsha", "abc", "3"))); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	if want := first + second[:len(second)/2]; err != nil || string(got) != want {
		t.Errorf("the server got %q (%v), want %q, then the drop", got, err, want)
	}
	if n := p.SeenWith("evalsha", "abc"); n != 2 {
		t.Errorf("SeenWith: %d, want 2 (the lone command and the one sent whole)", n)
	}
}

// TestStallPipeline: once a pipeline of the command passed, each reply on
// its connection waits the stall.
func TestStallPipeline(t *testing.T) {
	p, c := proxied(t)
	const stall = 300 * time.Millisecond
	p.StallPipeline("evalsha", "abc", stall)
	r := bufio.NewReader(c)
	pipeline := resp("evalsha", "abc", "1") + resp("evalsha", "abc", "2")
	start := time.Now()
	if _, err := c.Write([]byte(pipeline)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(pipeline))
	if _, err := io.ReadFull(r, got); err != nil || string(got) != pipeline {
		t.Fatalf("got %q (%v), want %q", got, err, pipeline)
	}
	if took := time.Since(start); took < stall {
		t.Errorf("the replies came after %v, want at least %v", took, stall)
	}
}
