package dashboard

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// TestPublishClusterBackupAndCredentials: the gauges the chart's backup
// and credential alerts read follow the row, and an unknown token
// lifetime leaves no series (a 0 would read as expired at the epoch). A
// plain test: the Ginkgo suite of this package starts an apiserver.
func TestPublishClusterBackupAndCredentials(t *testing.T) {
	const c = "metrics-test"
	t.Cleanup(func() { forgetCluster(c) })
	exp := metav1.NewTime(time.Unix(1_900_000_000, 0))
	st := fleetv1.FleetClusterStatus{
		EtcdClustersBehindBackup: 2,
		TokenExpiresAt:           &exp,
		Conditions: []metav1.Condition{{Type: fleetv1.ConditionCredentialsExpiring, Status: metav1.ConditionTrue,
			Reason: fleetv1.ReasonTokenExpiring}},
	}
	publishCluster(c, &st)
	if got := testutil.ToFloat64(clusterBackupBehind.WithLabelValues(c)); got != 2 {
		t.Errorf("backup behind: got %v, want 2", got)
	}
	if got := testutil.ToFloat64(clusterCredentialsExpiring.WithLabelValues(c)); got != 1 {
		t.Errorf("credentials expiring: got %v, want 1", got)
	}
	if got := testutil.ToFloat64(clusterTokenExpiry.WithLabelValues(c)); got != 1_900_000_000 {
		t.Errorf("token expiry: got %v, want 1900000000", got)
	}

	st.Conditions[0].Status, st.Conditions[0].Reason = metav1.ConditionFalse, fleetv1.ReasonTokenValid
	st.EtcdClustersBehindBackup = 0
	publishCluster(c, &st)
	if got := testutil.ToFloat64(clusterCredentialsExpiring.WithLabelValues(c)); got != 0 {
		t.Errorf("credentials valid: got %v, want 0", got)
	}
	if got := testutil.ToFloat64(clusterBackupBehind.WithLabelValues(c)); got != 0 {
		t.Errorf("backup caught up: got %v, want 0", got)
	}

	st.Conditions, st.TokenExpiresAt = nil, nil
	publishCluster(c, &st)
	for name, n := range map[string]int{
		"credentials expiring": testutil.CollectAndCount(clusterCredentialsExpiring),
		"token expiry":         testutil.CollectAndCount(clusterTokenExpiry),
	} {
		if n != 0 {
			t.Errorf("%s: %d series for a token without a lifetime, want none", name, n)
		}
	}

	forgetCluster(c)
	if n := testutil.CollectAndCount(clusterBackupBehind); n != 0 {
		t.Errorf("backup behind: %d series after the cluster was forgotten", n)
	}
}
