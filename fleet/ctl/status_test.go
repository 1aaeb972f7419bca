package ctl_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	fleetv1 "github.com/etcdfleet/etcdfleet/fleet/api/v1alpha1"
	"github.com/etcdfleet/etcdfleet/fleet/ctl"
)

// printerColumns is the header kubectl prints for the CRD in file (of
// config/crd/management, generated from the printcolumn markers): NAME,
// then the printer columns uppercased, those of priority above 0 only when
// wide. Status must print exactly this, so the markers stay its only list.
func printerColumns(file string, wide bool) []string {
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "config", "crd", "management", file))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	ExpectWithOffset(1, yaml.Unmarshal(b, &crd)).To(Succeed())
	ExpectWithOffset(1, crd.Spec.Versions).To(HaveLen(1))
	cols := []string{"NAME"}
	for _, c := range crd.Spec.Versions[0].AdditionalPrinterColumns {
		if wide || c.Priority == 0 {
			cols = append(cols, strings.ToUpper(c.Name))
		}
	}
	return cols
}

// columnGap is what separates two columns: kubectl's tabwriter pads by 3,
// and no column name holds two spaces in a row.
var columnGap = regexp.MustCompile(`\s{2,}`)

// tables splits Status's output into its tables, each into header and rows.
func tables(out string) [][][]string {
	var ts [][][]string
	for _, block := range strings.Split(strings.TrimSpace(out), "\n\n") {
		var t [][]string
		for _, line := range strings.Split(block, "\n") {
			t = append(t, columnGap.Split(strings.TrimSpace(line), -1))
		}
		ts = append(ts, t)
	}
	return ts
}

var _ = Describe("status", Ordered, func() {
	var c client.Client

	BeforeAll(func(ctx SpecContext) {
		s := kruntime.NewScheme()
		Expect(fleetv1.AddToScheme(s)).To(Succeed())
		Expect(corev1.AddToScheme(s)).To(Succeed())
		var err error
		c, err = client.New(fleet.Cluster("mgmt").Config, client.Options{Scheme: s})
		Expect(err).NotTo(HaveOccurred())
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}, NodeTimeout(time.Minute))

	It("says there are no FleetClusters rather than print a bare header", func(ctx SpecContext) {
		var out bytes.Buffer
		Expect(ctl.Status(ctx, fleet.Cluster("mgmt").Config, "nothing-here", "", &out)).To(Succeed())
		Expect(out.String()).To(Equal("No FleetClusters found in nothing-here namespace.\n"))
	}, SpecTimeout(time.Minute))

	It("prints the Fleet and the FleetClusters with exactly the CRDs' printer columns", func(ctx SpecContext) {
		f := &fleetv1.Fleet{ObjectMeta: metav1.ObjectMeta{Name: fleetv1.FleetName}}
		Expect(c.Create(ctx, f)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(c.Delete(ctx, f)).To(Succeed()) })
		f.Status.ClustersTotal, f.Status.ClustersConnected = 1, 1
		Expect(c.Status().Update(ctx, f)).To(Succeed())
		fc := &fleetv1.FleetCluster{ObjectMeta: metav1.ObjectMeta{Name: "shown", Namespace: ns}}
		Expect(c.Create(ctx, fc)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(c.Delete(ctx, fc)).To(Succeed()) })
		meta.SetStatusCondition(&fc.Status.Conditions, metav1.Condition{Type: fleetv1.ConditionConnected,
			Status: metav1.ConditionTrue, Reason: "Probed"})
		fc.Status.EtcdClusters, fc.Status.QuorateEtcdClusters, fc.Status.MembersSummary = 2, 1, "4/6"
		Expect(c.Status().Update(ctx, fc)).To(Succeed())

		for _, wide := range []bool{false, true} {
			output := map[bool]string{false: "", true: "wide"}[wide]
			var out bytes.Buffer
			Expect(ctl.Status(ctx, fleet.Cluster("mgmt").Config, ns, output, &out)).To(Succeed())
			GinkgoWriter.Printf("etcdfleetctl status -o %q:\n%s", output, out.String())
			ts := tables(out.String())
			Expect(ts).To(HaveLen(2), "the Fleet's table, then the FleetClusters'")
			Expect(ts[0][0]).To(Equal(printerColumns("fleet.etcdfleet.io_fleets.yaml", wide)))
			// Empty cells (a JSONPath that found nothing) merge two gaps,
			// so rows are checked by their values rather than positions.
			Expect(ts[0][1][0]).To(Equal("fleet"))
			Expect(ts[1][0]).To(Equal(printerColumns("fleet.etcdfleet.io_fleetclusters.yaml", wide)))
			Expect(ts[1]).To(HaveLen(2), "one row, for the one FleetCluster")
			Expect(ts[1][1][0]).To(Equal("shown"))
			Expect(ts[1][1]).To(ContainElements("True", "2", "1", "4/6"))
		}
	}, SpecTimeout(time.Minute))

	It("prints the objects as JSON and YAML, and refuses other formats", func(ctx SpecContext) {
		var out bytes.Buffer
		Expect(ctl.Status(ctx, fleet.Cluster("mgmt").Config, ns, "json", &out)).To(Succeed())
		var d ctl.Dashboard
		Expect(json.Unmarshal(out.Bytes(), &d)).To(Succeed())
		out.Reset()
		Expect(ctl.Status(ctx, fleet.Cluster("mgmt").Config, ns, "yaml", &out)).To(Succeed())
		Expect(yaml.Unmarshal(out.Bytes(), &d)).To(Succeed())
		Expect(out.String()).To(ContainSubstring("clusters:"))
		Expect(ctl.Status(ctx, fleet.Cluster("mgmt").Config, ns, "xml", &out)).To(MatchError(ContainSubstring("unknown output")))
	}, SpecTimeout(time.Minute))
})
