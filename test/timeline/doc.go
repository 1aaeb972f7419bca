// Package timeline draws a fleet heal as a picture: heal-timeline.svg, one
// row per EtcdCluster, one thin lane per member, each lane coloured by what
// the member was waiting for at each moment (its old Pod terminal, its
// replacement waiting for the fleet's limiter, the replacement under way,
// the new Pod Ready), with the limiter's lower bound drawn as a line, a
// legend and an axis in seconds. `make demo` and `make bench`'s fleet heal
// both write it.
//
// # Usage
//
// Callers gather each member's milestones (from the apiservers' Pod watch
// and, where they have it, the manager's grant log) and call SVG:
//
//	svg, err := timeline.SVG(timeline.Timeline{
//		Title:  "fleet heal",
//		Origin: firstTerminal, // 0 s on the axis
//		Rows: []timeline.Row{{Name: "w1/etcd-a", Members: []timeline.Member{
//			{Name: "etcd-a-0", Terminal: t1, Asked: t2, Granted: t3, Ready: t4},
//		}}},
//		Bound: bound, // the limiter's lower bound on the heal, from Origin
//	})
//
// SVG is a pure function of its input: the same Timeline gives the same
// bytes, which the golden-file test relies on.
//
// # Implementation details
//
// Layout (every coordinate) is computed in Go by layout, so the structural
// test can check it without parsing; the text/template only prints it.
// Names are escaped with encoding/xml. The spans of one member are its
// milestones in order; a milestone not seen (zero) merges its span into the
// one before it, so a member without a logged grant shows terminal until it
// is deleted, then replacing.
package timeline
