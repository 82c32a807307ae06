// Package config reads the settings.
package config

import (
	"errors"
	"os"
)

// Config is the configuration.
type Config struct {
	Addr string // SECKILL_ADDR, the listen address
	Port int
	// Mode is SECKILL_SHOP_MODE, not SECKILL_ADDR.
	Mode string
}

// Load reads the environment.
func Load() Config {
	c := Config{Addr: ":80"}
	c.Addr = os.Getenv("SECKILL_ADDR")
	if os.Getenv("SECKILL_PORT") != "" {
		c.Port = 1
	}
	return c
}

// Validate checks the port.
func (c Config) Validate() error {
	if c.Port < 0 {
		return errors.New("SECKILL_PORT: negative")
	}
	return nil
}

var table = []struct {
	name string
	set  func(c *Config)
}{
	{"SECKILL_SHOP_MODE", func(c *Config) { c.Mode = "x" }},
}
