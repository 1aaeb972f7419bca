package fleet_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/e2e/lincheck"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// --- Pods, healing, keys -----------------------------------------------------

// podUIDs maps cluster -> Pod name -> UID of the etcd Pods now.
func podUIDs(ctx context.Context, names ...string) map[string]map[string]types.UID {
	GinkgoHelper()
	out := map[string]map[string]types.UID{}
	for _, w := range names {
		pods, err := sb.Cluster(w).Clientset.CoreV1().Pods(etcdNS).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		out[w] = map[string]types.UID{}
		for _, p := range pods.Items {
			out[w][p.Name] = p.UID
		}
		Expect(out[w]).To(HaveLen(3*len(etcdNames)), "cluster %s", w)
	}
	return out
}

// unhealed says why cluster w is not healed, or "" when every EtcdCluster is
// Available, all its Pods are Ready and none is one in before.
func unhealed(ctx context.Context, w string, before map[string]types.UID) string {
	for _, n := range etcdNames {
		ec := &etcdv1.EtcdCluster{}
		if err := wc[w].Get(ctx, types.NamespacedName{Namespace: etcdNS, Name: n}, ec); err != nil {
			return err.Error()
		}
		if !e2eutil.Available(ec) {
			return fmt.Sprintf("EtcdCluster %s is not Available (%d ready)", n, ec.Status.ReadyMembers)
		}
	}
	pods := &corev1.PodList{}
	if err := wc[w].List(ctx, pods, client.InNamespace(etcdNS)); err != nil {
		return err.Error()
	}
	if len(pods.Items) != 3*len(etcdNames) {
		return fmt.Sprintf("%d Pods", len(pods.Items))
	}
	for _, p := range pods.Items {
		if uid, ok := before[p.Name]; ok && uid == p.UID {
			return fmt.Sprintf("Pod %s is still the one from before (%s)", p.Name, p.Status.Phase)
		}
		if !e2eutil.PodReady(&p) {
			return fmt.Sprintf("Pod %s is not Ready (%s)", p.Name, p.Status.Phase)
		}
	}
	return ""
}

// waitHealed waits until every named cluster is healed (see unhealed) and
// returns, per cluster, when it was first seen healed, measured from since.
func waitHealed(ctx context.Context, since time.Time, before map[string]map[string]types.UID, timeout time.Duration, names ...string) map[string]time.Duration {
	GinkgoHelper()
	healed := map[string]time.Duration{}
	Eventually(func(g Gomega) {
		for _, w := range names {
			if _, ok := healed[w]; ok {
				continue
			}
			if why := unhealed(ctx, w, before[w]); why == "" {
				healed[w] = time.Since(since)
			}
		}
		var waiting []string
		for _, w := range names {
			if _, ok := healed[w]; !ok {
				waiting = append(waiting, w+": "+unhealed(ctx, w, before[w]))
			}
		}
		g.Expect(waiting).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(200 * time.Millisecond).Should(Succeed())
	return healed
}

func minOf(m map[string]time.Duration) time.Duration {
	d := time.Duration(1 << 62)
	for _, v := range m {
		d = min(d, v)
	}
	return d
}

func maxOf(m map[string]time.Duration) time.Duration {
	var d time.Duration
	for _, v := range m {
		d = max(d, v)
	}
	return d
}

// memberIDs maps cluster/etcd cluster -> member -> etcd member ID.
func memberIDs(ctx context.Context, names ...string) map[string]map[string]string {
	GinkgoHelper()
	out := map[string]map[string]string{}
	for _, w := range names {
		for _, n := range etcdNames {
			ids := e2eutil.MemberIDs(ctx, wc[w], etcdNS, n)
			Expect(ids).To(HaveLen(3))
			for m, id := range ids {
				Expect(id).NotTo(BeEmpty(), "%s/%s member %s", w, n, m)
			}
			out[w+"/"+n] = ids
		}
	}
	return out
}

// expectSameMembers fails unless every etcd cluster in want still has
// the same members with the same IDs. The message names what changed,
// with the etcd cluster's Warning Events: a reconciler that replaced a
// member said why there.
func expectSameMembers(ctx context.Context, want map[string]map[string]string) {
	GinkgoHelper()
	var changed []string
	for _, key := range sortedKeys(want) {
		w, n, _ := strings.Cut(key, "/")
		now := e2eutil.MemberIDs(ctx, wc[w], etcdNS, n)
		if !maps.Equal(now, want[key]) {
			changed = append(changed, fmt.Sprintf("%s: members were %v, are %v; its Warning Events:%s",
				key, want[key], now, e2eutil.WarningEvents(ctx, wc[w], etcdNS, n)))
		}
	}
	if len(changed) > 0 {
		Fail("a member was replaced by a new one with a new ID, not on its own PVC:\n" + strings.Join(changed, "\n"))
	}
}

// expectKeys reads every key back from every EtcdCluster of the clusters.
func expectKeys(ctx context.Context, names ...string) {
	GinkgoHelper()
	for _, w := range names {
		for _, n := range etcdNames {
			e := e2eutil.ConnectEtcd(ctx, wcfg[w], wc[w], etcdNS, n)
			e.ExpectKeys(ctx, "k", keys)
			e.Close()
		}
	}
}

// startWorkloads starts clients on the first EtcdCluster of each named
// cluster, reached directly (not through a hung front door), whose
// histories StopAndCheck checks for linearizability after the heal. One
// EtcdCluster per cluster and a low rate keep the added load small beside
// the heal times the specs measure.
func startWorkloads(ctx context.Context, names ...string) lincheck.Runnings {
	GinkgoHelper()
	var targets []lincheck.Target
	for _, w := range names {
		targets = append(targets, lincheck.Target{Config: wcfg[w], Client: wc[w], Namespace: etcdNS, Cluster: etcdNames[0],
			Name: w + "/" + etcdNS + "/" + etcdNames[0], Options: lincheck.Options{Rate: 10}})
	}
	return lincheck.StartAll(ctx, targets...)
}

// reboot reboots every Node of the named clusters at once with a mix of
// Succeeded and Failed Pods, and returns when it started.
func reboot(ctx context.Context, names ...string) time.Time {
	GinkgoHelper()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, w := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = sb.Cluster(w).Reboot(ctx, kubelet.RebootOptions{Phase: kubelet.Alternate, Outage: time.Second})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
	return start
}

// watchPods records the etcd Pods' events in each named cluster from the
// apiserver's side, until the spec ends.
