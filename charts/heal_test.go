package charts_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/app"
	"github.com/etcdfleet/etcdfleet/fleet/settings"
	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
	"github.com/etcdfleet/etcdfleet/test/sandbox/kubelet"
)

// managerHealsReboot runs the fleet manager in process as the management
// chart's ServiceAccount, with w1 registered by a kubeconfig of the
// config/rbac/workload ServiceAccount, and checks that it bootstraps an
// EtcdCluster, heals a reboot of every node, and never meets a Forbidden.
func managerHealsReboot(ctx context.Context, t *testing.T, f *sandbox.Fleet, mc, wc client.Client) {
	mgmt, w1 := f.Cluster("mgmt"), f.Cluster("w1")
	kc, err := w1.ServiceAccountKubeconfig(ctx, systemNS, saName, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	mustCreate(ctx, t, mc, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: regNS, Name: "w1", Labels: map[string]string{fleetv1.RegistrationLabel: "true"}},
		Data:       map[string][]byte{fleetv1.KubeconfigKey: kc},
	})

	logs := &syncBuffer{}
	logger := zap.New(zap.WriteTo(logs), zap.UseDevMode(true))
	ctrl.SetLogger(logger)
	klog.SetLogger(logger) // client-go's reflectors report Forbidden lists and watches through klog
	defer klog.ClearLogger()
	defer func() {
		// Whatever else happened, a Forbidden means missing RBAC.
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, "forbidden") {
				t.Errorf("the manager met a Forbidden: %s", l)
				break
			}
		}
		if t.Failed() {
			out := logs.String()
			if len(out) > 20000 {
				out = "...\n" + out[len(out)-20000:]
			}
			t.Logf("manager log:\n%s", out)
		}
	}()
	c := settings.Default()
	c.Namespace = regNS
	c.MetricsBindAddress, c.HealthProbeBindAddress = "0", "0"
	c.LeaderElection = true // the chart's default: the Lease is part of what is checked
	cfg := saConfig(ctx, t, mgmt, systemNS, saName)
	cfg.QPS, cfg.Burst = 0, 0 // the manager's own defaults, as in the Deployment
	fm, err := app.New(cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- fm.Start(mctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()

	const ns, name = "etcd", "e"
	if err := wc.Create(ctx, e2eutil.NewEtcdCluster(ns, name, 3, false)); err != nil {
		t.Fatal(err)
	}
	available := func() error {
		ec := &etcdv1.EtcdCluster{}
		if err := wc.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, ec); err != nil {
			return err
		}
		if !e2eutil.Available(ec) {
			return fmt.Errorf("not Available: ready %d, conditions %+v", ec.Status.ReadyMembers, ec.Status.Conditions)
		}
		return nil
	}
	start := time.Now()
	eventually(ctx, t, 2*time.Minute, "bootstrap", available)
	t.Logf("EtcdCluster Available in %s", time.Since(start).Round(time.Millisecond))
	eventually(ctx, t, 30*time.Second, "FleetCluster w1 Connected", func() error {
		fc := &fleetv1.FleetCluster{}
		if err := mc.Get(ctx, types.NamespacedName{Namespace: regNS, Name: "w1"}, fc); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(fc.Status.Conditions, fleetv1.ConditionConnected) {
			return fmt.Errorf("conditions %+v", fc.Status.Conditions)
		}
		if refs := fc.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Secret" || refs[0].Name != "w1" {
			return fmt.Errorf("owner references %+v, want the Secret", refs)
		}
		return mc.Get(ctx, types.NamespacedName{Name: fleetv1.FleetName}, &fleetv1.Fleet{})
	})

	before := podUIDs(ctx, t, wc, ns)
	if len(before) != 3 {
		t.Fatalf("want 3 member Pods, got %v", before)
	}
	start = time.Now()
	if err := w1.Reboot(ctx, kubelet.RebootOptions{Phase: kubelet.Alternate, Outage: time.Second}); err != nil {
		t.Fatal(err)
	}
	eventually(ctx, t, 2*time.Minute, "heal", func() error {
		now := podUIDs(ctx, t, wc, ns)
		for n, uid := range before {
			if got, ok := now[n]; !ok || got == uid {
				return fmt.Errorf("Pod %s not replaced and Ready yet", n)
			}
		}
		return available()
	})
	t.Logf("healed the reboot in %s", time.Since(start).Round(time.Millisecond))

	lease := &coordinationv1.Lease{}
	if err := mc.Get(ctx, types.NamespacedName{Namespace: regNS, Name: c.LeaderElectionID}, lease); err != nil {
		t.Errorf("leader-election Lease: %v", err)
	} else if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Errorf("the Lease has no holder: %+v", lease.Spec)
	}
}

// podUIDs maps the Ready Pods of ns to their UIDs.
func podUIDs(ctx context.Context, t *testing.T, c client.Client, ns string) map[string]types.UID {
	t.Helper()
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				out[p.Name] = p.UID
			}
		}
	}
	return out
}
