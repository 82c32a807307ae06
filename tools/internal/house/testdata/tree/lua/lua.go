// Package lua embeds the scripts.
package lua

import "embed"

// Scripts are the Redis scripts.
//
//go:embed buy.lua free.lua
var Scripts embed.FS
