package component

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Names of etcd's ports (the numbers are in the naming package) on
// containers and Services.
const (
	ClientPortName  = "client"
	PeerPortName    = "peer"
	MetricsPortName = "metrics"
)

// ErrForeign matches (errors.Is) every *ForeignError.
var ErrForeign = errors.New("object is controlled by another owner")

// ForeignError reports an existing object that Sync refused to touch because
// its controller ownerRef does not point at the owner Sync was called for.
type ForeignError struct {
	// Kind and Name identify the refused object, e.g. "PVC", "data-m1".
	Kind, Name string
	// OwnerKind and Owner identify the owner Sync was called for.
	OwnerKind, Owner string
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s %s is not owned by %s %s (awaiting garbage collection)",
		e.Kind, e.Name, e.OwnerKind, e.Owner)
}

// Is makes errors.Is(err, ErrForeign) true for a *ForeignError.
func (e *ForeignError) Is(target error) bool { return target == ErrForeign }

// ControlledBy reports whether obj's controller ownerRef has the given UID.
// A plain (non-controller) ownerRef does not count: only the controller may
// write an object, and adopting one is exactly what the callers must not do.
func ControlledBy(obj metav1.Object, uid types.UID) bool {
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && uid != "" && ref.UID == uid
}

// MergeLabels sets every label of want on obj and reports whether any
// changed. Other labels on obj are kept: users and other tools may add
// their own, and only the operator's keys are the operator's to repair.
func MergeLabels(obj metav1.Object, want map[string]string) bool {
	labels := obj.GetLabels()
	changed := false
	for k, v := range want {
		if cur, ok := labels[k]; ok && cur == v {
			continue
		}
		if labels == nil {
			labels = map[string]string{}
		}
		labels[k] = v
		changed = true
	}
	obj.SetLabels(labels)
	return changed
}
