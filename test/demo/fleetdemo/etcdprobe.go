package fleetdemo

import (
	"context"
	"time"

	"go.uber.org/zap"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
)

// etcdProbe asks etcd itself whether an etcd cluster is whole: the live
// view's last word on "healthy", instead of the EtcdCluster's Available
// condition, which lags etcd by a reconcile and a status write (issue 27).
// It keeps one client per etcd cluster (dialled through port-forward, as a
// user's would be) and drops it after a failed probe, so that the next
// probe dials the members as they are then (a memory member comes back
// under a new ID).
type etcdProbe struct {
	cfg     *rest.Config
	c       client.Client
	ns      string
	clients map[string]*e2eutil.Etcd // by EtcdCluster name
}

func newEtcdProbe(cfg *rest.Config, c client.Client, ns string) *etcdProbe {
	return &etcdProbe{cfg: cfg, c: c, ns: ns, clients: map[string]*e2eutil.Etcd{}}
}

// probeTimeout bounds each member's Status call: a live member on
// loopback answers in milliseconds, and the view redraws every 250 ms, so
// a member that takes longer is not one to call healthy yet.
const probeTimeout = 500 * time.Millisecond

// whole reports whether every one of want members answers Status, with no
// alarm raised and all of them following the same leader. Its cost is one
// Status call per member, and only for a cluster whose Pods are all Ready.
func (p *etcdProbe) whole(ctx context.Context, cluster string, want int32) bool {
	e := p.clients[cluster]
	if e == nil {
		var err error
		if e, err = e2eutil.DialEtcdLogging(ctx, p.cfg, p.c, p.ns, cluster, zap.NewNop()); err != nil {
			return false
		}
		p.clients[cluster] = e
	}
	eps := e.Endpoints()
	ok := int32(len(eps)) >= want
	var leader uint64
	for _, ep := range eps {
		if !ok {
			break
		}
		cctx, cancel := context.WithTimeout(ctx, probeTimeout)
		st, err := e.Status(cctx, ep)
		cancel()
		ok = err == nil && len(st.Errors) == 0 && st.Leader != 0 && (leader == 0 || st.Leader == leader)
		if ok {
			leader = st.Leader
		}
	}
	if !ok {
		e.Close()
		delete(p.clients, cluster)
	}
	return ok
}

// close closes every client.
func (p *etcdProbe) close() {
	for name, e := range p.clients {
		e.Close()
		delete(p.clients, name)
	}
}
