package lua

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// keyLine is a header line naming one key: "-- KEYS[n]  <pattern>  what".
var keyLine = regexp.MustCompile(`^--\s+KEYS\[(\d+)\]\s+(\S+)`)

// KeysOf returns the KEYS that the header of script file name lists, in
// order: each one's name pattern, such as seckill:{<tag>}:stock:<voucherId>.
// The header is the one place a script's KEYS are written down; the Go
// code that builds them is tested against it.
func KeysOf(name string) ([]string, error) {
	src, err := sources.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("lua: %w", err)
	}
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
			return nil, fmt.Errorf("lua: %s: KEYS[%d] after KEYS[%d]", name, n, len(keys))
		}
		keys = append(keys, m[2])
	}
	return keys, nil
}
