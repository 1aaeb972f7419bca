package app

import (
	"fmt"
	"os"
	"strings"

	"github.com/etcdfleet/etcdfleet/fleet/settings"
)

// replicaID is this replica's name: sharding.replicaID, else the host
// name, which is the Pod's name. Sharded mode needs one (it names the
// replica's peer and fence Leases); without sharding it only names the
// replica's requests to workload clusters, and "unknown" will do.
func replicaID(c settings.Config) (string, error) {
	if id := c.Sharding.ReplicaID; id != "" {
		return id, nil
	}
	id, err := os.Hostname()
	if err != nil || id == "" {
		if c.Sharding.Enabled {
			return "", fmt.Errorf("sharding: no sharding.replicaID and no host name: %v", err)
		}
		return "unknown", nil
	}
	return id, nil
}

// UserAgent is the user agent of a replica's requests to a workload
// cluster for purpose (kubeconfigsecret's Purpose*, RotationPurpose):
// "etcdfleet-manager/<purpose> (replica <id>)". With the replica in it,
// the workload apiserver's audit log says which replica reached the
// cluster, which is how the sharding e2e checks from the apiservers' side
// that a replica reaches only the clusters whose fence it holds.
func UserAgent(purpose, replica string) string {
	return "etcdfleet-manager/" + purpose + " (replica " + replica + ")"
}

// RotationPurpose names the token rotation's requests (fleet/rotation).
const RotationPurpose = "token-rotation"

// ParseUserAgent returns the purpose and replica of a user agent that
// UserAgent made, and false for any other.
func ParseUserAgent(ua string) (purpose, replica string, ok bool) {
	rest, ok := strings.CutPrefix(ua, "etcdfleet-manager/")
	if !ok {
		return "", "", false
	}
	purpose, rest, ok = strings.Cut(rest, " (replica ")
	if !ok || purpose == "" {
		return "", "", false
	}
	replica, ok = strings.CutSuffix(rest, ")")
	return purpose, replica, ok && replica != ""
}
