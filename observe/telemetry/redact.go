package telemetry

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// keyless are the commands whose arguments name no key: their statement is
// the name alone (AUTH and HELLO carry a password).
var keyless = map[string]bool{
	"auth": true, "hello": true, "acl": true, "config": true, "client": true, "script": true,
	"function": true, "ping": true, "echo": true, "info": true, "select": true, "multi": true,
	"exec": true, "discard": true, "time": true, "dbsize": true, "cluster": true, "command": true,
	"flushdb": true, "flushall": true, "migrate": true, "publish": true, "spublish": true,
}

// allKeys are the commands whose every argument is a key.
var allKeys = map[string]bool{
	"del": true, "unlink": true, "exists": true, "mget": true, "touch": true, "watch": true,
}

// withSubcommand are the commands whose first argument is a subcommand
// and second a key.
var withSubcommand = map[string]bool{"xgroup": true, "xinfo": true, "object": true, "memory": true}

// Statement is cmd as a trace shows it: the command's name and the
// pattern of each key it names (KeyPattern), never a value nor an
// argument. "set login:code:13812345678 123456:0 ex 120" is
// "set login:code:*".
func Statement(cmd redis.Cmder) string {
	args := cmd.Args()
	name := strings.ToLower(cmd.Name())
	var keys []any
	switch {
	case len(args) < 2 || keyless[name]:
	case allKeys[name]:
		keys = args[1:]
	case withSubcommand[name]:
		name += " " + word(args[1])
		if len(args) > 2 {
			keys = args[2:3]
		}
	case strings.HasPrefix(name, "eval") || strings.HasPrefix(name, "fcall"):
		keys = scriptKeys(args)
	case name == "xread" || name == "xreadgroup":
		keys = streamKeys(args)
	default:
		keys = args[1:2]
	}
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		b.WriteByte(' ')
		b.WriteString(KeyPattern(fmt.Sprint(k)))
	}
	return b.String()
}

// scriptKeys are the keys of EVAL, EVALSHA and FCALL (and their _ro):
// name, script, numkeys, keys..., args...
func scriptKeys(args []any) []any {
	if len(args) < 3 {
		return nil
	}
	n, err := strconv.Atoi(fmt.Sprint(args[2]))
	if err != nil || n < 0 || 3+n > len(args) {
		return nil
	}
	return args[3 : 3+n]
}

// streamKeys are the stream keys of XREAD and XREADGROUP: the first half
// of what follows STREAMS.
func streamKeys(args []any) []any {
	for i, a := range args {
		if strings.EqualFold(fmt.Sprint(a), "streams") {
			rest := args[i+1:]
			return rest[:len(rest)/2]
		}
	}
	return nil
}

// word is a subcommand, "*" when it is not a plain word.
func word(a any) string {
	if s := strings.ToLower(fmt.Sprint(a)); keyWord.MatchString(s) {
		return s
	}
	return "*"
}

var (
	// keyWord is a constant part of a key: a lowercase word.
	keyWord = regexp.MustCompile(`^[a-z][a-z_.-]*$`)
	// shardTag is a shard's hash tag ({s<shard>.<n>}, redisstore.ShardTag).
	shardTag = regexp.MustCompile(`^\{s[0-9]+\.[0-9]+\}$`)
)

// KeyPattern is key with its variable part replaced by "*": its
// ':'-separated parts are kept up to the first that is neither a lowercase
// word nor a shard's hash tag. "login:code:13812345678" is "login:code:*",
// "seckill:idem:42:my-key" is "seckill:idem:*" (the client's key after
// the id goes too).
func KeyPattern(key string) string {
	parts := strings.Split(key, ":")
	for i, p := range parts {
		if !keyWord.MatchString(p) && !shardTag.MatchString(p) {
			return strings.Join(append(parts[:i:i], "*"), ":")
		}
	}
	return key
}
