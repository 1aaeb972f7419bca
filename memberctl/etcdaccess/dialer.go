package etcdaccess

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// PodDialer opens a TCP connection to a port of a Pod.
type PodDialer interface {
	DialPod(ctx context.Context, namespace, pod string, port int) (net.Conn, error)
}

// directDialer dials the Pod IP; for a manager that runs inside the
// workload cluster's Pod network.
type directDialer struct {
	getPodIP func(ctx context.Context, namespace, pod string) (string, error)
	dialer   net.Dialer
}

// NewDirectDialer returns a PodDialer that dials the Pod IP that getPodIP
// returns, typically read from the Pod's status through a cache.
func NewDirectDialer(getPodIP func(ctx context.Context, namespace, pod string) (string, error)) PodDialer {
	return &directDialer{getPodIP: getPodIP}
}

func (d *directDialer) DialPod(ctx context.Context, namespace, pod string, port int) (net.Conn, error) {
	ip, err := d.getPodIP(ctx, namespace, pod)
	if err != nil {
		return nil, fmt.Errorf("pod %s/%s: %w", namespace, pod, err)
	}
	if ip == "" {
		return nil, fmt.Errorf("pod %s/%s has no IP yet", namespace, pod)
	}
	// No timeout of our own: gRPC passes a ctx bounded by its connect deadline.
	return d.dialer.DialContext(ctx, "tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
}

// ContextDialer adapts d for grpc.WithContextDialer. gRPC passes the host:port
// of the endpoint untouched (no DNS lookup), so the address is parsed as the
// in-cluster DNS name <pod>.<subdomain>.<namespace>.svc[.<domain>]:<port> of
// a Pod with a hostname and subdomain, and dialled with d.
func ContextDialer(d PodDialer) func(ctx context.Context, addr string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		ns, pod, port, err := ParsePodAddress(addr)
		if err != nil {
			return nil, err
		}
		return d.DialPod(ctx, ns, pod, port)
	}
}

// ParsePodAddress splits <pod>.<subdomain>.<namespace>.svc[.<domain>]:<port>
// into the Pod's namespace, name and port. The subdomain is not returned:
// the Pod name alone identifies the Pod within its namespace.
func ParsePodAddress(addr string) (namespace, pod string, port int, err error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", 0, fmt.Errorf("etcd address %q: %w", addr, err)
	}
	port, err = strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", "", 0, fmt.Errorf("etcd address %q: invalid port %q", addr, portStr)
	}
	labels := strings.Split(strings.TrimSuffix(strings.ToLower(host), "."), ".")
	if len(labels) < 4 || labels[3] != "svc" {
		return "", "", 0, fmt.Errorf("etcd address %q: want <pod>.<subdomain>.<namespace>.svc[.<domain>]:<port>", addr)
	}
	for _, l := range labels {
		if l == "" {
			return "", "", 0, fmt.Errorf("etcd address %q: empty DNS label", addr)
		}
	}
	return labels[2], labels[0], port, nil
}

// coreV1Config copies cfg for core/v1 requests and returns the apiserver
// URL and API path the port-forward dialers build their URLs from.
func coreV1Config(cfg *rest.Config) (c *rest.Config, base *url.URL, apiPath string, err error) {
	if cfg == nil {
		return nil, nil, "", errors.New("rest config must not be nil")
	}
	c = rest.CopyConfig(cfg)
	c.APIPath = "/api"
	c.GroupVersion = &corev1.SchemeGroupVersion
	base, apiPath, err = rest.DefaultServerUrlFor(c)
	if err != nil {
		return nil, nil, "", fmt.Errorf("apiserver URL: %w", err)
	}
	return c, base, apiPath, nil
}

// portForwardURL is the pods/portforward subresource of a Pod.
func portForwardURL(base *url.URL, apiPath, namespace, pod string) url.URL {
	u := *base
	u.Path = path.Join(u.Path, apiPath, "namespaces", namespace, "pods", pod, "portforward")
	return u
}
