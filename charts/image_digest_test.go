package charts_test

import (
	"testing"
)

// Release images by digest (review finding L10): a tag can be moved to
// other content, a digest cannot.

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// TestImageDigest: image.digest pins the manager and the agent it runs in
// workload clusters, over any tag; an agentImage given is used as given.
func TestImageDigest(t *testing.T) {
	pinned := "ghcr.io/etcdfleet/etcdfleet-manager@" + digest
	for _, args := range [][]string{
		{"--set", "image.digest=" + digest},
		{"--set", "image.digest=" + digest, "--set", "image.tag=v9.9.9"}, // the digest wins
	} {
		objs := mustTemplate(t, mgmtChart, mgmtRelease, systemNS, args...)
		_, c := managerContainer(t, objs)
		if got := managerConfig(t, objs); c.Image != pinned || got.AgentImage != pinned {
			t.Errorf("%q: image %s, the manager loads agentImage %q, want both %s", args, c.Image, got.AgentImage, pinned)
		}
	}
	// Without a digest the agent follows the manager's tag, so the two
	// binaries match.
	got := managerConfig(t, mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "image.tag=v9.9.9"))
	if got.AgentImage != "ghcr.io/etcdfleet/etcdfleet-manager:v9.9.9" {
		t.Errorf("agentImage %q, want the agent at the manager's tag", got.AgentImage)
	}
	mirror := "registry.example.com/etcdfleet@" + digest
	got = managerConfig(t, mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "image.digest="+digest, "--set", "config.agentImage="+mirror))
	if got.AgentImage != mirror {
		t.Errorf("agentImage %q, want the agentImage given", got.AgentImage)
	}
}
