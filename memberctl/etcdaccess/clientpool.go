package etcdaccess

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"
)

const (
	// dialTimeout is what etcd's client calls DialTimeout. With grpc.NewClient
	// it no longer blocks New; it bounds the client's own bootstrap calls
	// (auth token, version check) and seeds the lease keep-alive timeout.
	// Reconcilers put their own, shorter, deadline on each request.
	dialTimeout = 5 * time.Second
	// keepAliveTime is how long a gRPC connection may be silent before the
	// client pings it. It is what notices a forward that died without a
	// close (apiserver or kubelet gone). It must stay above etcd's
	// --grpc-keepalive-min-time (5 s) or etcd answers with GOAWAY.
	keepAliveTime = 30 * time.Second
	// grpcReadBuffer replaces gRPC's 32 KiB per connection: membership and
	// status calls are small, and a fleet holds three connections per etcd
	// cluster for as long as it runs. Larger messages still pass; they
	// just take more reads.
	grpcReadBuffer = 8 << 10
	// maxRecvMsgSize bounds one answer of etcd. The manager asks only for
	// membership, status, alarms and defragmentation, answers of a few
	// KiB; clientv3's default (2 GiB) would let whatever answers on a
	// workload cluster's port-forward make one call allocate that much, in
	// the process every workload cluster shares (security review M5).
	maxRecvMsgSize = 4 << 20
	// keepAliveTimeout is how long a ping may go unanswered before the
	// connection is closed and redialled: a forward adds about a
	// millisecond, so 10 s means the path is gone, not slow.
	keepAliveTimeout = 10 * time.Second
)

// ErrPoolClosed is returned by Get after Close.
var ErrPoolClosed = errors.New("etcd client pool is closed")

// ClientPool keeps one etcd client per etcd cluster, so that reconcilers do
// not dial per operation. Safe for concurrent use.
type ClientPool struct {
	dialer PodDialer
	logger *zap.Logger

	// memberIdle is the package's memberIdle; tests shorten it.
	memberIdle time.Duration

	mu      sync.Mutex
	closed  bool
	clients map[string]*pooledClient
}

type pooledClient struct {
	client    *clientv3.Client
	endpoints []string // sorted
	tls       *tls.Config
	members   map[string]*memberConn // by endpoint: Member
}

// NewClientPool returns a pool whose clients reach members through d.
// A nil logger keeps the etcd client's default.
func NewClientPool(d PodDialer, logger *zap.Logger) *ClientPool {
	return &ClientPool{dialer: d, logger: logger, memberIdle: memberIdle, clients: map[string]*pooledClient{}}
}

// Get returns the client for key (e.g. "namespace/name"), creating it on
// first use. A changed endpoint set is applied in place with SetEndpoints, so
// calls in flight carry on; a changed TLS config replaces the client, which
// closes the old one under any caller still holding it. Endpoints have the
// form <scheme>://<pod>.<subdomain>.<namespace>.svc:<port>.
func (p *ClientPool) Get(ctx context.Context, key string, endpoints []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	return p.get(ctx, key, endpoints, tlsCfg, true)
}

// Borrow is Get for a caller that dials one member through the client
// (Status, Defragment and MoveLeader each open a connection of their own):
// an existing client keeps its endpoint set. Passing that one member to
// Get would set the cluster's shared channel to it, closing the channel's
// connections to every other member, and the next Get with the whole set
// would dial them all again through the apiserver.
func (p *ClientPool) Borrow(ctx context.Context, key string, endpoints []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	return p.get(ctx, key, endpoints, tlsCfg, false)
}

func (p *ClientPool) get(ctx context.Context, key string, endpoints []string, tlsCfg *tls.Config, setEndpoints bool) (*clientv3.Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("etcd cluster %s: no endpoints", key)
	}
	eps := slices.Clone(endpoints)
	slices.Sort(eps)
	eps = slices.Compact(eps)

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrPoolClosed
	}
	if pc := p.clients[key]; pc != nil {
		if sameTLS(pc.tls, tlsCfg) {
			if !setEndpoints {
				return pc.client, nil
			}
			if !slices.Equal(pc.endpoints, eps) {
				pc.client.SetEndpoints(eps...)
				pc.endpoints = eps
			}
			wake(pc.client.ActiveConnection())
			return pc.client, nil
		}
		delete(p.clients, key)
		pc.close()
	}
	c, err := p.newClient(eps, tlsCfg)
	if err != nil {
		return nil, fmt.Errorf("etcd cluster %s: %w", key, err)
	}
	p.clients[key] = &pooledClient{client: c, endpoints: eps, tls: tlsCfg}
	return c, nil
}

// newClient builds a client. It does no I/O (grpc.NewClient connects on
// first use), so Get may call it under the pool's lock.
func (p *ClientPool) newClient(eps []string, tlsCfg *tls.Config) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            eps,
		TLS:                  tlsCfg,
		DialTimeout:          dialTimeout,
		DialKeepAliveTime:    keepAliveTime,
		DialKeepAliveTimeout: keepAliveTimeout,
		Logger:               p.logger,
		MaxCallRecvMsgSize:   maxRecvMsgSize,
		DialOptions: []grpc.DialOption{grpc.WithContextDialer(ContextDialer(p.dialer)),
			// The write buffer is taken from a pool per flush instead of
			// being held by each idle connection.
			grpc.WithSharedWriteBuffer(true), grpc.WithReadBufferSize(grpcReadBuffer)},
	})
}

// wake makes a channel whose members all failed their last connect attempt
// try again now. While etcd is down, gRPC waits 1 s after the first failed
// attempt and 1.6 times longer after each next one, up to 120 s, so after
// an outage of 30 s the pooled channel would stay down for up to another
// 17 s, and after a power cut of minutes for up to two more minutes,
// failing every call of the reconcile that comes once etcd is back. A
// caller of Get is about to send a call, so one attempt per Get is what a
// down cluster costs anyway, and it is no more than the reconciles' own
// pace. Per-member calls dial a connection of their own (Defragment,
// MoveLeader) or get a kept one from Member, which wakes it the same way.
func wake(cc *grpc.ClientConn) {
	switch cc.GetState() {
	case connectivity.TransientFailure:
		cc.ResetConnectBackoff()
	case connectivity.Idle:
		cc.Connect()
	}
}

// Forget closes and drops the client for key, e.g. when its cluster is
// deleted. The next Get creates a new one.
func (p *ClientPool) Forget(key string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc := p.clients[key]; pc != nil {
		delete(p.clients, key)
		pc.close()
	}
}

// Close closes every client. The pool cannot be used afterwards; the
// PodDialer is not closed, since the caller owns it.
func (p *ClientPool) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	clients := p.clients
	p.clients, p.closed = nil, true
	var errs []error
	for _, pc := range clients {
		if err := pc.close(); err != nil && !errors.Is(err, context.Canceled) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// close closes the client and its members' kept connections. Called with
// the pool's lock held: the kept connections' bookkeeping is under it.
func (pc *pooledClient) close() error {
	pc.closeMembers()
	return pc.client.Close()
}

// sameTLS reports whether two client TLS configs would behave the same, so
// that callers may rebuild their tls.Config on every reconcile without
// replacing the client each time. Configs with callbacks cannot be compared
// and count as equal only when they are the same pointer.
func sameTLS(a, b *tls.Config) bool {
	if a == b {
		return true
	}
	if a == nil || b == nil {
		return false
	}
	if a.GetClientCertificate != nil || b.GetClientCertificate != nil ||
		a.VerifyPeerCertificate != nil || b.VerifyPeerCertificate != nil ||
		a.VerifyConnection != nil || b.VerifyConnection != nil {
		return false
	}
	if a.ServerName != b.ServerName || a.InsecureSkipVerify != b.InsecureSkipVerify ||
		a.MinVersion != b.MinVersion || a.MaxVersion != b.MaxVersion {
		return false
	}
	if (a.RootCAs == nil) != (b.RootCAs == nil) || (a.RootCAs != nil && !a.RootCAs.Equal(b.RootCAs)) {
		return false
	}
	return slices.EqualFunc(a.Certificates, b.Certificates, func(x, y tls.Certificate) bool {
		return slices.EqualFunc(x.Certificate, y.Certificate, bytes.Equal)
	})
}
