package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsTableCurrent: docs/configuration.md holds the table the settings
// generate.
func TestDocsTableCurrent(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := WithTable(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != want {
		t.Errorf("docs/configuration.md is stale: run `go generate ./config` and commit it")
	}
}

// TestHelpListsEverySetting: --help names every setting with its values
// and default, one entry each.
func TestHelpListsEverySetting(t *testing.T) {
	help := Help()
	for _, s := range settings {
		entry := "  " + s.Name + ": " + plain(s.what()) + "; default " + plain(s.defaultText()) + "\n"
		if strings.Count(help, entry) != 1 {
			t.Errorf("help: want one entry %q", entry)
		}
		if s.Help == "" || strings.Contains(s.Help+s.More, "\n") || strings.Contains(s.Help+s.More, "|") {
			t.Errorf("%s: want a one-line help without |", s.Name)
		}
	}
	if strings.Contains(help, "`") {
		t.Error("help: markdown backquotes left in it")
	}
}

// TestLogLineHasEverySetting: the start-up log line has one key per
// setting that sets a field, and no other.
func TestLogLineHasEverySetting(t *testing.T) {
	var line struct{ Config map[string]any }
	if err := json.Unmarshal([]byte(logLine(t, Default())), &line); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, s := range settings {
		if s.b == nil {
			continue
		}
		want++
		if _, ok := line.Config[s.key()]; !ok {
			t.Errorf("log line: no %q for %s", s.key(), s.Name)
		}
	}
	if len(line.Config) != want {
		t.Errorf("log line: %d keys, want %d", len(line.Config), want)
	}
}

// TestEveryVariableDeclared: each SECKILL_ variable the package's code
// names is a row of the table, and each row is named once.
func TestEveryVariableDeclared(t *testing.T) {
	rows := map[string]bool{}
	for _, s := range settings {
		if rows[s.Name] {
			t.Errorf("%s: declared twice", s.Name)
		}
		rows[s.Name] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`SECKILL_[A-Z0-9_]*[A-Z0-9]`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range name.FindAllString(string(src), -1) {
			// SECKILL_DEV_ and SECKILL_TEST_ are prefixes, not variables.
			if !rows[n] && n != "SECKILL_DEV" && n != "SECKILL_TEST" {
				t.Errorf("%s names %s, which the table does not declare", f, n)
			}
		}
	}
}

// TestUnsetConsumerDefaults: an unset consumer count or claim idle time
// reads as the default of its setting.
func TestUnsetConsumerDefaults(t *testing.T) {
	c := Default()
	if c.Consumers != DefaultConsumers || c.ClaimIdle != DefaultClaimIdle || c.ConsumerDuty != DefaultConsumerDuty {
		t.Errorf("consumer defaults %d, %v, %v, want %d, %v, %v", c.Consumers, c.ClaimIdle, c.ConsumerDuty,
			DefaultConsumers, DefaultClaimIdle, DefaultConsumerDuty)
	}
	var zero Config
	if zero.ConsumerCount() != DefaultConsumers || zero.ClaimIdleOrDefault() != DefaultClaimIdle {
		t.Errorf("unset: got %d, %v, want the defaults", zero.ConsumerCount(), zero.ClaimIdleOrDefault())
	}
}

// TestWithTableNeedsMarkers: a page without the markers is an error, not
// a page silently left as it was.
func TestWithTableNeedsMarkers(t *testing.T) {
	if _, err := WithTable("# Configuration\n"); err == nil {
		t.Error("no markers: got nil, want an error")
	}
	got, err := WithTable("a\n" + TableBegin + "old\n" + TableEnd + "b\n")
	if err != nil || got != "a\n"+TableBegin+Table()+TableEnd+"b\n" {
		t.Errorf("got %q, %v, want the table between the markers", got, err)
	}
}

// TestLogKeysUnique: no two settings share a key of the log line.
func TestLogKeysUnique(t *testing.T) {
	seen := map[string]string{}
	for _, s := range settings {
		if other, ok := seen[s.key()]; ok {
			t.Errorf("%s and %s both log %q", other, s.Name, s.key())
		}
		seen[s.key()] = s.Name
	}
}
