package testbed

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"

	"seckill/testkit/proc"
)

// ProjectRoot is the repository root: the nearest directory upwards from
// the working directory whose go.mod is the product's (module seckill), so
// tools/ (module seckill/tools) is passed over.
func ProjectRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && isProductModule(b) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory: run from the repository")
		}
		dir = parent
	}
}

// isProductModule says the go.mod text declares module seckill.
func isProductModule(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == "seckill"
		}
	}
	return false
}

// CIRoot is the project's root (ProjectRoot), with the settings of
// .ci/env.sh loaded where the environment names no MariaDB and Redis
// (LoadCIEnv).
func CIRoot() (string, error) {
	root, err := ProjectRoot()
	if err != nil {
		return "", err
	}
	return root, LoadCIEnv(root)
}

// LoadCIEnv sets the variables of .ci/env.sh, unless the MySQL DSN and the
// Redis address are set already. It reads the export NAME=VALUE lines as the
// shell would, without overriding what is set. It keeps only the SECKILL_
// variables and PATH.
func LoadCIEnv(root string) error {
	if os.Getenv("SECKILL_MYSQL_DSN") != "" && os.Getenv("SECKILL_REDIS_ADDR") != "" {
		return nil
	}
	out, err := exec.Command("bash", "-c", `set -a; source "$1" >/dev/null; env -0`, "env", filepath.Join(root, ".ci/env.sh")).Output()
	if err != nil {
		return fmt.Errorf("source .ci/env.sh: %w", err)
	}
	for _, kv := range strings.Split(string(out), "\x00") {
		// PATH too: env.sh puts Go's bin directory on it.
		if k, v, ok := strings.Cut(kv, "="); ok && (strings.HasPrefix(k, "SECKILL_") || k == "PATH") {
			os.Setenv(k, v)
		}
	}
	return nil
}

// EnvOr is the variable's value, def when it is unset or empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// RunTool runs an external command with a time limit. Its output is appended
// to logPath ("" = discarded, "-" = the harness's stdout and stderr). It
// returns the exit status and the error. The status is -1 when the command
// could not start or was killed at the limit.
func RunTool(ctx context.Context, limit time.Duration, logPath string, env []string, name string, args ...string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.WaitDelay = 5 * time.Second
	// A tool (a driver, or a child harness of the matrix) ends with the
	// harness, so that none keeps sending traffic to the next run's ports.
	cmd.SysProcAttr = proc.TermWithParent()
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if logPath == "-" {
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	} else if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return -1, err
		}
		defer f.Close()
		cmd.Stdout, cmd.Stderr = f, f
	}
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return -1, fmt.Errorf("%s: killed after %s", name, limit)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), err
	}
	if err != nil {
		return -1, err
	}
	return 0, nil
}

// GoBuild builds pkg (e.g. "." or "./loadtest/driver") into out, from root.
// root is the folder of the module holding pkg: the repository's, or tools/.
func GoBuild(ctx context.Context, root, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build -o %s %s: %w", out, pkg, err)
	}
	return nil
}

// OpenDB opens the database of SECKILL_MYSQL_DSN and checks it answers.
func OpenDB(ctx context.Context, dsn string) (*sql.DB, error) {
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// OpenRedis is a client of SECKILL_REDIS_ADDR.
func OpenRedis(addr string) redis.UniversalClient {
	return redis.NewClient(&redis.Options{Addr: addr})
}

// ReadKV reads a KEY=VALUE file (the last value of a key wins).
func ReadKV(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			m[k] = v
		}
	}
	return m, sc.Err()
}

// WriteJSON writes v, indented, to path.
func WriteJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// QuietRedis is go-redis's logger in the suite: silent.
type QuietRedis struct{}

// Printf drops the line.
func (QuietRedis) Printf(context.Context, string, ...any) {}

// YesNo is "yes" or "no".
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// IsExe says p is an executable file.
func IsExe(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// Or is v, or def when v is empty.
func Or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
