// Package portforward is the kubelet side of pods/portforward for the sandbox:
// a small HTTPS server that a real kube-apiserver reaches when a client
// port-forwards to a Pod, and that connects each forwarded stream to a local
// TCP address, typically a real etcd process on a loopback IP.
//
// # Setup
//
//	srv, err := portforward.NewServer(func(ns, pod string, port int32) (string, error) {
//		return members[ns+"/"+pod] + ":" + strconv.Itoa(int(port)), nil
//	})
//	defer srv.Close()
//
// Then create a Node whose status has an InternalIP of 127.0.0.1 and
// daemonEndpoints.kubeletEndpoint.port = srv.Port() (through UpdateStatus:
// without the port the apiserver dials 10250), and Pods with spec.nodeName set
// to that Node. One Server can back any number of Nodes and Pods, because the
// apiserver puts the namespace and Pod name in the request path.
//
// # Implementation details
//
// The apiserver sends POST /portForward/{ns}/{pod} with a SPDY/3.1 upgrade
// when its client used SPDY or the SPDY-over-WebSocket tunnel (it ends that
// WebSocket itself), and proxies a plain channel-protocol WebSocket
// (v4.channel.k8s.io, what etcdfleet's default dialer sends) untouched as a
// GET with ?ports=. ServePortForward from k8s.io/cri-streaming serves both,
// as the kubelet does: the handshake, pairing each error+data stream pair
// (or channel pair), and calling PortForward.
// The apiserver does not verify the kubelet certificate unless it runs with
// --kubelet-certificate-authority; CAPEM is there for that flag, which is why
// the certificate carries the IP SAN 127.0.0.1. No client certificate is
// asked for: the apiserver presents none by default.
//
// ServePortForward calls PortForward with context.Background and never
// cancels it, and http.Server.Close does not know hijacked connections, so the
// Server tracks both the hijacked connections and the target sockets and
// closes them itself in Close, then waits for every handler and copy
// goroutine to end.
//
// # Trade-offs
//
// The target socket is closed as soon as either direction ends instead of
// honouring TCP half-close: some targets never close after a half-close, and
// gRPC, the only protocol the sandbox forwards, never half-closes.
package portforward
