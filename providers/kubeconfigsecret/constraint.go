package kubeconfigsecret

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
)

// Event reasons of the constraint checks (Options.Constraint and
// Options.ForbiddenChecks), recorded on the registration Secret.
const (
	// EventUnconstrained (Warning): admission admitted what the
	// credentials must not be able to write; the cluster is refused, or
	// engaged anyway with Options.AllowUnconstrained.
	EventUnconstrained = ReasonUnconstrained
	// EventOverPrivileged (Warning): the credentials hold permissions of
	// Options.ForbiddenChecks.
	EventOverPrivileged = "OverPrivileged"
	// EventConstrained (Normal): neither holds any more.
	EventConstrained = "Constrained"
)

// ConstraintFunc answers whether the credentials of cfg are as constrained
// as the caller expects, in the registration's namespaces (none:
// cluster-wide). It returns "" when they are, else what was admitted that
// should not have been; an error means no answer, which changes nothing.
// etcdfleet's dry-runs a write of each kind its admission policies guard
// that no policy admits.
type ConstraintFunc func(ctx context.Context, cfg *rest.Config, namespaces []string) (string, error)

// constraintState is what the last constraint check found, kept by the
// conn across its sessions so that a change is reported once.
type constraintState struct {
	unconstrained, overPrivileged string
}

// checkConstraint runs Options.Constraint, and Options.ForbiddenChecks if
// forbidden, with w's credentials, bounded by ctx, and records what they
// found in the cluster's state (with a metric, a log line and an Event
// when it changed). It returns the
// problem that makes the cluster unfit to engage: "" when it is
// constrained or AllowUnconstrained says to engage it anyway. An error
// means a check got no answer, and nothing was recorded: pre-flight
// fails on it (an unverified cluster is not engaged), the re-check
// leaves an engaged cluster as it is (the probes deal with a cluster
// that does not answer).
func (c *conn) checkConstraint(ctx context.Context, w *rightsWatch, forbidden bool) (string, error) {
	o := c.p.opts
	if o.Constraint == nil && len(o.ForbiddenChecks) == 0 {
		return "", nil
	}
	cs := c.constraint
	if o.Constraint != nil {
		problem, err := o.Constraint(ctx, w.cfg, w.namespaces)
		if err != nil {
			return "", fmt.Errorf("constraint check: %w", err)
		}
		cs.unconstrained = problem
	}
	if forbidden && len(o.ForbiddenChecks) > 0 {
		allowed, err := checkAccess(ctx, w.ssar, o.ForbiddenChecks, w.namespaces, false)
		if err != nil {
			return "", fmt.Errorf("forbidden-rights check: %w", err)
		}
		cs.overPrivileged = strings.Join(allowed, "; ")
	}
	c.reportConstraint(cs)
	if cs.unconstrained != "" && !o.AllowUnconstrained {
		return cs.unconstrained, nil
	}
	return "", nil
}

// reportConstraint publishes cs, and logs and records an Event for what
// changed since the last report.
func (c *conn) reportConstraint(cs constraintState) {
	prev := c.constraint
	c.constraint = cs
	setConstraint(c.p.opts.Namespace, c.name, cs)
	c.p.update(c, func(st *ClusterState) {
		st.Unconstrained, st.OverPrivileged, st.ConstraintChecked = cs.unconstrained, cs.overPrivileged, true
	})
	if cs == prev {
		return
	}
	if cs.unconstrained != "" && cs.unconstrained != prev.unconstrained {
		msg := "admission admitted writes the credentials must not be able to make: " + cs.unconstrained
		if c.p.opts.AllowUnconstrained {
			c.log.Info("The credentials are unconstrained; engaging anyway (allow-unconstrained)", "admitted", cs.unconstrained)
			msg += "; engaged anyway (allow-unconstrained)"
		} else {
			c.log.Info("The credentials are unconstrained; the cluster is not engaged", "admitted", cs.unconstrained)
			msg += "; the cluster is not engaged until they are refused (install the workload admission policies)"
		}
		c.p.event(c.name, corev1.EventTypeWarning, EventUnconstrained, msg)
	}
	if cs.overPrivileged != "" && cs.overPrivileged != prev.overPrivileged {
		c.log.Info("The credentials hold rights beyond what the controllers need", "beyond", cs.overPrivileged)
		c.p.event(c.name, corev1.EventTypeWarning, EventOverPrivileged,
			"the credentials hold rights beyond what the controllers need: "+cs.overPrivileged)
	}
	if cs == (constraintState{}) {
		c.log.Info("The credentials are constrained again")
		c.p.event(c.name, corev1.EventTypeNormal, EventConstrained, "admission refuses what the credentials must not write, and they hold no right beyond the expected ones")
	}
}

// preflightConstraint runs checkConstraint in pre-flight, under its
// context ctx, and fails closed: a cluster whose constraint could not be
// verified is not engaged, unless AllowUnconstrained.
func (c *conn) preflightConstraint(ctx, actx context.Context, rights *rightsWatch, red redactor) *failure {
	problem, err := c.checkConstraint(ctx, rights, true)
	if err != nil && c.p.opts.AllowUnconstrained {
		c.log.Info("The constraint checks got no answer; engaging anyway (allow-unconstrained)", "error", red.redact(err.Error()))
		return nil
	}
	if err != nil {
		return c.timeoutOr(ctx, actx, err, fmt.Sprintf("pre-flight: the constraint checks did not finish within %s",
			c.p.opts.PreflightTimeout), "pre-flight", red)
	}
	if problem != "" {
		return &failure{reason: ReasonUnconstrained, msg: "pre-flight: the credentials are not constrained by admission: " +
			problem + " (install the workload admission policies, or run with allow-unconstrained)"}
	}
	return nil
}
