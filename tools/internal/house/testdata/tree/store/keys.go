package store

import _ "example.com/shop/lua" // the scripts

// buyKeys are the KEYS of lua/buy.lua.
func buyKeys(id string) []string { return []string{"stock:" + id} }
