package lock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
)

// ZookeeperRoot is the znode under which every lock keeps its queue:
// the lock on key k is the queue of children of ZookeeperRoot + "/" + k.
const ZookeeperRoot = "/seckill/locks"

// Zookeeper is the ZooKeeper backend, the classic lock recipe. Each
// contender queues an ephemeral sequential znode under the key. The lowest
// sequence number holds the lock. Each waiter watches only its predecessor,
// so waiters are served in order. The session is the lease: TTL is its
// timeout. Token is the czxid of the holder's znode. docs/locks.md explains
// these choices.
type Zookeeper struct {
	conn   *zk.Conn
	owned  bool
	closed atomic.Bool // Close was called on an owned connection
	opts   Options
	acl    []zk.ACL
}

var _ Locker = (*Zookeeper)(nil)

// NewZookeeper returns a backend on an existing ZooKeeper connection, which
// stays owned by the caller. Options.TTL does not apply: the session
// timeout was chosen when conn was made.
func NewZookeeper(conn *zk.Conn, opts ...Option) (*Zookeeper, error) {
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if conn == nil {
		return nil, errors.New("lock: zookeeper: nil connection")
	}
	return &Zookeeper{conn: conn, opts: o, acl: zk.WorldACL(zk.PermAll)}, nil
}

// DialZookeeper connects to the ZooKeeper servers addrs with a session
// timeout of Options.TTL. It waits until the session is established or ctx
// ends. It returns a backend owning that one connection; Close ends it. The
// client library's log lines go to log at debug level. A nil log discards
// them.
func DialZookeeper(ctx context.Context, addrs []string, log *slog.Logger, opts ...Option) (*Zookeeper, error) {
	o := NewOptions(opts...)
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, errors.New("lock: zookeeper: no servers")
	}
	conn, events, err := zk.Connect(addrs, o.TTL, zk.WithLogger(zkLogger{log: log}), zk.WithLogInfo(log != nil))
	if err != nil {
		return nil, fmt.Errorf("lock: zookeeper: connect %v: %w", addrs, err)
	}
	for {
		select {
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("lock: zookeeper: connect %v: no session: %w", addrs, ctx.Err())
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("lock: zookeeper: connect %v: connection closed", addrs)
			}
			if ev.State == zk.StateHasSession {
				// The event channel may stay unread from here on: the
				// library drops events when its buffer is full.
				return &Zookeeper{conn: conn, owned: true, opts: o, acl: zk.WorldACL(zk.PermAll)}, nil
			}
			if ev.State == zk.StateAuthFailed {
				conn.Close()
				return nil, fmt.Errorf("lock: zookeeper: connect %v: authentication failed", addrs)
			}
		}
	}
}

// zookeeperDialTimeout bounds how long New waits for a ZooKeeper session.
const zookeeperDialTimeout = 10 * time.Second

// dialZookeeperForNew is DialZookeeper for the factory New, which has no
// context and no logger: it waits up to zookeeperDialTimeout and discards
// the client library's log.
func dialZookeeperForNew(addrs []string, opts ...Option) (*Zookeeper, error) {
	ctx, cancel := context.WithTimeout(context.Background(), zookeeperDialTimeout)
	defer cancel()
	return DialZookeeper(ctx, addrs, nil, opts...)
}

// Close ends the session when the backend made the connection itself
// (DialZookeeper, or New), which deletes its ephemeral nodes and so frees
// every lock it held. It does nothing for a connection passed to
// NewZookeeper. It implements io.Closer and always returns nil.
func (z *Zookeeper) Close() error {
	if z.owned && z.closed.CompareAndSwap(false, true) {
		z.conn.Close()
	}
	return nil
}

// errSessionClosed means this backend's own session was closed: its
// ephemeral nodes, and so its locks, are gone.
var errSessionClosed = errors.New("session closed")

// Name returns "zookeeper".
func (z *Zookeeper) Name() string { return "zookeeper" }

// QueuePath returns the znode whose children queue for the lock on key.
// Keys are escaped into one path segment.
func (z *Zookeeper) QueuePath(key string) string {
	segment := url.PathEscape(key)
	if segment == "" || segment == "." || segment == ".." {
		segment = "%" + segment // impossible in an escaped key: no clash
	}
	return ZookeeperRoot + "/" + segment
}

// Obtain queues an ephemeral sequential node for key. It waits until every
// node queued before it is gone, up to Options.Wait or until ctx ends. With
// a zero Wait it only gets the lock when the queue was empty. On giving up
// it deletes its own node, so the waiters behind it move up.
func (z *Zookeeper) Obtain(ctx context.Context, key string) (Lock, error) {
	if ctx.Err() != nil {
		return nil, fmt.Errorf("lock: zookeeper: obtain %q: %w", key, waitErr(ctx))
	}
	dir := z.QueuePath(key)
	own, err := z.enqueue(dir)
	if err != nil {
		return nil, fmt.Errorf("lock: zookeeper: obtain %q: enqueue: %w", key, err)
	}
	seq, err := zkSeq(path.Base(own))
	if err != nil {
		return nil, errors.Join(fmt.Errorf("lock: zookeeper: obtain %q: %w", key, err), z.remove(own))
	}
	var deadline <-chan time.Time
	if z.opts.Wait > 0 {
		t := time.NewTimer(z.opts.Wait)
		defer t.Stop()
		deadline = t.C
	}
	for {
		children, _, err := z.conn.Children(dir)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("lock: zookeeper: obtain %q: list queue: %w", key, err), z.remove(own))
		}
		pred, present := zkPredecessor(children, path.Base(own), seq)
		if !present {
			// Our ephemeral node is gone: the session expired while we queued.
			return nil, fmt.Errorf("lock: zookeeper: obtain %q: session lost while queued", key)
		}
		if pred == "" {
			exists, stat, err := z.conn.Exists(own)
			if err != nil {
				return nil, errors.Join(fmt.Errorf("lock: zookeeper: obtain %q: stat own node: %w", key, err), z.remove(own))
			}
			if !exists {
				return nil, fmt.Errorf("lock: zookeeper: obtain %q: session lost while queued", key)
			}
			return &zkLock{key: key, path: own, token: stat.Czxid, z: z}, nil
		}
		if z.opts.Wait <= 0 {
			return nil, errors.Join(fmt.Errorf("lock: zookeeper: obtain %q: %w", key, ErrNotObtained), z.remove(own))
		}
		_, _, ch, err := z.conn.GetW(dir + "/" + pred)
		if errors.Is(err, zk.ErrNoNode) {
			continue // the predecessor left between the listing and the watch
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("lock: zookeeper: obtain %q: watch predecessor: %w", key, err), z.remove(own))
		}
		select {
		case <-ch:
			// Deleted (or the session changed): look at the queue again.
		case <-deadline:
			return nil, errors.Join(fmt.Errorf("lock: zookeeper: obtain %q: %w (waited %v)", key, ErrNotObtained, z.opts.Wait), z.remove(own))
		case <-ctx.Done():
			return nil, errors.Join(fmt.Errorf("lock: zookeeper: obtain %q: %w", key, waitErr(ctx)), z.remove(own))
		}
	}
}

// enqueue creates this contender's node in dir, creating dir (a container
// node, which the server removes once it is empty) and its parents when
// missing. The node name carries a random prefix so that a create retried
// after a lost connection finds the node it already made.
func (z *Zookeeper) enqueue(dir string) (string, error) {
	var err error
	for range 3 {
		var own string
		own, err = z.conn.CreateProtectedEphemeralSequential(dir+"/lock-", nil, z.acl)
		if err == nil {
			return own, nil
		}
		if !errors.Is(err, zk.ErrNoNode) {
			return "", err
		}
		if err = z.ensureDir(dir); err != nil {
			return "", err
		}
	}
	return "", err
}

// ensureDir creates the persistent parents of dir and dir itself as a
// container node. Nodes created concurrently by others are fine.
func (z *Zookeeper) ensureDir(dir string) error {
	_, err := z.conn.CreateContainer(dir, nil, zk.FlagContainer, z.acl)
	if err == nil || errors.Is(err, zk.ErrNodeExists) {
		return nil
	}
	if !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	parts := strings.Split(strings.TrimPrefix(path.Dir(dir), "/"), "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		if _, err := z.conn.Create(p, nil, 0, z.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	if _, err := z.conn.CreateContainer(dir, nil, zk.FlagContainer, z.acl); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// remove deletes a node this contender gave up, on a context that
// survives the caller's cancellation (see deleteNode).
func (z *Zookeeper) remove(node string) error {
	ctx, cancel := context.WithTimeout(context.Background(), z.opts.ReleaseTimeout)
	defer cancel()
	if _, err := z.deleteNode(ctx, node); err != nil {
		return err
	}
	return nil
}

// deleteNode deletes node, retrying transient failures with backoff until
// ctx ends: a node left behind would block the queue until the session
// ends. gone reports that the node did not exist at the first attempt.
// A node missing after a failed attempt counts as deleted (the failed
// attempt's reply may have been lost after the server applied it).
func (z *Zookeeper) deleteNode(ctx context.Context, node string) (gone bool, err error) {
	b := backoff{min: z.opts.BackoffMin, max: z.opts.BackoffMax}
	for attempt := 0; ; attempt++ {
		err := z.conn.Delete(node, -1)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, zk.ErrNoNode):
			return attempt == 0, nil
		case errors.Is(err, zk.ErrClosing) || z.closed.Load():
			return false, fmt.Errorf("delete %s: %w: %w", node, errSessionClosed, err)
		}
		t := time.NewTimer(b.next())
		select {
		case <-ctx.Done():
			t.Stop()
			return false, fmt.Errorf("delete %s: %w (gave up: %w)", node, err, ctx.Err())
		case <-t.C:
		}
	}
}

// zkSeq parses the ten-digit sequence suffix ZooKeeper appends to a
// sequential node's name.
func zkSeq(name string) (int64, error) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return 0, fmt.Errorf("node %q has no sequence number", name)
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("node %q: sequence number: %w", name, err)
	}
	return n, nil
}

// zkPredecessor returns the child queued immediately before own (seq),
// "" when own is first, and whether own is among children at all.
func zkPredecessor(children []string, own string, seq int64) (pred string, present bool) {
	best := int64(-1)
	for _, c := range children {
		if c == own {
			present = true
			continue
		}
		s, err := zkSeq(c)
		if err != nil {
			continue // not a lock node
		}
		if s < seq && s > best {
			best, pred = s, c
		}
	}
	return pred, present
}

// zkLock is one lock held by an ephemeral node.
type zkLock struct {
	key   string
	path  string
	token int64
	z     *Zookeeper

	mu       sync.Mutex
	released bool
}

// Key returns the locked key.
func (l *zkLock) Key() string { return l.key }

// Token returns the czxid of the holder's node (see Zookeeper).
func (l *zkLock) Token() (int64, bool) { return l.token, true }

// Release deletes the holder's node, which wakes the next waiter. It retries
// a lost connection until ctx ends. The session, and so the node, survive a
// reconnect within the session timeout. It returns ErrNotHeld when the node
// is already gone, released before or deleted with an expired session. So it
// does when this backend's session was closed.
func (l *zkLock) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return fmt.Errorf("lock: zookeeper: release %q: %w (already released)", l.key, ErrNotHeld)
	}
	gone, err := l.z.deleteNode(ctx, l.path)
	switch {
	case errors.Is(err, errSessionClosed):
		l.released = true
		return fmt.Errorf("lock: zookeeper: release %q: %w (%w)", l.key, ErrNotHeld, err)
	case err != nil:
		return fmt.Errorf("lock: zookeeper: release %q: %w", l.key, err)
	case gone:
		l.released = true
		return fmt.Errorf("lock: zookeeper: release %q: %w (node gone: session expired?)", l.key, ErrNotHeld)
	}
	l.released = true
	return nil
}

// zkLogger routes the ZooKeeper client's log lines to slog at debug level.
type zkLogger struct{ log *slog.Logger }

// Printf implements zk.Logger.
func (l zkLogger) Printf(format string, args ...any) {
	if l.log != nil {
		l.log.Debug("zookeeper client", "msg", fmt.Sprintf(format, args...))
	}
}
