// Package schedule gives the due times of memberctl's schedules
// (spec.backup and spec.defrag of an EtcdCluster): a five-field cron
// expression evaluated in UTC, or an interval.
//
// # Usage
//
//	s, err := schedule.Parse("spec.backup", spec.Cron, spec.Interval, ec.UID)
//	next := s.Next(last)
//	due := schedule.LatestDue(s, next, now) // missed runs collapse into one
//
// # Implementation details
//
// An interval is due at k*interval + offset seconds since the Unix epoch,
// the offset being FNV-1a of the object's UID modulo the interval. So the
// due times survive a manager restart, and objects created together (a
// fleet rolled out at once) do not all run in the same second. Cron is
// parsed by github.com/robfig/cron/v3; "@every" is refused because
// interval says the same with the spread.
//
// # Trade-offs
//
// Cron times are exactly what the user wrote: they are not spread, since
// a user who writes "0 2 * * *" means 02:00. The fleet paces what starts
// at the same moment (fleet/limiter, snapshot slots).
package schedule
