package etcdaccess

import (
	"context"
	"crypto/tls"
	"fmt"
	"time"

	"google.golang.org/grpc"
)

// memberIdle is how long a member's kept connection may go unused before
// it is closed. It is below the cluster reconciler's health look (30 s by
// default), so a fleet at rest holds what it held before, the one channel
// per etcd cluster, and pays one dial per member per look; while a cluster
// heals or rolls its members are asked for their status every few hundred
// milliseconds, and those calls share one connection per member.
const memberIdle = 20 * time.Second

// Member is one member's kept connection, lent to one call: call
// Done with the call's error when it returns.
type Member struct {
	// Conn reaches that one member, through the pool's dialer and TLS.
	Conn *grpc.ClientConn
	done func(failed bool)
}

// CallOptions are the options a call on Conn needs, as etcd's client
// passes them on its own calls: wait for the connection within the call's
// deadline (it may be reconnecting after the member restarted), and the
// pool's bound on an answer's size.
func (m *Member) CallOptions() []grpc.CallOption {
	return []grpc.CallOption{grpc.WaitForReady(true), grpc.MaxCallRecvMsgSize(maxRecvMsgSize)}
}

// Done returns the connection. After a failed call it is dropped, and the
// next call dials afresh, as a call without a kept connection would: the
// path it took may be the one that failed (a Pod replaced under the same
// name behind a forward that hangs).
func (m *Member) Done(err error) { m.done(err != nil) }

// memberConn is a kept connection and who uses it. Guarded by the pool's
// lock.
type memberConn struct {
	conn    *grpc.ClientConn
	users   int
	dropped bool        // out of the map: closed once its last user is done
	idle    *time.Timer // armed while nobody uses it
	gen     int         // which arming of idle may close it
}

// Member lends the kept connection to endpoint, one member of the etcd
// cluster key, dialling it on first use. Status calls, which every health
// look and version read makes once per member, used to dial a connection
// of their own each time: through a port-forward that is two stream
// round trips to the apiserver, a TLS handshake and HTTP/2's, before the
// call itself (6 ms against 0.7 ms on an idle machine; seconds at a
// fleet heal's load). Like Borrow, it leaves the pooled channel's
// endpoints as they are.
func (p *ClientPool) Member(ctx context.Context, key string, endpoints []string, tlsCfg *tls.Config, endpoint string) (*Member, error) {
	c, err := p.Borrow(ctx, key, endpoints, tlsCfg)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pc := p.clients[key]
	if pc == nil || pc.client != c { // replaced or forgotten since
		return nil, fmt.Errorf("etcd cluster %s: client replaced; try again", key)
	}
	mc := pc.members[endpoint]
	if mc == nil {
		// grpc.NewClient underneath: no I/O under the lock.
		conn, err := c.Dial(endpoint)
		if err != nil {
			return nil, fmt.Errorf("etcd member %s: %w", endpoint, err)
		}
		mc = &memberConn{conn: conn}
		if pc.members == nil {
			pc.members = map[string]*memberConn{}
		}
		pc.members[endpoint] = mc
	}
	mc.users++
	if mc.idle != nil {
		mc.idle.Stop()
		mc.idle = nil
	}
	wake(mc.conn)
	return &Member{Conn: mc.conn, done: func(failed bool) { p.release(pc, endpoint, mc, failed) }}, nil
}

// release ends one use of mc: a failed call drops it, the last user closes
// a dropped one or arms its idle timer.
func (p *ClientPool) release(pc *pooledClient, endpoint string, mc *memberConn, failed bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	mc.users--
	if failed && pc.members[endpoint] == mc {
		delete(pc.members, endpoint)
		mc.dropped = true
	}
	if mc.users > 0 {
		return
	}
	if mc.dropped {
		_ = mc.conn.Close()
		return
	}
	mc.gen++
	gen := mc.gen
	mc.idle = time.AfterFunc(p.memberIdle, func() { p.expire(pc, endpoint, mc, gen) })
}

// expire closes mc if nobody used it since the arming gen.
func (p *ClientPool) expire(pc *pooledClient, endpoint string, mc *memberConn, gen int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if mc.users > 0 || mc.gen != gen || pc.members[endpoint] != mc {
		return
	}
	delete(pc.members, endpoint)
	mc.dropped = true
	_ = mc.conn.Close()
}

// closeMembers closes pc's kept connections, for a client that is closed
// or replaced; a call still using one fails, as it would on the client.
// Called with the pool's lock held.
func (pc *pooledClient) closeMembers() {
	for _, mc := range pc.members {
		if mc.idle != nil {
			mc.idle.Stop()
		}
		mc.dropped = true
		_ = mc.conn.Close()
	}
	pc.members = nil
}
