package limiter

import "time"

// monoClock keeps the times given to a rate.Limiter from going back:
// given an earlier time, rate.Limiter moves its clock back and then
// credits the same interval twice. Callers hold their own lock.
type monoClock struct{ last time.Time }

// read returns now(), or the latest time already read if that is later.
func (c *monoClock) read(now func() time.Time) time.Time {
	t := now()
	if t.Before(c.last) {
		t = c.last
	}
	c.last = t
	return t
}
