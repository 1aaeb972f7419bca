package kubelet

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
)

// refreshServices maps every Service name to the IPs of the running Pods it
// selects, in the hosts file: <svc>.<ns>.svc[.<domain>]. Called when a Pod
// gets or loses its IP and when Services change. A Pod appears under a
// Service whether Ready or not, like a headless Service with
// publishNotReadyAddresses (which is what etcd peers rely on).
func (k *Kubelet) refreshServices() {
	if k.opts.Hosts == nil || k.services == nil {
		return
	}
	svcs, err := k.services.List(labels.Everything())
	if err != nil {
		return
	}
	k.mu.Lock()
	type target struct {
		ns, ip string
		labels labels.Set
		name   string
	}
	var pods []target
	for _, w := range k.workers {
		if ip := w.liveIP(); ip != "" {
			pods = append(pods, target{w.pod.Namespace, ip, w.pod.Labels, w.pod.Name})
		}
	}
	k.mu.Unlock()
	want := map[string][]string{}
	for _, s := range svcs {
		if len(s.Spec.Selector) == 0 {
			continue
		}
		sel := labels.SelectorFromSet(s.Spec.Selector)
		base := fmt.Sprintf("%s.%s.svc", s.Name, s.Namespace)
		for _, p := range pods {
			if p.ns == s.Namespace && sel.Matches(p.labels) {
				want[fmt.Sprintf("svc:%s/%s/%s", s.Namespace, s.Name, p.name)] = []string{p.ip, base, base + "." + k.opts.ClusterDomain}
			}
		}
	}
	k.svcMu.Lock()
	defer k.svcMu.Unlock()
	for key := range k.svcKeys {
		if _, ok := want[key]; !ok {
			_ = k.opts.Hosts.Delete(key)
			delete(k.svcKeys, key)
		}
	}
	for key, v := range want {
		if strings.Join(k.svcKeys[key], " ") == strings.Join(v, " ") {
			continue
		}
		_ = k.opts.Hosts.Set(key, v[0], v[1:]...)
		k.svcKeys[key] = v
	}
}
