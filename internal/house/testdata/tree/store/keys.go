package store

// buyKeys are the KEYS of lua/buy.lua.
func buyKeys(id string) []string { return []string{"stock:" + id} }
