// Command shop sells things. It reads main.go first, e.g. at start.
package main

import (
	"example.com/shop/config"
	"example.com/shop/store"
)

func main() {
	_ = config.Load()
	//go:noinline
	store.New().Sell() // sell one
}
