// Package etcdaccess gives reconcilers etcd clients for members that run as
// bare Pods in a workload cluster, whether the manager runs inside that
// cluster's Pod network or on a management cluster that can reach only the
// workload cluster's kube-apiserver.
//
// # Setup
//
// Pick one PodDialer per workload cluster and share it:
//
//   - NewDirectDialer(getPodIP) when the manager can route to Pod IPs,
//     i.e. it runs in the workload cluster.
//   - NewWebSocketDialer(restConfig, WebSocketOptions{}) when it cannot:
//     connections go through the apiserver's pods/portforward subresource
//     with the WebSocket channel protocol. The user needs get on
//     pods/portforward.
//   - NewPortForwardDialer(restConfig, PortForwardOptions{}) does the same
//     over SPDY, for a path to the apiserver that passes SPDY upgrades but
//     not WebSocket ones. The user needs create on pods/portforward.
//
// Then one ClientPool per PodDialer:
//
//	pool := etcdaccess.NewClientPool(dialer, logger)
//	defer pool.Close()   // before dialer.Close()
//
// # Usage
//
// Endpoints are the members' real in-cluster DNS names,
// <scheme>://<pod>.<subdomain>.<namespace>.svc:<port>, so that serving
// certificates with SANs such as *.<cluster>.<namespace>.svc verify as they
// would in cluster. The names are never resolved: ContextDialer parses them
// into namespace, Pod and port and calls DialPod.
//
//	cli, err := pool.Get(ctx, req.Namespace+"/"+req.Name, endpoints, tlsConfig)
//	ctx, cancel := context.WithTimeout(ctx, 3*time.Second) // per request
//	resp, err := cli.MemberList(ctx)
//
// Get is cheap and is meant to be called on every reconcile with the current
// endpoints and TLS config; Forget(key) when the cluster is deleted. A call
// to one member takes that member's kept connection:
//
//	m, err := pool.Member(ctx, key, endpoints, tlsConfig, endpoint)
//	resp, err := etcdserverpb.NewMaintenanceClient(m.Conn).Status(ctx, req, m.CallOptions()...)
//	m.Done(err)
//
// # Implementation details
//
// WebSocketDialer opens one WebSocket per DialPod, GET
// .../pods/{pod}/portforward?ports={port} with subprotocol
// v4.channel.k8s.io, which the apiserver proxies untouched to the kubelet
// (it translates only the SPDY-tunnelling subprotocol). The kubelet first
// writes the port number on the data and the error channel, then relays
// bytes; a message on the error channel (e.g. nothing listens on the port)
// is returned by Read and Write in place of a bare EOF. The kubelet reads
// each WebSocket frame as a whole message, so Write never fragments one:
// it splits large writes into messages that fit one frame. Auth comes from
// client-go's transport wrappers, so bearer tokens, token files and exec
// plugins work as for any other request.
//
// PortForwardDialer keeps ONE SPDY connection per Pod, upgraded lazily on
// the first DialPod and upgraded again once its CloseChan fires (the
// apiserver restarted, or the connection idled out). Each DialPod is one
// error+data stream pair on it, tagged with a fresh requestID, and comes
// back as a net.Conn. A message on the error stream (e.g. nothing listens
// on the port) is returned by Read and Write in place of a bare EOF.
//
// Per-stream errors never touch the shared connection. That is why
// client-go's PortForwarder is not used: it closes the whole session on the
// first error-stream message, so one refused dial during a member restart
// would break every other connection to that Pod. The one exception is a
// stream pair left unanswered for StreamTimeout: the connection is closed
// and the next dial upgrades a new one (discard). The kubelet's SPDY
// library hands frames to streams from five workers per connection, and a
// data frame nothing reads on its side blocks one of them for good, and
// with it the creation of a fifth of the connection's later streams.
//
// Every wait is bounded: the upgrade by UpgradeTimeout (httpstream's Dial
// takes no context, so the request carries one and callers select on
// theirs), stream creation by StreamTimeout, and a Pod connection that
// carries no stream for IdleTimeout is closed. Close closes all connections,
// which resets every stream handed out, and waits for pending upgrades.
//
// ClientPool keeps one *clientv3.Client per key, built with
// grpc.WithContextDialer(ContextDialer(d)). etcd's client builds its gRPC
// channel with grpc.NewClient, so creating a client does no I/O and the first
// request dials. gRPC keeps the connection, reconnects with backoff when a
// member restarts, and keepalive pings detect a forward that died silently.
// That backoff grows to 120 s while etcd stays down, so Get wakes a channel
// whose last attempts all failed (ResetConnectBackoff) or that went idle
// (Connect): the first call after an outage dials at once instead of
// failing for the rest of a backoff.
//
// Calls to one member (Status) do not go through that channel, whose
// balancer picks the member: Member lends a connection to that member
// alone, kept between calls and closed after memberIdle (20 s) without
// one. etcd's client would dial a connection per call instead
// (Maintenance.Status), and through the apiserver each dial is an upgrade
// request or a stream pair, then etcd's TLS handshake and HTTP/2's: 6 ms
// against 0.7 ms on an idle machine, and seconds at a fleet heal's load,
// when health looks and version reads ask every member every few hundred
// milliseconds. memberIdle is below the cluster reconciler's health look
// (30 s), so a fleet at rest keeps no more connections than before. A call
// that fails drops its connection and the next one dials afresh, as it
// did before: the failed path may be the one that is wrong.
//
// # Trade-offs
//
//   - WebSocket is the default because it is small: a connection holds a
//     4 KiB read buffer and TLS state, and write buffers are pooled across
//     connections. A SPDY connection holds a zlib header compressor at best
//     compression, about 0.8 MiB, for its whole life: with three members per
//     etcd cluster that alone was 2.4 MiB per workload cluster, more than
//     the fleet manager's whole per-cluster budget.
//   - WebSocket pays one TLS handshake through the apiserver per gRPC
//     connection instead of one per Pod; gRPC keeps its connections, so
//     that is once per member until a member or the apiserver restarts.
//   - Through the apiserver, a request costs about 0.3-0.6 ms more and a new
//     TCP connection about 2 ms more than direct; an upgrade costs 6-10 ms.
//   - SPDY: all traffic to a Pod shares one TCP connection to the
//     apiserver, which pays the upgrade once per Pod; etcd clients hold few
//     connections and little traffic, so head-of-line blocking has not
//     mattered. Deadlines on its net.Conn are accepted and ignored, because
//     SPDY streams have none; gRPC bounds its handshake by context and finds
//     dead peers with keepalive instead. WebSocket deadlines are real.
//   - A changed TLS config replaces the pooled client and closes the old one
//     under callers still holding it; their calls fail once and the next Get
//     returns the new client.
package etcdaccess
