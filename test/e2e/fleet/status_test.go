package fleet_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
)

// expectStatusMidHeal runs `etcdfleetctl status` while the fleet heals and
// checks every FleetCluster row it prints against the object, value by
// value. The rows change under it, so a row counts only when its
// FleetCluster's resourceVersion is the same before and after the run,
// and a run counts only when one such row shows a cluster mid-heal (not
// Ready, or without quorum somewhere): a populated fleet mid-heal, not an
// empty or settled one. Ready stays False until every member is back,
// which spans the heal; quorum alone comes back within seconds.
func expectStatusMidHeal(ctx context.Context) {
	Eventually(func(g Gomega) {
		before := versions(fleetClusters(ctx, g))
		var out bytes.Buffer
		g.Expect(ctl.Status(ctx, sb.Cluster("mgmt").Config, secretNS, "", &out)).To(Succeed())
		after := fleetClusters(ctx, g)
		rows := clusterRows(g, out.String())
		g.Expect(rows).To(HaveLen(len(after)), out.String())
		healing := false
		for _, fc := range after {
			if before[fc.Name] != fc.ResourceVersion {
				continue // changed while status ran: either version may be printed
			}
			st := fc.Status
			g.Expect(rows).To(HaveKeyWithValue(fc.Name, And(
				HaveKeyWithValue("CONNECTED", conditionStatus(st.Conditions, fleetv1.ConditionConnected)),
				HaveKeyWithValue("READY", conditionStatus(st.Conditions, fleetv1.ConditionReady)),
				HaveKeyWithValue("ETCDCLUSTERS", fmt.Sprint(st.EtcdClusters)),
				HaveKeyWithValue("QUORATE", fmt.Sprint(st.QuorateEtcdClusters)),
				HaveKeyWithValue("MEMBERS", st.MembersSummary),
				HaveKeyWithValue("REPLACED", fmt.Sprint(st.ReplacementsTotal)),
				HaveKeyWithValue("THROTTLED", fmt.Sprint(st.ReplacementsThrottled)),
				HaveKeyWithValue("BEHINDBACKUP", fmt.Sprint(st.EtcdClustersBehindBackup)),
				HaveKeyWithValue("ALARMS", fmt.Sprint(st.EtcdClustersWithAlarms)),
				HaveKeyWithValue("REPLICA", st.Replica),
			)), out.String())
			healing = healing || st.QuorateEtcdClusters < st.EtcdClusters ||
				conditionStatus(st.Conditions, fleetv1.ConditionReady) != string(metav1.ConditionTrue)
		}
		g.Expect(healing).To(BeTrue(), "no unchanged row shows a cluster mid-heal:\n%s", out.String())
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100 * time.Millisecond).Should(Succeed())
}

func fleetClusters(ctx context.Context, g Gomega) []fleetv1.FleetCluster {
	var list fleetv1.FleetClusterList
	g.Expect(mgmtC.List(ctx, &list, client.InNamespace(secretNS))).To(Succeed())
	return list.Items
}

func versions(fcs []fleetv1.FleetCluster) map[string]string {
	out := map[string]string{}
	for _, fc := range fcs {
		out[fc.Name] = fc.ResourceVersion
	}
	return out
}

func conditionStatus(conds []metav1.Condition, typ string) string {
	if c := apimeta.FindStatusCondition(conds, typ); c != nil {
		return string(c.Status)
	}
	return ""
}

// clusterRows parses the FleetClusters' table (the last one status prints)
// into cells by row name. Cells are cut at the header's column starts, as
// the tabwriter aligns them: an empty cell (no backup schedule) would shift
// a split on blanks.
func clusterRows(g Gomega, out string) map[string]map[string]string {
	blocks := strings.Split(strings.TrimSpace(out), "\n\n")
	lines := strings.Split(blocks[len(blocks)-1], "\n")
	header := lines[0]
	var names []string
	var starts []int
	for i := 0; i < len(header); {
		if header[i] == ' ' {
			i++
			continue
		}
		j := strings.Index(header[i:], " ")
		if j < 0 {
			j = len(header) - i
		}
		names, starts = append(names, header[i:i+j]), append(starts, i)
		i += j
	}
	g.Expect(names).To(ContainElements("NAME", "CONNECTED", "ALARMS"), header)
	rows := map[string]map[string]string{}
	for _, line := range lines[1:] {
		row := map[string]string{}
		for k, name := range names {
			end := len(line)
			if k+1 < len(starts) && starts[k+1] < end {
				end = starts[k+1]
			}
			if starts[k] < end {
				row[name] = strings.TrimSpace(line[starts[k]:end])
			}
		}
		rows[row["NAME"]] = row
	}
	return rows
}
