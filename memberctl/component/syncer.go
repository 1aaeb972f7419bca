package component

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Syncer is the one shape of every owned-object package. New(client,
// inputs) returns a Syncer whose Sync keeps the one object of its kind
// that owner controls as the operator wants it, and returns that object as
// it is afterwards (nil when the object is not wanted, e.g. the PDB of a
// cluster without voters or the claim of a memory-backed member).
type Syncer[O, T client.Object] interface {
	Sync(ctx context.Context, owner O) (T, error)
}

// Object describes one owned object to Ensure and Remove.
type Object[PT client.Object] struct {
	// Owner is the object the controller ownerRef points at. OwnerKind
	// names it in errors ("member", "EtcdCluster").
	Owner     client.Object
	OwnerKind string
	// Kind names the object in errors, e.g. "PVC".
	Kind string
	// Want is the desired object without an ownerRef; its namespace and
	// name are the key. Ensure creates it as it is when it is missing.
	Want PT
	// Repair copies the fields the operator owns from want into cur and
	// reports whether any changed. Nil: the object is never changed after
	// creation (a claim, whose spec is immutable once bound).
	Repair func(cur, want PT) bool
	// BeforeCreate, if set, runs before a missing object is created; its
	// error stops the creation (the Pod's check for the Secrets it mounts).
	BeforeCreate func(ctx context.Context) error
}

// ptrObject is a pointer to T that is a client.Object, so that Ensure can
// allocate the empty object it reads into.
type ptrObject[T any] interface {
	*T
	client.Object
}

// Ensure creates o.Want when no object of its name exists and otherwise,
// if o.Owner controls it, repairs it with a merge patch of exactly the
// fields Repair changed, or makes no write when Repair changed none. An
// object controlled by anything else is returned as a *ForeignError and
// left untouched.
func Ensure[T any, PT ptrObject[T]](ctx context.Context, c client.Client, o Object[PT]) (PT, error) {
	cur, err := get[T](ctx, c, o)
	if err != nil {
		return nil, err
	}
	if cur == nil {
		return create(ctx, c, o)
	}
	if o.Repair == nil {
		return cur, nil
	}
	before := cur.DeepCopyObject().(PT)
	if !o.Repair(cur, o.Want) {
		return cur, nil
	}
	// No resourceVersion in the patch: a concurrent write to fields the
	// operator does not own (the kubelet's Pod status) cannot conflict.
	if err := c.Patch(ctx, cur, client.MergeFrom(before)); err != nil {
		return nil, fmt.Errorf("patch %s %s: %w", o.Kind, cur.GetName(), err)
	}
	return cur, nil
}

// RepairExisting is Ensure without the create: a missing object is
// reported as nil and left missing. For a caller that observes an object
// it already found, and must not bring back one that vanished since
// (creating it is another decision, with its own checks).
func RepairExisting[T any, PT ptrObject[T]](ctx context.Context, c client.Client, o Object[PT]) (PT, error) {
	cur, err := get[T](ctx, c, o)
	if err != nil || cur == nil {
		return nil, err
	}
	return Ensure[T](ctx, c, o)
}

// Remove deletes the object named by o.Want if it exists and o.Owner
// controls it. A foreign object is refused as in Ensure.
func Remove[T any, PT ptrObject[T]](ctx context.Context, c client.Client, o Object[PT]) error {
	cur, err := get[T](ctx, c, o)
	if err != nil || cur == nil {
		return err
	}
	// The UID precondition: never delete an object created after our Get.
	uid := cur.GetUID()
	err = c.Delete(ctx, cur, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s: %w", o.Kind, cur.GetName(), err)
	}
	return nil
}

// get returns the current object, nil if there is none, or a *ForeignError
// if o.Owner does not control it.
func get[T any, PT ptrObject[T]](ctx context.Context, c client.Client, o Object[PT]) (PT, error) {
	cur := PT(new(T))
	err := c.Get(ctx, client.ObjectKeyFromObject(o.Want), cur)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get %s %s: %w", o.Kind, o.Want.GetName(), err)
	case !ControlledBy(cur, o.Owner.GetUID()):
		return nil, &ForeignError{Kind: o.Kind, Name: cur.GetName(), OwnerKind: o.OwnerKind, Owner: o.Owner.GetName()}
	}
	return cur, nil
}

// Create creates o.Want without first looking for an object of its name:
// for a caller that has just deleted that object, which a cache may still
// hold (Ensure would find it there and repair it instead). An object that
// still exists comes back as an AlreadyExists error.
func Create[T any, PT ptrObject[T]](ctx context.Context, c client.Client, o Object[PT]) (PT, error) {
	return create(ctx, c, o)
}

func create[T any, PT ptrObject[T]](ctx context.Context, c client.Client, o Object[PT]) (PT, error) {
	if o.BeforeCreate != nil {
		if err := o.BeforeCreate(ctx); err != nil {
			return nil, err
		}
	}
	want := o.Want
	if err := controllerutil.SetControllerReference(o.Owner, want, c.Scheme()); err != nil {
		return nil, fmt.Errorf("set owner of %s %s: %w", o.Kind, want.GetName(), err)
	}
	if err := c.Create(ctx, want); err != nil {
		// AlreadyExists (a stale cache) is returned too: the next
		// reconcile reads the object and runs the ownership check on it.
		return nil, fmt.Errorf("create %s %s: %w", o.Kind, want.GetName(), err)
	}
	return want, nil
}
