package kubeconfigsecret

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rulesNamespaceClusterWide is the namespace whose rules review stands for
// a cluster-wide registration's rights. A review needs a namespace, and it
// lists the rules of every ClusterRoleBinding of the credentials, which is
// all that can grant cluster-wide access, with those of the namespace's
// RoleBindings: a change to those only sets off a full check that was not
// needed.
const rulesNamespaceClusterWide = "default"

// rulesFingerprint asks one SelfSubjectRulesReview per namespace of the
// watch's scope and returns a digest of the rules they list, the same for
// the same rules in any order (the authorizer lists bindings in no set
// order). It returns "" when a review fails, says it is incomplete (an
// authorizer other than RBAC, a webhook for one, cannot list its rules) or
// could not evaluate every rule: the rules then say nothing of the rights,
// and checkRights runs the full check.
//
// RBAC only ever grants, so rights that AccessChecks had at the last full
// check change only with the rules; a new token for the same identity
// does not change them.
func (w *rightsWatch) rulesFingerprint(ctx context.Context) string {
	namespaces := w.namespaces
	if len(namespaces) == 0 {
		namespaces = []string{rulesNamespaceClusterWide}
	}
	var rules []string
	for _, ns := range namespaces {
		r, err := w.rules.Create(ctx, &authorizationv1.SelfSubjectRulesReview{
			Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: ns}}, metav1.CreateOptions{})
		if err != nil || r.Status.Incomplete || r.Status.EvaluationError != "" {
			return ""
		}
		for _, rr := range r.Status.ResourceRules {
			rules = append(rules, ns+" "+mustJSON(rr))
		}
		for _, nr := range r.Status.NonResourceRules {
			rules = append(rules, ns+" "+mustJSON(nr))
		}
	}
	slices.Sort(rules)
	h := sha256.New()
	for _, r := range rules {
		h.Write([]byte(r + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// mustJSON encodes a rule; rules are plain structs of strings, which
// always encode.
func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
