package app_test

import (
	"testing"

	"github.com/etcdfleet/etcdfleet/fleet/app"
)

// TestUserAgentNamesTheReplica: the audit proof of the sharding e2e reads
// the replica back from what the apiservers logged, so UserAgent and
// ParseUserAgent must agree, and a user agent without a replica (an older
// manager, another client) must not parse as one.
func TestUserAgentNamesTheReplica(t *testing.T) {
	ua := app.UserAgent("controllers", "etcdfleet-manager-7d9f-x2")
	if ua != "etcdfleet-manager/controllers (replica etcdfleet-manager-7d9f-x2)" {
		t.Fatalf("user agent %q", ua)
	}
	purpose, replica, ok := app.ParseUserAgent(ua)
	if !ok || purpose != "controllers" || replica != "etcdfleet-manager-7d9f-x2" {
		t.Fatalf("parsed %q as %q, %q, %t", ua, purpose, replica, ok)
	}
	for _, other := range []string{"etcdfleet-manager/probe", "kubeconfigsecret/probe (replica r1)",
		"etcdfleet-manager/probe (replica )", "kubectl/v1.31.0 (linux/amd64)", "etcdfleet-manager/ (replica r1)"} {
		if p, r, ok := app.ParseUserAgent(other); ok {
			t.Errorf("%q parsed as purpose %q, replica %q", other, p, r)
		}
	}
}
