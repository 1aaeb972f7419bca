package fleet_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1 "github.com/etcdfleet/etcdfleet/memberctl/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/test/e2e/e2eutil"
	"github.com/etcdfleet/etcdfleet/test/sandbox"
)

// --- provider states, recorded --------------------------------------------

type stateEvent struct {
	At        time.Time
	Present   bool
	Connected bool
	Reason    string
}

// stateLog polls the provider's ClusterStates and keeps every change, so
// specs can ask when a cluster (re-)engaged or whether it ever dropped.
type stateLog struct {
	mu     sync.Mutex
	events map[string][]stateEvent
}

func recordStates(ctx context.Context, every time.Duration) *stateLog {
	l := &stateLog{events: map[string][]stateEvent{}}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			now := time.Now()
			seen := map[string]bool{}
			for _, s := range fm.Provider.States() {
				seen[s.Name] = true
				l.add(s.Name, stateEvent{At: now, Present: true, Connected: s.Connected, Reason: s.Reason})
			}
			l.mu.Lock()
			names := make([]string, 0, len(l.events))
			for n := range l.events {
				names = append(names, n)
			}
			l.mu.Unlock()
			for _, n := range names {
				if !seen[n] {
					l.add(n, stateEvent{At: now})
				}
			}
		}
	}()
	return l
}

func (l *stateLog) add(name string, e stateEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ev := l.events[name]
	if n := len(ev); n > 0 && ev[n-1].Present == e.Present && ev[n-1].Connected == e.Connected && ev[n-1].Reason == e.Reason {
		return
	}
	l.events[name] = append(ev, e)
}

// since returns name's changes after t.
func (l *stateLog) since(name string, t time.Time) []stateEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []stateEvent
	for _, e := range l.events[name] {
		if !e.At.Before(t) {
			out = append(out, e)
		}
	}
	return out
}

// connectedAt is when name was first Connected after t (zero if never).
func (l *stateLog) connectedAt(name string, t time.Time) time.Time {
	for _, e := range l.since(name, t) {
		if e.Connected {
			return e.At
		}
	}
	return time.Time{}
}

// waitConnected waits until the provider has every named cluster engaged.
// Once the in-process manager is stopped (the handover specs), the manager
// processes are waited for by their own logs instead.
func waitConnected(ctx context.Context, timeout time.Duration, names ...string) {
	GinkgoHelper()
	if suiteManagerStopped {
		return
	}
	Eventually(func(g Gomega) {
		for _, n := range names {
			st, ok := fm.Provider.State(n)
			g.Expect(ok).To(BeTrue(), "cluster %s is not registered", n)
			g.Expect(st.Connected).To(BeTrue(), "cluster %s: %s: %s", n, st.Reason, st.Message)
		}
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(50 * time.Millisecond).Should(Succeed())
}

func watchPods(ctx context.Context, names ...string) map[string]*e2eutil.PodLog {
	GinkgoHelper()
	return watchPodsIn(ctx, etcdNS, names...)
}

// watchPodsIn is watchPods for the Pods of namespace ns.
func watchPodsIn(ctx context.Context, ns string, names ...string) map[string]*e2eutil.PodLog {
	GinkgoHelper()
	out := map[string]*e2eutil.PodLog{}
	for _, w := range names {
		l, err := e2eutil.WatchPods(context.WithoutCancel(ctx), sb.Cluster(w).Clientset, ns)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(l.Stop)
		out[w] = l
	}
	return out
}

type podDelete struct {
	Cluster string
	e2eutil.PodEvent
}

// deletes lists every Pod deletion the apiservers reported, oldest first.
func deletes(logs map[string]*e2eutil.PodLog) []podDelete {
	var out []podDelete
	for w, l := range logs {
		for _, e := range l.Events() {
			if e.Type == watch.Deleted {
				out = append(out, podDelete{Cluster: w, PodEvent: e})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// auditedDeletes lists the deletes of before's Pods that the workload
// apiservers received since from, from any etcdfleet-manager process (by
// its user agent: the sandbox kubelet's own final delete of each Pod is
// not one), one per Pod, oldest first. A 4xx answer acted on nothing (a
// repeated delete from a stale cache gets 404); a 5xx may have: a manager
// killed mid-request leaves the apiserver's etcd write done and its
// answer undelivered. So each Pod's delete is its 2xx one, else its first
// 5xx. They are timed by the audit logs the suite's sandbox keeps: the
// apiservers' clock, free of the watch's delivery lag and of this
// process's own load.
func auditedDeletes(before map[string]map[string]types.UID, from time.Time) []podDelete {
	GinkgoHelper()
	prefix := "/api/v1/namespaces/" + etcdNS + "/pods/"
	var out []podDelete
	for w, pods := range before {
		evs, err := sb.Cluster(w).Audit(from, time.Now().Add(time.Minute))
		Expect(err).NotTo(HaveOccurred())
		chosen := map[string]sandbox.AuditEvent{}
		for _, e := range evs {
			name, _, _ := strings.Cut(strings.TrimPrefix(e.RequestURI, prefix), "?")
			code := e.ResponseStatus.Code
			if e.Verb != "delete" || !strings.HasPrefix(e.UserAgent, "etcdfleet-manager/") || !strings.HasPrefix(e.RequestURI, prefix) || pods[name] == "" ||
				(code >= 300 && code < 500) {
				continue
			}
			if prev, ok := chosen[name]; !ok || (prev.ResponseStatus.Code >= 300 && code < 300) {
				chosen[name] = e
			}
		}
		for name, e := range chosen {
			out = append(out, podDelete{Cluster: w, PodEvent: e2eutil.PodEvent{Type: watch.Deleted, Name: name, At: e.Received}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].At.Before(out[j].At) })
	return out
}

// podAuditTrail lists every request the apiservers logged for the named
// Pods (cluster/name) since from: who sent it, what, and the answer.
func podAuditTrail(from time.Time, keys []string) string {
	var b strings.Builder
	for _, k := range keys {
		w, name, _ := strings.Cut(k, "/")
		evs, err := sb.Cluster(w).Audit(from, time.Now().Add(time.Minute))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", k, err)
			continue
		}
		for _, e := range evs {
			if strings.Contains(e.RequestURI, "/pods/"+name) && e.Verb != "get" && e.Verb != "watch" {
				fmt.Fprintf(&b, "%s: %s %s %s by %s (%s) -> %d\n", k, e.Received.Format("15:04:05.000"), e.Verb, e.RequestURI, e.User.Username, e.UserAgent, e.ResponseStatus.Code)
			}
		}
	}
	return b.String()
}

// terminalPodsStay checks that every Pod of before in w is still there,
// the same Pod, in a terminal phase.
func terminalPodsStay(ctx context.Context, g Gomega, w string, before map[string]types.UID) {
	pods, err := sb.Cluster(w).Clientset.CoreV1().Pods(etcdNS).List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pods.Items).To(HaveLen(len(before)), "cluster %s", w)
	for _, p := range pods.Items {
		g.Expect(p.UID).To(Equal(before[p.Name]), "cluster %s: Pod %s was replaced", w, p.Name)
		g.Expect(p.Status.Phase).To(BeElementOf(corev1.PodSucceeded, corev1.PodFailed), "cluster %s: Pod %s", w, p.Name)
	}
}

func durations(m map[string]time.Duration) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%s", k, m[k].Round(100*time.Millisecond)))
	}
	return strings.Join(parts, " ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// --- EtcdMember statuses, recorded -------------------------------------------

// memberEvent is one EtcdMember status the apiserver reported: its Ready
// condition at that moment.
type memberEvent struct {
	At      time.Time
	Name    string
	Reason  string
	Message string
}

// memberLog records the EtcdMembers' Ready conditions in etcdNS of one
// cluster, from the apiserver's side.
type memberLog struct {
	mu     sync.Mutex
	events []memberEvent
}

// watchMembers records every named cluster's EtcdMember statuses until the
// spec ends.
func watchMembers(ctx context.Context, names ...string) map[string]*memberLog {
	GinkgoHelper()
	out := map[string]*memberLog{}
	for _, w := range names {
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		wi, err := wc[w].Watch(wctx, &etcdv1.EtcdMemberList{}, client.InNamespace(etcdNS))
		Expect(err).NotTo(HaveOccurred())
		l := &memberLog{}
		done := make(chan struct{})
		go func() {
			defer close(done)
			for ev := range wi.ResultChan() {
				m, ok := ev.Object.(*etcdv1.EtcdMember)
				if !ok {
					continue
				}
				e := memberEvent{At: time.Now(), Name: m.Name}
				if c := apimeta.FindStatusCondition(m.Status.Conditions, etcdv1.ConditionReady); c != nil {
					e.Reason, e.Message = c.Reason, c.Message
				}
				l.mu.Lock()
				l.events = append(l.events, e)
				l.mu.Unlock()
			}
		}()
		DeferCleanup(func() { wi.Stop(); cancel(); <-done })
		out[w] = l
	}
	return out
}

// firstAsk is when the apiserver first saw one of the cluster's members
// ask the shared limiter: waiting for it, or granted and being replaced.
func (l *memberLog) firstAsk() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range l.events {
		if e.Reason == etcdv1.ReasonPodReplacing || strings.Contains(e.Message, "waiting for the shared replacement rate limiter") {
			return e.At, true
		}
	}
	return time.Time{}, false
}

// asks returns, per member, when the apiserver first saw it ask the limiter.
func (l *memberLog) asks() map[string]time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]time.Time{}
	for _, e := range l.events {
		if _, seen := out[e.Name]; !seen && (e.Reason == etcdv1.ReasonPodReplacing || strings.Contains(e.Message, "waiting for the shared replacement rate limiter")) {
			out[e.Name] = e.At
		}
	}
	return out
}
