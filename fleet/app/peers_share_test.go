package app

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/etcdfleet/etcdfleet/fleet/limiter"
)

// peerLeasesCarryTheLimiterPart runs two peer registries against a
// real apiserver: the replica with quorum-lost requests waiting gets all
// but the idle one's token and floor, both Leases carry demand and claim,
// and when the idle replica stops (deleting its Lease) its claim still
// counts until the FleetShare ignores it, then the busy one gets all.
//
// TestPeerLeases also runs "writes in one round trip" on the same
// apiserver.
func TestPeerLeases(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("needs KUBEBUILDER_ASSETS (source /tmp/env.sh)")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cli, err := client.NewWithWatch(cfg, client.Options{Scheme: Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("carry the limiter part", func(t *testing.T) { peerLeasesCarryTheLimiterPart(t, cli) })
	t.Run("writes in one round trip", func(t *testing.T) { peerLeaseWritesInOneRoundTrip(t, cli) })
}

func peerLeasesCarryTheLimiterPart(t *testing.T, cli client.Client) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ns = "peers"
	if err := cli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	const ttl = 6 * time.Second
	opts := limiter.ShareOptions{Rate: 2, Burst: 10, LeaseDuration: ttl, ListInterval: time.Second}
	var mu sync.Mutex
	parts := map[string]limiter.Part{}
	start := func(id string, d limiter.Demand) context.CancelFunc {
		rctx, stop := context.WithCancel(ctx)
		reg := newPeerRegistry(cli, ns, id, ttl, time.Second, logr.Discard())
		reg.share = newShareLink(reg.Self().ID, opts)
		go func() { _ = reg.Run(rctx) }()
		go func() { // the share keeper's loop
			for rctx.Err() == nil {
				p := reg.share.next(time.Now(), d)
				mu.Lock()
				parts[id] = p
				mu.Unlock()
				time.Sleep(partTick)
			}
		}()
		return stop
	}
	part := func(id string) limiter.Part {
		mu.Lock()
		defer mu.Unlock()
		return parts[id]
	}
	waitFor := func(what string, within time.Duration, ok func() bool) {
		t.Helper()
		for end := time.Now().Add(within); !ok(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(end) {
				t.Fatalf("not within %v: %s (busy %+v, idle %+v)", within, what, part("busy"), part("idle"))
			}
		}
	}

	start("busy", limiter.Demand{Lost: 5, Owned: 1})
	stopIdle := start("idle", limiter.Demand{Owned: 1})
	waitFor("the busy replica holds all but the idle one's token", 15*time.Second, func() bool {
		b, i := part("busy"), part("idle")
		return b.Burst == 9 && b.Rate > 1.9 && i.Burst == 1 && i.Rate > 0 && i.Rate < 0.05
	})
	var l coordv1.Lease
	if err := cli.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mcr-peer-idle"}, &l); err != nil {
		t.Fatal(err)
	}
	if got := limiter.ParsePublished(l.Annotations, limiter.Part{}); got.Demand != (limiter.Demand{Owned: 1}) || got.Claim.Burst != 1 {
		t.Fatalf("idle replica's Lease publishes %+v (annotations %v)", got, l.Annotations)
	}

	stopIdle()
	stopped := time.Now()
	time.Sleep(3 * time.Second)
	if b := part("busy"); b.Burst > 9 {
		t.Fatalf("busy replica took the stopped one's token %v after it stopped: %+v; its claim counts until ignored", time.Since(stopped), b)
	}
	waitFor("the busy replica gets the whole bucket once the stopped one's claim is ignored", 3*ttl, func() bool {
		return part("busy").Burst == 10
	})
	t.Logf("whole bucket %v after the idle replica stopped", time.Since(stopped).Round(100*time.Millisecond))
}

// peerLeaseWritesInOneRoundTrip: a renewal updates the Lease the registry
// last wrote without reading it first; after another writer changed it
// (a conflict) or deleted it, the next renewal reads or recreates it.
func peerLeaseWritesInOneRoundTrip(t *testing.T, cli client.WithWatch) {
	ctx := context.Background()
	const ns = "peers-write"
	if err := cli.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	var gets int
	counting := interceptor.NewClient(cli, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets++
			return c.Get(ctx, key, obj, opts...)
		}})
	reg := newPeerRegistry(counting, ns, "r", 6*time.Second, time.Second, logr.Discard())
	renew := func(what string, wantGets int) {
		t.Helper()
		gets = 0
		if err := reg.renew(ctx); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if gets != wantGets {
			t.Fatalf("%s: %d reads, want %d", what, gets, wantGets)
		}
	}
	renew("first write", 1)
	renew("renewal", 0)
	var l coordv1.Lease
	key := client.ObjectKey{Namespace: ns, Name: "mcr-peer-r"}
	if err := cli.Get(ctx, key, &l); err != nil {
		t.Fatal(err)
	}
	metav1.SetMetaDataAnnotation(&l.ObjectMeta, "someone", "else")
	if err := cli.Update(ctx, &l); err != nil {
		t.Fatal(err)
	}
	renew("renewal after another writer", 1)
	if err := cli.Get(ctx, key, &l); err != nil || l.Annotations["someone"] != "else" {
		t.Fatalf("the other writer's annotation is lost (%v): %v", err, l.Annotations)
	}
	if err := cli.Delete(ctx, &l); err != nil {
		t.Fatal(err)
	}
	renew("renewal after a delete", 1)
	if err := cli.Get(ctx, key, &l); err != nil || *l.Spec.HolderIdentity != "r" {
		t.Fatalf("Lease not recreated: %v", err)
	}
}
