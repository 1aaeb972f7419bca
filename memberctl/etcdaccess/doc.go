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
//   - NewPortForwardDialer(restConfig, PortForwardOptions{}) when it cannot:
//     connections go through the apiserver's pods/portforward subresource.
//     The manager's user needs create on pods/portforward (plus get, if a
//     WebSocket dialer is ever used) and get/list on pods.
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
// endpoints and TLS config; Forget(key) when the cluster is deleted.
//
// # Implementation details
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
// would break every other connection to that Pod.
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
//
// # Trade-offs
//
//   - Through the apiserver, a request costs about 0.3-0.6 ms more and a new
//     TCP connection about 2 ms more than direct; the first upgrade to a Pod
//     costs 6-10 ms. Sharing one connection per Pod pays the upgrade once.
//   - All traffic to a Pod shares one TCP connection to the apiserver. etcd
//     clients hold few connections and little traffic, so head-of-line
//     blocking has not mattered; bulk transfers (snapshots) should not use it.
//   - Deadlines on the returned net.Conn are accepted and ignored, because
//     SPDY streams have none; gRPC bounds its handshake by context and finds
//     dead peers with keepalive instead.
//   - A changed TLS config replaces the pooled client and closes the old one
//     under callers still holding it; their calls fail once and the next Get
//     returns the new client.
package etcdaccess
