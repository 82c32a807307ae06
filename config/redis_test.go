package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"seckill/testkit/testcert"
)

// TestSentinel: SECKILL_REDIS_SENTINEL_ADDRS with SECKILL_REDIS_MASTER select
// a Sentinel-managed Redis, a real one (production by default), logged as
// such.
func TestSentinel(t *testing.T) {
	c, err := Load(env(map[string]string{
		"SECKILL_REDIS_SENTINEL_ADDRS": " 127.0.0.1:26390, 127.0.0.1:26391 ,,[::1]:26392",
		"SECKILL_REDIS_MASTER":         " seckill ",
		"SECKILL_JWT_SECRET":           testSecret,
		"SECKILL_MYSQL_DSN":            realDSN,
	}))
	if err != nil {
		t.Fatalf("Load: got %v, want nil", err)
	}
	if want := []string{"127.0.0.1:26390", "127.0.0.1:26391", "[::1]:26392"}; !reflect.DeepEqual(c.RedisSentinelAddrs, want) {
		t.Errorf("RedisSentinelAddrs: got %q, want %q", c.RedisSentinelAddrs, want)
	}
	if c.RedisMaster != "seckill" || c.RedisAddr != "" {
		t.Errorf("RedisMaster, RedisAddr: got %q, %q, want seckill and empty", c.RedisMaster, c.RedisAddr)
	}
	if !c.Sentinel() || !c.RealRedis() {
		t.Errorf("Sentinel, RealRedis: got %v, %v, want true, true", c.Sentinel(), c.RealRedis())
	}
	if c.Env != EnvProduction {
		t.Errorf("Env: got %q, want production (a real Redis)", c.Env)
	}
	line := logLine(t, c)
	for _, s := range []string{`"redis_addr":"(sentinel)"`, `"redis_sentinel_addrs":["127.0.0.1:26390","127.0.0.1:26391","[::1]:26392"]`, `"redis_master":"seckill"`} {
		if !strings.Contains(line, s) {
			t.Errorf("log line %s: want %q in it", line, s)
		}
	}
	if _, err := Load(env(map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26390", "SECKILL_REDIS_MASTER": "m"})); err == nil ||
		!strings.HasPrefix(err.Error(), "SECKILL_JWT_SECRET:") {
		t.Errorf("Sentinel without a secret: got %v, want a refusal naming SECKILL_JWT_SECRET", err)
	}
	plain, err := Load(env(nil))
	if err != nil || plain.Sentinel() || plain.RealRedis() {
		t.Errorf("no Redis configured: got Sentinel %v, RealRedis %v, err %v, want false, false, nil", plain.Sentinel(), plain.RealRedis(), err)
	}
}

// TestSentinelInvalid: every wrong combination of the Sentinel variables is
// one line naming the variable (both Redis kinds set: naming both).
func TestSentinelInvalid(t *testing.T) {
	const sentinels = "127.0.0.1:26390,127.0.0.1:26391"
	tests := []struct {
		name    string
		env     map[string]string
		wantVar string
		wantIn  string
	}{
		{"both Redis kinds", map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_REDIS_SENTINEL_ADDRS": sentinels, "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", "SECKILL_REDIS_ADDR"},
		{"sentinels without master", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": sentinels}, "SECKILL_REDIS_MASTER", "SECKILL_REDIS_SENTINEL_ADDRS"},
		{"master without sentinels", map[string]string{"SECKILL_REDIS_MASTER": "seckill"}, "SECKILL_REDIS_SENTINEL_ADDRS", "SECKILL_REDIS_MASTER"},
		{"sentinel without port", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26390,sentinel", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", `"sentinel"`},
		{"sentinel bad port", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:263900", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", `"127.0.0.1:263900"`},
		{"sentinel without host", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": ":26390", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", `":26390"`},
		{"sentinel URL", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": "redis://127.0.0.1:26390", "SECKILL_REDIS_MASTER": "seckill"},
			"SECKILL_REDIS_SENTINEL_ADDRS", "not host:port"},
		{"blank master", map[string]string{"SECKILL_REDIS_SENTINEL_ADDRS": sentinels, "SECKILL_REDIS_MASTER": "  "}, "SECKILL_REDIS_MASTER", "required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(env(merged(map[string]string{"SECKILL_JWT_SECRET": testSecret}, tt.env)))
			if err == nil {
				t.Fatalf("got nil, want an error naming %s", tt.wantVar)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tt.wantVar+":") || !strings.Contains(msg, tt.wantIn) {
				t.Errorf("got %q, want one line starting with %q and naming %s", msg, tt.wantVar+":", tt.wantIn)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("got %q, want one line", msg)
			}
		})
	}
}

// TestCluster: SECKILL_REDIS_CLUSTER_ADDRS selects a Redis Cluster, a real
// Redis (production by default), logged as such. The start is refused,
// naming the variable, with another Redis setting or a malformed seed.
// It is refused with replica-synced locks too: WAIT cannot follow a grant
// through the cluster client.
func TestCluster(t *testing.T) {
	const seeds = "127.0.0.1:7001, 127.0.0.1:7002,,127.0.0.1:7003"
	c, err := Load(env(map[string]string{"SECKILL_REDIS_CLUSTER_ADDRS": seeds, "SECKILL_JWT_SECRET": testSecret, "SECKILL_MYSQL_DSN": realDSN}))
	if err != nil {
		t.Fatalf("Load: got %v, want nil", err)
	}
	if want := []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}; !reflect.DeepEqual(c.RedisClusterAddrs, want) {
		t.Errorf("RedisClusterAddrs: got %q, want %q", c.RedisClusterAddrs, want)
	}
	if !c.Cluster() || !c.RealRedis() || c.Sentinel() || c.Env != EnvProduction {
		t.Errorf("Cluster, RealRedis, Sentinel, Env: got %v, %v, %v, %q, want true, true, false, production", c.Cluster(), c.RealRedis(), c.Sentinel(), c.Env)
	}
	line := logLine(t, c)
	for _, s := range []string{`"redis_addr":"(cluster)"`, `"redis_cluster_addrs":["127.0.0.1:7001","127.0.0.1:7002","127.0.0.1:7003"]`} {
		if !strings.Contains(line, s) {
			t.Errorf("log line %s: want %q in it", line, s)
		}
	}
	for name, vars := range map[string]map[string]string{
		"with SECKILL_REDIS_ADDR":           {"SECKILL_REDIS_ADDR": "127.0.0.1:6379"},
		"with Sentinel":                     {"SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26390", "SECKILL_REDIS_MASTER": "m"},
		"malformed seed":                    {"SECKILL_REDIS_CLUSTER_ADDRS": "127.0.0.1:7001,node"},
		"with SECKILL_LOCK_WAIT_REPLICAS=1": {"SECKILL_LOCK_WAIT_REPLICAS": "1"},
	} {
		vars["SECKILL_JWT_SECRET"] = testSecret
		if vars["SECKILL_REDIS_CLUSTER_ADDRS"] == "" {
			vars["SECKILL_REDIS_CLUSTER_ADDRS"] = seeds
		}
		want := "SECKILL_REDIS_CLUSTER_ADDRS:"
		if name == "with SECKILL_LOCK_WAIT_REPLICAS=1" {
			want = "SECKILL_LOCK_WAIT_REPLICAS:"
		}
		if _, err := Load(env(vars)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a refusal naming %s", name, err, want)
		}
	}
}

// TestRedisAuth: the Redis credentials are read as given, SECKILL_REDIS_TLS
// is on or off, and a CA file turns TLS on.
func TestRedisAuth(t *testing.T) {
	base := map[string]string{"SECKILL_REDIS_ADDR": "127.0.0.1:6379", "SECKILL_ENV": "development"}
	with := func(m map[string]string) map[string]string { return merged(base, m) }
	c, err := Load(env(with(map[string]string{"SECKILL_REDIS_USERNAME": " app ", "SECKILL_REDIS_PASSWORD": " pa ss "})))
	if err != nil {
		t.Fatal(err)
	}
	if c.RedisUsername != "app" || c.RedisPassword != " pa ss " || c.RedisTLS || c.RedisTLSCA != "" {
		t.Errorf("got user %q, password %q, TLS %v, CA %q; want app, \" pa ss \" (as given), off, none",
			c.RedisUsername, c.RedisPassword, c.RedisTLS, c.RedisTLSCA)
	}
	for _, tt := range []struct {
		tls, ca string
		want    bool
	}{{"", "", false}, {"off", "", false}, {"OFF", "", false}, {"on", "", true}, {" On ", "", true}, {"", "/ca.pem", true}, {"off", "/ca.pem", true}} {
		c, err := Load(env(with(map[string]string{"SECKILL_REDIS_TLS": tt.tls, "SECKILL_REDIS_TLS_CA": tt.ca})))
		if err != nil {
			t.Errorf("SECKILL_REDIS_TLS=%q SECKILL_REDIS_TLS_CA=%q: got %v, want nil", tt.tls, tt.ca, err)
			continue
		}
		if c.RedisTLS != tt.want {
			t.Errorf("SECKILL_REDIS_TLS=%q SECKILL_REDIS_TLS_CA=%q: got TLS %v, want %v", tt.tls, tt.ca, c.RedisTLS, tt.want)
		}
	}
	c, err = Load(env(with(map[string]string{
		"SECKILL_REDIS_ADDR": "", "SECKILL_REDIS_SENTINEL_ADDRS": "127.0.0.1:26379", "SECKILL_REDIS_MASTER": "m",
		"SECKILL_REDIS_SENTINEL_PASSWORD": "sp",
	})))
	if err != nil || c.RedisSentinelPassword != "sp" {
		t.Errorf("Sentinel password: got %q, %v, want sp, nil", c.RedisSentinelPassword, err)
	}
}

// TestRedisTLSConfig: the TLS settings trust the CA of SECKILL_REDIS_TLS_CA
// (the system's without it) and require TLS 1.2. A CA file that cannot be
// read or holds no certificate is an error naming the variable.
func TestRedisTLSConfig(t *testing.T) {
	off := Config{}
	if tc, err := off.RedisTLSConfig(); tc != nil || err != nil {
		t.Errorf("TLS off: got %v, %v, want nil, nil", tc, err)
	}
	system := Config{RedisTLS: true}
	tc, err := system.RedisTLSConfig()
	if err != nil || tc == nil || tc.RootCAs != nil || tc.MinVersion != tls.VersionTLS12 || tc.ServerName != "" {
		t.Errorf("TLS on without CA: got %+v, %v, want the system's CAs, TLS 1.2, no server name", tc, err)
	}

	dir := t.TempDir()
	files, err := testcert.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := Config{RedisTLS: true, RedisTLSCA: files.CA}
	tc, err = c.RedisTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if tc.MinVersion != tls.VersionTLS12 || tc.InsecureSkipVerify || tc.ServerName != "" {
		t.Errorf("got MinVersion %x, InsecureSkipVerify %v, ServerName %q, want TLS 1.2, false, empty", tc.MinVersion, tc.InsecureSkipVerify, tc.ServerName)
	}
	// The server certificate verifies against RootCAs, and only them.
	pemBytes, err := os.ReadFile(files.Cert)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemBytes)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: "127.0.0.1"}); err != nil {
		t.Errorf("server certificate against RootCAs: %v, want verified", err)
	}
	other, err := testcert.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	oc, err := (&Config{RedisTLS: true, RedisTLSCA: other.CA}).RedisTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: oc.RootCAs}); err == nil {
		t.Error("server certificate against another CA: verified, want an error")
	}

	noCert := filepath.Join(dir, "empty.pem")
	if err := os.WriteFile(noCert, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"missing file":   filepath.Join(dir, "missing.pem"),
		"no certificate": noCert,
		"private key":    files.Key,
		"directory":      dir,
	} {
		_, err := (&Config{RedisTLS: true, RedisTLSCA: path}).RedisTLSConfig()
		if err == nil || !strings.HasPrefix(err.Error(), "SECKILL_REDIS_TLS_CA: ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: got %v, want one line starting with SECKILL_REDIS_TLS_CA:", name, err)
		}
	}
}
