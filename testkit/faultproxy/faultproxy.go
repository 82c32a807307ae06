// Package faultproxy is a TCP proxy for tests. It puts one deterministic
// fault between a Redis client and its server. Either the reply to one chosen
// command is lost after the server ran the command, or the command itself is
// lost before it reaches the server. In the first case the client sees the
// connection drop. go-redis then retries the same command on a new
// connection. A pipeline of one chosen command can be cut part-way, or its
// replies held back.
//
// It also degrades the whole link. A partition holds every byte in both
// directions until healed, as TCP retransmission would deliver them late. A
// delay holds each chunk before forwarding it. It is test support only:
// nothing in the product imports it.
package faultproxy

import (
	"bytes"
	"net"
	"strings"
	"sync"
	"time"
)

// Proxy forwards every connection it accepts to one target address.
type Proxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	conns []net.Conn
	arm   *fault         // the next matching command meets this fault
	pipe  *pipeFault     // the next matching pipeline meets this fault
	seen  map[string]int // commands forwarded to the server, by lower-case name
	// seenArg counts them by lower-case name and first argument.
	seenArg map[[2]string]int
	healed  chan struct{}        // closed while the link is whole; open during a partition
	delay   func() time.Duration // the hold of each chunk; nil: none
}

type fault struct {
	cmd       string // lower-case command name, e.g. "evalsha"
	loseReply bool   // forward the command, lose its reply; else lose the command
	onLost    func() // runs after the reply was swallowed, before the drop
}

// pipeFault meets the first chunk carrying more than one command named cmd
// with first argument arg: a pipeline of them.
type pipeFault struct {
	cmd, arg string
	cut      int           // >= 0: forward this many commands whole, half the next, drop
	stall    time.Duration // cut < 0: hold each later reply of the connection this long
}

// Start listens on a free local port and forwards to target.
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, seen: map[string]int{}, seenArg: map[[2]string]int{}, healed: make(chan struct{})}
	close(p.healed)
	go p.serve()
	return p, nil
}

// Addr is the proxy's host:port, for the client under test.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Heal()
	p.Cut()
}

// LoseReply arms the proxy once: the next command named cmd (any case,
// e.g. "evalsha") is forwarded to the server and runs there, but its reply
// is swallowed. onLost (if not nil) runs, then both sides of that
// connection are closed. A -NOSCRIPT reply is forwarded and keeps the
// proxy armed, since the command did not run.
func (p *Proxy) LoseReply(cmd string, onLost func()) {
	p.mu.Lock()
	p.arm = &fault{cmd: strings.ToLower(cmd), loseReply: true, onLost: onLost}
	p.mu.Unlock()
}

// LoseCommand arms the proxy once: the next command named cmd never
// reaches the server, and the client's connection is closed.
func (p *Proxy) LoseCommand(cmd string) {
	p.mu.Lock()
	p.arm = &fault{cmd: strings.ToLower(cmd)}
	p.mu.Unlock()
}

// CutPipeline arms the proxy once: the next chunk carrying a pipeline of
// commands named cmd whose first argument is arg (more than one, e.g.
// EVALSHA of one script) reaches the server cut. Its first n commands
// arrive whole and the next one half. The server runs what it got, then
// both sides of the connection are closed.
func (p *Proxy) CutPipeline(cmd, arg string, n int) {
	p.mu.Lock()
	p.pipe = &pipeFault{cmd: strings.ToLower(cmd), arg: arg, cut: n}
	p.mu.Unlock()
}

// StallPipeline arms the proxy once: the connection of the next chunk
// carrying a pipeline of commands named cmd whose first argument is arg
// forwards it, then holds each of its later replies for d.
func (p *Proxy) StallPipeline(cmd, arg string, d time.Duration) {
	p.mu.Lock()
	p.pipe = &pipeFault{cmd: strings.ToLower(cmd), arg: arg, cut: -1, stall: d}
	p.mu.Unlock()
}

// Cut closes every connection made so far, as a server or network reset
// would. The proxy keeps accepting new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Partition stops the link in both directions: bytes already sent and
// new connections wait, silently, until Heal. Connections stay open.
func (p *Proxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
		p.healed = make(chan struct{})
	default: // already cut
	}
}

// Heal ends a partition: what waited is forwarded, in order.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
	default:
		close(p.healed)
	}
}

// SetDelay makes each chunk, in either direction, wait delay() before it
// is forwarded (nil: no delay). Each direction keeps its order, so a
// delay delays a connection's later chunks as well.
func (p *Proxy) SetDelay(delay func() time.Duration) {
	p.mu.Lock()
	p.delay = delay
	p.mu.Unlock()
}

// hold waits for the link's partition to heal and for its delay, or until
// stop is closed. It reports false when stop ended the wait.
func (p *Proxy) hold(stop <-chan struct{}) bool {
	p.mu.Lock()
	healed, delay := p.healed, p.delay
	p.mu.Unlock()
	select {
	case <-healed:
	case <-stop:
		return false
	}
	if delay != nil {
		if d := delay(); d > 0 {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
			case <-stop:
				return false
			}
		}
	}
	// A partition may have begun during the delay.
	p.mu.Lock()
	healed = p.healed
	p.mu.Unlock()
	select {
	case <-healed:
		return true
	case <-stop:
		return false
	}
}

// Seen reports how many commands named cmd were forwarded to the server.
func (p *Proxy) Seen(cmd string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[strings.ToLower(cmd)]
}

// SeenWith reports how many commands named cmd whose first argument is arg
// (e.g. EVALSHA of one script's SHA) were forwarded to the server.
func (p *Proxy) SeenWith(cmd, arg string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seenArg[[2]string{strings.ToLower(cmd), arg}]
}

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, up)
		p.mu.Unlock()
		var pending sync.Mutex  // guards reply and stall
		var reply *fault        // the fault waiting for this connection's next reply
		var stall time.Duration // each reply's hold, once StallPipeline met the connection
		stop := make(chan struct{})
		var once sync.Once
		drop := func() { once.Do(func() { close(stop); c.Close(); up.Close() }) }
		go func() { // client -> server
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					chunk := buf[:n]
					f, pf, cut := p.match(chunk)
					if pf != nil && pf.cut >= 0 {
						_, _ = up.Write(chunk[:cut])
						sleep(pipeCutWait, stop) // the server runs what it got
						drop()
						return
					}
					if pf != nil {
						pending.Lock()
						stall = pf.stall
						pending.Unlock()
					}
					if f != nil && !f.loseReply {
						drop()
						return
					}
					if f != nil {
						pending.Lock()
						reply = f
						pending.Unlock()
					}
					if !p.hold(stop) {
						return
					}
					if _, werr := up.Write(chunk); werr != nil {
						drop()
						return
					}
				}
				if err != nil {
					drop()
					return
				}
			}
		}()
		go func() { // server -> client
			buf := make([]byte, 64<<10)
			for {
				n, err := up.Read(buf)
				if n > 0 {
					pending.Lock()
					f, held := reply, stall
					reply = nil
					pending.Unlock()
					if f != nil && bytes.HasPrefix(buf[:n], []byte("-NOSCRIPT")) {
						p.mu.Lock()
						p.arm = f // the command did not run: stay armed
						p.mu.Unlock()
						f = nil
					}
					if f != nil {
						if f.onLost != nil {
							f.onLost()
						}
						drop()
						return
					}
					if !sleep(held, stop) || !p.hold(stop) {
						return
					}
					if _, werr := c.Write(buf[:n]); werr != nil {
						drop()
						return
					}
				}
				if err != nil {
					drop()
					return
				}
			}
		}()
	}
}

// pipeCutWait is how long a cut pipeline's connection stays open after
// the cut, so that the server runs what it got.
const pipeCutWait = 100 * time.Millisecond

// match counts the commands of chunk that reach the server. It returns the
// armed fault (disarming it) when chunk carries its command, and the armed
// pipeline fault when chunk carries its pipeline, with where the chunk is
// cut (a cut pipeline counts only its commands sent whole).
func (p *Proxy) match(chunk []byte) (*fault, *pipeFault, int) {
	cmds := commands(chunk)
	p.mu.Lock()
	defer p.mu.Unlock()
	var pf *pipeFault
	cut := len(chunk)
	if p.pipe != nil && pipelined(cmds, p.pipe.cmd, p.pipe.arg) {
		pf, p.pipe = p.pipe, nil
		if pf.cut >= 0 && pf.cut < len(cmds) {
			end := len(chunk)
			if pf.cut+1 < len(cmds) {
				end = cmds[pf.cut+1].at
			}
			cut = cmds[pf.cut].at + (end-cmds[pf.cut].at)/2
			cmds = cmds[:pf.cut]
		}
	}
	var hit *fault
	for _, c := range cmds {
		if p.arm != nil && p.arm.cmd == c.name {
			hit, p.arm = p.arm, nil
			if !hit.loseReply {
				continue // never reaches the server: not seen
			}
		}
		p.seen[c.name]++
		p.seenArg[[2]string{c.name, c.arg}]++
	}
	return hit, pf, cut
}

// pipelined reports whether cmds hold more than one command named name
// whose first argument is arg.
func pipelined(cmds []command, name, arg string) bool {
	n := 0
	for _, c := range cmds {
		if c.name == name && c.arg == arg {
			n++
		}
	}
	return n > 1
}

// command is one RESP command of a chunk.
type command struct {
	name string // lower case
	arg  string // the first argument, "" when none
	at   int    // where it starts in the chunk
}

// commands returns the RESP commands in chunk
// ("*<n>\r\n$<len>\r\n<name>\r\n...").
func commands(chunk []byte) []command {
	var out []command
	for at := 0; ; {
		i := bytes.IndexByte(chunk[at:], '*')
		if i < 0 {
			return out
		}
		start := at + i
		at = start + 1
		lines := bytes.SplitN(chunk[at:], []byte("\r\n"), 6)
		if len(lines) < 3 || !digits(lines[0]) || len(lines[1]) < 2 || lines[1][0] != '$' {
			continue // a '*' inside an argument, not an array header
		}
		c := command{name: strings.ToLower(string(lines[2])), at: start}
		if len(lines) >= 5 && len(lines[3]) > 1 && lines[3][0] == '$' {
			c.arg = string(lines[4])
		}
		out = append(out, c)
	}
}

// sleep waits d, or until stop is closed: false then.
func sleep(d time.Duration, stop <-chan struct{}) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-stop:
		return false
	}
}

func digits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}
