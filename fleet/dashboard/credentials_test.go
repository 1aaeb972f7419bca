package dashboard

import (
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
)

// TestCredentialsStatus: a pure function, so a plain test (the Ginkgo
// suite of this package starts an apiserver).
func TestCredentialsStatus(t *testing.T) {
	issued := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	expires := issued.Add(100 * time.Hour) // a fifth is 20h
	for _, c := range []struct {
		name            string
		issued, expires time.Time
		now             time.Time
		want            string // Status/Reason, "" for no condition
		field           bool
	}{
		{"fresh token", issued, expires, issued.Add(time.Hour), "False/" + fleetv1.ReasonTokenValid, true},
		{"just over a fifth left", issued, expires, expires.Add(-20*time.Hour - time.Second), "False/" + fleetv1.ReasonTokenValid, true},
		{"just under a fifth left", issued, expires, expires.Add(-20*time.Hour + time.Second), "True/" + fleetv1.ReasonTokenExpiring, true},
		{"expired", issued, expires, expires, "True/" + fleetv1.ReasonTokenExpired, true},
		{"exp alone, valid", time.Time{}, expires, issued, "", true},
		{"exp alone, expired", time.Time{}, expires, expires.Add(time.Second), "True/" + fleetv1.ReasonTokenExpired, true},
		{"no lifetime (not a JWT, or a certificate)", time.Time{}, time.Time{}, issued, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			info := ClusterInfo{Name: "w1", Namespace: "regs", Connected: true, TokenIssuedAt: c.issued, TokenExpiresAt: c.expires}
			st := buildClusterStatus(nil, clusterInput{info: info}, 1, c.now)
			if got := cond(st.Conditions, fleetv1.ConditionCredentialsExpiring); got != c.want {
				t.Errorf("CredentialsExpiring %q, want %q", got, c.want)
			}
			if (st.TokenExpiresAt != nil) != c.field || (c.field && !st.TokenExpiresAt.Time.Equal(c.expires)) {
				t.Errorf("tokenExpiresAt %v, want %v (shown: %t)", st.TokenExpiresAt, c.expires, c.field)
			}
			if cd := apimeta.FindStatusCondition(st.Conditions, fleetv1.ConditionCredentialsExpiring); cd != nil && cd.Status == "True" &&
				!strings.Contains(cd.Message, "etcdfleetctl register w1 --namespace regs") {
				t.Errorf("message %q does not say how to rotate", cd.Message)
			}
		})
	}

	// A rotated Secret without a lifetime drops both the field and the
	// condition, and the message of a steady token does not change with
	// time (no status rewrite per resync).
	info := ClusterInfo{Name: "w1", Namespace: "regs", TokenIssuedAt: issued, TokenExpiresAt: expires}
	a := buildClusterStatus(nil, clusterInput{info: info}, 1, issued.Add(time.Hour))
	b := buildClusterStatus(&a, clusterInput{info: info}, 1, issued.Add(2*time.Hour))
	if clusterStatusChanged(&a, &b, time.Minute) {
		t.Errorf("status changed with time alone:\n%+v\n%+v", a, b)
	}
	info.TokenIssuedAt, info.TokenExpiresAt = time.Time{}, time.Time{}
	c := buildClusterStatus(&b, clusterInput{info: info}, 1, issued.Add(3*time.Hour))
	if c.TokenExpiresAt != nil || cond(c.Conditions, fleetv1.ConditionCredentialsExpiring) != "" {
		t.Errorf("a token without lifetime keeps %v / %q", c.TokenExpiresAt, cond(c.Conditions, fleetv1.ConditionCredentialsExpiring))
	}
}
