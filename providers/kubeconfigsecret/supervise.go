package kubeconfigsecret

import (
	"context"
	"fmt"
	"time"
)

// supervise probes an engaged cluster until it must be disengaged.
func (c *conn) supervise(actx context.Context, s *session) outcome {
	o := c.p.opts
	t := time.NewTicker(o.ProbeInterval)
	defer t.Stop()
	rt := time.NewTicker(o.AccessRecheckInterval)
	defer rt.Stop()
	s.rights.last = time.Now() // pre-flight checked them
	fails := 0
	for {
		select {
		case <-rt.C:
			if fails > 0 {
				// The last probe got no answer: the rights cannot be read
				// either, and each look would wait out ProbeTimeout twice
				// before the next probe, stretching FailureThreshold probes
				// of a hung apiserver from FailureThreshold·ProbeInterval to
				// minutes. Nothing can be written to it meanwhile; the looks
				// resume with the first probe answered.
				continue
			}
			full := c.checkRights(actx, s, false)
			if problem := c.recheckConstraint(actx, s, full); problem != "" {
				c.p.update(c, func(st *ClusterState) {
					st.Connected, st.Reason = false, ReasonUnconstrained
					st.Message = "the credentials are no longer constrained by admission: " + problem + "; disengaged"
					st.ConsecutiveFailures++
				})
				return disconnected
			}
			if full {
				c.checkUnwatched(actx, s.rights.cfg, s.rights.namespaces)
			}
			if owner := c.outrankedBy(actx); owner != "" {
				c.log.Info("Another Secret owns this cluster now; reconnecting to be refused", "owner", owner)
				return outranked
			}
			continue
		case <-s.budget.exceeded:
			f := s.budget.failure()
			c.log.Info("Cluster over budget", "why", s.budget.reason())
			c.p.update(c, func(st *ClusterState) {
				st.Connected, st.Reason, st.Message = false, f.reason, f.msg
				st.ConsecutiveFailures++
			})
			return disconnected
		case <-s.rights.forbidden:
			if s.rights.forbiddenDue(time.Now()) {
				c.checkRights(actx, s, true)
			}
			continue
		case <-actx.Done():
			return c.interrupted()
		case <-s.ctx.Done():
			if actx.Err() != nil {
				return c.interrupted()
			}
			c.p.update(c, func(st *ClusterState) {
				st.Connected, st.Reason, st.Message = false, ReasonDisconnected, "the cluster's cache stopped"
				st.ConsecutiveFailures++
			})
			return disconnected
		case <-t.C:
		}
		version, err := c.probe(actx, s)
		now := time.Now()
		if err == nil {
			fails = 0
			c.p.update(c, func(st *ClusterState) {
				st.Connected, st.Reason, st.Message = true, ReasonConnected, "engaged"
				st.ServerVersion, st.LastProbeTime, st.ConsecutiveFailures = version, now, 0
			})
			continue
		}
		if actx.Err() != nil {
			return c.interrupted()
		}
		f := classify(err, "probe", s.red)
		fails++
		c.log.V(1).Info("Probe failed", "reason", f.reason, "message", f.msg, "consecutiveFailures", fails)
		switch {
		case f.reason == ReasonUnauthorized:
			c.p.update(c, func(st *ClusterState) {
				st.Connected, st.Reason, st.LastProbeTime = false, ReasonUnauthorized, now
				st.Message = f.msg + "; reconnecting with the Secret's current contents"
				st.ConsecutiveFailures++
			})
			return unauthorized
		case fails >= o.FailureThreshold:
			c.p.update(c, func(st *ClusterState) {
				st.Connected, st.Reason, st.LastProbeTime = false, ReasonDisconnected, now
				st.Message = fmt.Sprintf("%d consecutive probes failed, last: %s", fails, f.msg)
				st.ConsecutiveFailures = fails
			})
			return disconnected
		default:
			c.p.update(c, func(st *ClusterState) {
				st.LastProbeTime, st.ConsecutiveFailures = now, fails
				st.Message = fmt.Sprintf("probe failed (%d/%d): %s", fails, o.FailureThreshold, f.msg)
			})
		}
	}
}
