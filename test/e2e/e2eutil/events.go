package e2eutil

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// warningEventsMax keeps a failure message to a screen.
const warningEventsMax = 12

// WarningEvents lists the newest Warning Events in ns about objects
// named with the prefix (an EtcdCluster's name also prefixes its
// members'), one per line, for failure messages: when a member's ID
// changed, its reconciler said why in an Event
// (ReplacingCrashLoopingMember, MemoryMemberLost, ...), and CI shows the
// failure message, not the manager's log.
func WarningEvents(ctx context.Context, c client.Client, ns, prefix string) string {
	var list corev1.EventList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return "listing Events: " + err.Error()
	}
	var warnings []corev1.Event
	for _, e := range list.Items {
		if e.Type == corev1.EventTypeWarning && strings.HasPrefix(e.InvolvedObject.Name, prefix) {
			warnings = append(warnings, e)
		}
	}
	sort.Slice(warnings, func(i, j int) bool { return lastSeen(warnings[i]).Before(lastSeen(warnings[j])) })
	if len(warnings) > warningEventsMax {
		warnings = warnings[len(warnings)-warningEventsMax:]
	}
	var b strings.Builder
	for _, e := range warnings {
		fmt.Fprintf(&b, "\n  %s %s/%s %s (x%d): %s", lastSeen(e).Format("15:04:05"), e.InvolvedObject.Kind,
			e.InvolvedObject.Name, e.Reason, max(e.Count, 1), e.Message)
	}
	if b.Len() == 0 {
		return " none"
	}
	return b.String()
}

func lastSeen(e corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}
