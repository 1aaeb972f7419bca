package e2eutil

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the memberctl e2e suites (test/e2e/memberctl, test/e2e/faults) ask
// of an OperatedSandbox's clusters in their specs.

// Events returns the Events of type typ and reason recorded on object in
// namespace ns of cluster.
func (s *OperatedSandbox) Events(ctx context.Context, cluster, ns, object, typ, reason string) []corev1.Event {
	GinkgoHelper()
	list, err := s.Fleet.Cluster(cluster).Clientset.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Name == object && e.Reason == reason && e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// ExpectEvent waits until an Event of type typ and reason is recorded on
// object. A recorder sends its Events asynchronously, a moment after the
// status write a spec saw (CI once listed none right after the condition
// it was recorded with), so no spec should look only once.
func (s *OperatedSandbox) ExpectEvent(ctx context.Context, cluster, ns, object, typ, reason string) {
	GinkgoHelper()
	Eventually(func() []corev1.Event { return s.Events(ctx, cluster, ns, object, typ, reason) }).
		WithContext(ctx).WithTimeout(eventDelivery).WithPolling(250*time.Millisecond).
		ShouldNot(BeEmpty(), "a %s Event %s on %s/%s", typ, reason, ns, object)
}

// ExpectWarningEvent is ExpectEvent for a Warning.
func (s *OperatedSandbox) ExpectWarningEvent(ctx context.Context, cluster, ns, object, reason string) {
	GinkgoHelper()
	s.ExpectEvent(ctx, cluster, ns, object, corev1.EventTypeWarning, reason)
}

// eventDelivery bounds how long a recorded Event may take to reach the
// apiserver: client-go's broadcaster sends from a goroutine, and retries
// a failed write after a backoff of its own.
const eventDelivery = 30 * time.Second

// EventMessages are the messages of the Normal Events of reason on object.
func (s *OperatedSandbox) EventMessages(ctx context.Context, cluster, ns, object, reason string) []string {
	GinkgoHelper()
	var out []string
	for _, e := range s.Events(ctx, cluster, ns, object, corev1.EventTypeNormal, reason) {
		out = append(out, e.Message)
	}
	return out
}
