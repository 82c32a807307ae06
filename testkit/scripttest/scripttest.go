// Package scripttest is what the tests of the Lua scripts share: the check
// of every script's header, the KEYS a header lists (KeysOf), the check
// that every script loads, and the Redis servers a script is tested on. The scripts live beside their
// callers, in lock/scripts and repository/redisstore/scripts.
package scripttest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

// keyLine is a header line naming one key: "-- KEYS[n]  <pattern>  what".
var keyLine = regexp.MustCompile(`^--\s+KEYS\[(\d+)\]\s+(\S+)`)

// KeysOf returns the KEYS that the header of the script in file lists, in
// order: each one's name pattern, such as seckill:{<tag>}:stock:<voucherId>.
// The header is the one place a script's KEYS are written down; the Go
// code that builds them is tested against it.
func KeysOf(file string) ([]string, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("scripttest: %w", err)
	}
	name := filepath.Base(file)
	var keys []string
	for _, line := range strings.Split(string(src), "\n") {
		if !strings.HasPrefix(line, "--") {
			break // the header ends at the first line of code
		}
		m := keyLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n != len(keys)+1 {
			return nil, fmt.Errorf("scripttest: %s: KEYS[%d] after KEYS[%d]", name, n, len(keys))
		}
		keys = append(keys, m[2])
	}
	return keys, nil
}

// CheckHeaders fails t unless every script in dir opens with a comment
// naming its KEYS, ARGV and return values, its KEYS numbered in order.
func CheckHeaders(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil || len(files) == 0 {
		t.Fatalf("glob %s/*.lua: %v, %d files", dir, err, len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		var header strings.Builder
		for i, line := range strings.Split(string(src), "\n") {
			if i == 0 && strings.HasPrefix(line, "#!lua") {
				continue // the shebang of script flags comes first
			}
			if !strings.HasPrefix(line, "--") {
				break
			}
			header.WriteString(line + "\n")
		}
		h := header.String()
		if h == "" {
			t.Errorf("%s: no header comment", f)
			continue
		}
		for _, want := range []string{"KEYS[1]", "ARGV[1]", "Returns"} {
			if !strings.Contains(h, want) {
				t.Errorf("%s: header does not mention %s", f, want)
			}
		}
		if _, err := KeysOf(f); err != nil {
			t.Error(err)
		}
	}
}

// CheckLoad fails t unless every script of byName compiles (SCRIPT LOAD on
// miniredis) under the hash its redis.Script value sends.
func CheckLoad(t *testing.T, byName map[string]*redis.Script) {
	t.Helper()
	srv := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	}()
	for name, sc := range byName {
		if sc == nil {
			t.Errorf("scripts.%s is nil", name)
			continue
		}
		sha, err := sc.Load(context.Background(), c).Result()
		if err != nil {
			t.Errorf("SCRIPT LOAD %s: %v", name, err)
		} else if sha != sc.Hash() {
			t.Errorf("%s: loaded sha %s, want %s", name, sha, sc.Hash())
		}
	}
}

// Backends returns the Redis servers the scripts are tested on: miniredis
// always, the real Redis when SECKILL_REDIS_ADDR is set.
func Backends(t *testing.T) map[string]redis.UniversalClient {
	t.Helper()
	m := miniredis.RunT(t)
	out := map[string]redis.UniversalClient{"miniredis": redis.NewClient(&redis.Options{Addr: m.Addr()})}
	if addr := os.Getenv("SECKILL_REDIS_ADDR"); addr != "" {
		out["redis"] = redis.NewClient(&redis.Options{Addr: addr})
	}
	for _, c := range out {
		t.Cleanup(func() { c.Close() })
	}
	return out
}
