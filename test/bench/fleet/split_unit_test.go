package fleet

import (
	"fmt"
	"testing"
)

func TestUnevenReplicaIDs(t *testing.T) {
	var clusters []string
	for i := 1; i <= 10; i++ {
		clusters = append(clusters, fmt.Sprintf("w%02d", i))
	}
	ids, owned, err := unevenReplicaIDs(3, clusters)
	if err != nil {
		t.Fatal(err)
	}
	total, most := 0, 0
	for _, id := range ids {
		n := len(owned[id])
		if n == 0 {
			t.Fatalf("replica %s owns nothing: %v", id, owned)
		}
		total, most = total+n, max(most, n)
	}
	if total != len(clusters) || most < 2*(total-most) {
		t.Fatalf("split %v is not at least 4:1:1 over %d clusters", owned, len(clusters))
	}
}
