package charts_test

import (
	"slices"
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
		_, c := managerContainer(t, mustTemplate(t, mgmtChart, mgmtRelease, systemNS, args...))
		if c.Image != pinned || !slices.Contains(c.Args, "--agent-image="+pinned) {
			t.Errorf("%q: image %s args %q, want both %s", args, c.Image, c.Args, pinned)
		}
		if got := loadArgs(t, c.Args); got.AgentImage != pinned {
			t.Errorf("%q: the manager loads agentImage %q", args, got.AgentImage)
		}
	}
	// Without a digest the agent follows the manager's tag, so the two
	// binaries match.
	_, c := managerContainer(t, mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "image.tag=v9.9.9"))
	if !slices.Contains(c.Args, "--agent-image=ghcr.io/etcdfleet/etcdfleet-manager:v9.9.9") {
		t.Errorf("args %q, want the agent at the manager's tag", c.Args)
	}
	mirror := "registry.example.com/etcdfleet@" + digest
	_, c = managerContainer(t, mustTemplate(t, mgmtChart, mgmtRelease, systemNS, "--set", "image.digest="+digest, "--set", "manager.agentImage="+mirror))
	if !slices.Contains(c.Args, "--agent-image="+mirror) {
		t.Errorf("args %q, want the agentImage given", c.Args)
	}
}
