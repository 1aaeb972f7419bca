package sandboxdns

import (
	"context"
	"net"
	"path/filepath"
	"testing"
)

// The resolver is a pure function of the hosts file, so it is tested without
// a sandbox: names listed resolve, others get NXDOMAIN, lookups see updates.
func TestResolverAnswersFromHostsFile(t *testing.T) {
	h, err := NewHosts(filepath.Join(t.TempDir(), "hosts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Set("ns1/m1", "127.10.0.1", "m1.c1.ns1.svc", "m1.c1.ns1.svc.cluster.local"); err != nil {
		t.Fatal(err)
	}
	r := &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		c, s := net.Pipe()
		go serve(s, h.Path())
		return c, nil
	}}
	ctx := context.Background()
	for _, name := range []string{"m1.c1.ns1.svc", "M1.C1.NS1.SVC.cluster.local."} {
		addrs, err := r.LookupHost(ctx, name)
		if err != nil || len(addrs) != 1 || addrs[0] != "127.10.0.1" {
			t.Fatalf("LookupHost(%q) = %v, %v; want 127.10.0.1", name, addrs, err)
		}
	}
	if _, err := r.LookupHost(ctx, "m2.c1.ns1.svc"); err == nil {
		t.Fatal("unknown name resolved; want NXDOMAIN")
	}
	if err := h.Set("ns1/m2", "127.10.0.2", "m2.c1.ns1.svc"); err != nil {
		t.Fatal(err)
	}
	if addrs, err := r.LookupHost(ctx, "m2.c1.ns1.svc"); err != nil || addrs[0] != "127.10.0.2" {
		t.Fatalf("new entry not visible: %v %v", addrs, err)
	}
	if err := h.Delete("ns1/m1"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.LookupHost(ctx, "m1.c1.ns1.svc"); err == nil {
		t.Fatal("deleted name still resolves")
	}
}
