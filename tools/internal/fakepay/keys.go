package fakepay

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The fixed identities of the fake's merchant: they are no secrets, the
// keys are.
const (
	AlipayAppID = "2021000000000001"
	WechatMchID = "1900000001"
	WechatAppID = "wx00000000000000a1"
)

// The files of a key directory. Each key pair is a private half (PKCS#8
// PEM) and a public half (PKIX PEM); the service reads the halves the env
// file names, the fake holds the others.
const (
	AlipayAppPrivateFile      = "alipay_app_private.pem"      // the service signs its requests
	AlipayAppPublicFile       = "alipay_app_public.pem"       // the fake verifies them
	AlipayPlatformPrivateFile = "alipay_platform_private.pem" // the fake signs answers and notifications
	AlipayPlatformPublicFile  = "alipay_platform_public.pem"  // the service verifies them
	WechatMerchantPrivateFile = "wechat_merchant_private.pem" // the service signs its requests
	WechatMerchantPublicFile  = "wechat_merchant_public.pem"  // the fake verifies them
	WechatMerchantSerialFile  = "wechat_merchant_serial"      // the merchant certificate's serial (hex)
	WechatPlatformPrivateFile = "wechat_platform_private.pem" // the fake signs answers and notifications
	WechatPlatformPublicFile  = "wechat_platform_public.pem"  // the service verifies them
	WechatPublicKeyIDFile     = "wechat_public_key_id"        // the ID of the WeChat Pay public key
	WechatAPIv3KeyFile        = "wechat_apiv3_key"            // 32 characters: encrypts notification resources
)

// Keys is the key material of both providers, loaded from a key
// directory and generated where missing (never committed: the directory
// is the caller's, a temporary one in the tests).
type Keys struct {
	Dir string

	AlipayApp      *rsa.PrivateKey
	AlipayPlatform *rsa.PrivateKey

	WechatMerchant       *rsa.PrivateKey
	WechatMerchantSerial string
	WechatPlatform       *rsa.PrivateKey
	WechatPublicKeyID    string
	WechatAPIv3Key       []byte // 32 bytes

	// Stranger is no party's key, made at each start: it signs the
	// notifications tampered with WrongKey.
	Stranger *rsa.PrivateKey
}

// Path is the absolute path of a file of the key directory.
func (k *Keys) Path(name string) string { return filepath.Join(k.Dir, name) }

// LoadKeys reads the keys of dir, generating the missing ones. Private
// files are written 0600, the directory 0700.
func LoadKeys(dir string) (*Keys, error) {
	if dir == "" {
		return nil, errors.New("fakepay: no key directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return nil, err
	}
	k := &Keys{Dir: abs}
	pairs := []struct {
		key          **rsa.PrivateKey
		private, pub string
	}{
		{&k.AlipayApp, AlipayAppPrivateFile, AlipayAppPublicFile},
		{&k.AlipayPlatform, AlipayPlatformPrivateFile, AlipayPlatformPublicFile},
		{&k.WechatMerchant, WechatMerchantPrivateFile, WechatMerchantPublicFile},
		{&k.WechatPlatform, WechatPlatformPrivateFile, WechatPlatformPublicFile},
	}
	for _, p := range pairs {
		if *p.key, err = loadPair(k.Path(p.private), k.Path(p.pub)); err != nil {
			return nil, err
		}
	}
	if k.WechatMerchantSerial, err = loadText(k.Path(WechatMerchantSerialFile), func() string {
		return strings.ToUpper(randomHex(20))
	}); err != nil {
		return nil, err
	}
	if k.WechatPublicKeyID, err = loadText(k.Path(WechatPublicKeyIDFile), func() string {
		return "PUB_KEY_ID_" + randomHex(16)
	}); err != nil {
		return nil, err
	}
	v3, err := loadText(k.Path(WechatAPIv3KeyFile), func() string { return randomHex(16) })
	if err != nil {
		return nil, err
	}
	if len(v3) != 32 {
		return nil, fmt.Errorf("fakepay: %s: want 32 characters, have %d", k.Path(WechatAPIv3KeyFile), len(v3))
	}
	k.WechatAPIv3Key = []byte(v3)
	if k.Stranger, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		return nil, err
	}
	return k, nil
}

// loadPair reads a private key, or generates one and writes both halves.
func loadPair(private, public string) (*rsa.PrivateKey, error) {
	b, err := os.ReadFile(private)
	if err == nil {
		return ParsePrivateKey(b)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	// The public half first: a private file always has its public beside it.
	if err := writeFile(public, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		return nil, err
	}
	if err := writeFile(private, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	return key, nil
}

// ParsePrivateKey reads an RSA private key in PEM, PKCS#8 or PKCS#1.
func ParsePrivateKey(b []byte) (*rsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("fakepay: no PEM block")
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("fakepay: a %T, want an RSA key", k)
	}
	return rk, nil
}

// PublicPEM writes a public key as PKIX PEM.
func PublicPEM(k *rsa.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(k)
	if err != nil {
		panic(err) // an RSA key always marshals
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// loadText reads a one-line file, or writes the value gen makes.
func loadText(path string, gen func() string) (string, error) {
	b, err := os.ReadFile(path)
	if err == nil {
		return strings.TrimSpace(string(b)), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	v := gen()
	return v, writeFile(path, []byte(v), 0o600)
}

// writeFile writes through a temporary file and a rename: a reader never
// sees half a file.
func writeFile(path string, b []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err = f.Write(b); err == nil {
		err = f.Chmod(mode)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}
