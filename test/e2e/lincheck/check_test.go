package lincheck

import (
	"os"
	"strings"
	"testing"
	"time"
)

// at is a time ms milliseconds into a made-up history.
func at(ms int) time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond)
}

func put(client int, key, value string, rev int64, call, ret int) Op {
	return Op{Client: client, Input: Input{Kind: Put, Key: key, Value: value},
		Output: Output{Revision: rev}, Call: at(call), Return: at(ret)}
}

func get(client int, key, value string, modRev, rev int64, call, ret int) Op {
	return Op{Client: client, Input: Input{Kind: Get, Key: key},
		Output: Output{Found: value != "", Value: value, ModRev: modRev, Revision: rev}, Call: at(call), Return: at(ret)}
}

func cas(client int, key string, expect int64, value string, succeeded bool, rev int64, call, ret int) Op {
	return Op{Client: client, Input: Input{Kind: CAS, Key: key, ExpectRev: expect, Value: value},
		Output: Output{Succeeded: succeeded, Revision: rev}, Call: at(call), Return: at(ret)}
}

// casLost is a CAS whose compare failed; its else branch read value@modRev.
func casLost(client int, key string, expect int64, value, read string, modRev, rev int64, call, ret int) Op {
	o := cas(client, key, expect, value, false, rev, call, ret)
	o.Output.Found, o.Output.Value, o.Output.ModRev = read != "", read, modRev
	return o
}

func del(client int, key string, deleted, rev int64, call, ret int) Op {
	return Op{Client: client, Input: Input{Kind: Delete, Key: key},
		Output: Output{Deleted: deleted, Revision: rev}, Call: at(call), Return: at(ret)}
}

func unknown(o Op) Op {
	o.Output = Output{Outcome: Unknown, Err: "context deadline exceeded"}
	return o
}

func failed(o Op) Op {
	o.Output = Output{Outcome: Failed, Err: "connection refused"}
	return o
}

func check(t *testing.T, name string, ops ...Op) Result {
	t.Helper()
	return Check(History{Name: name, Ops: ops}, t.TempDir(), time.Minute)
}

func expectRejected(t *testing.T, r Result, want string) {
	t.Helper()
	err := r.Err()
	if err == nil {
		t.Fatalf("history accepted: %s", r.Summary())
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("error does not mention %q:\n%v", want, err)
	}
	t.Logf("rejected as expected:\n%v", err)
}

func expectVisualization(t *testing.T, r Result) {
	t.Helper()
	if r.Visualization == "" {
		t.Fatal("no visualization written")
	}
	b, err := os.ReadFile(r.Visualization)
	if err != nil || !strings.Contains(string(b), "<html") {
		t.Fatalf("visualization %s unreadable or not HTML: %v", r.Visualization, err)
	}
}

func TestRejectsLostAcknowledgedWrite(t *testing.T) {
	r := check(t, "lost-write",
		put(0, "k0", "v1", 2, 0, 10),
		get(1, "k0", "v1", 2, 2, 20, 30),
		put(0, "k0", "v2", 3, 40, 50),    // acknowledged...
		get(1, "k0", "v1", 2, 3, 60, 70), // ...and gone: the read went back to v1
		get(2, "k0", "", 0, 3, 80, 90),   // and then the key is gone too
	)
	expectRejected(t, r, "key k0: 3 of 5 operations linearize")
	expectRejected(t, r, `put(k0, v2) -> ok (rev 3)`)
	expectVisualization(t, r)
}

func TestRejectsStaleRead(t *testing.T) {
	r := check(t, "stale-read",
		put(0, "k0", "v1", 2, 0, 10),
		put(0, "k0", "v2", 3, 20, 30),
		// Called after v2 was acknowledged, so it must see v2 (or later).
		get(1, "k0", "v1", 2, 2, 40, 50),
	)
	expectRejected(t, r, `get(k0) -> "v1"@2 (rev 2)`)
	expectVisualization(t, r)
}

func TestRejectsReadOfAWriteThatNeverHappened(t *testing.T) {
	// A failed read is dropped; an acknowledged read of a value no write
	// produced is not.
	r := check(t, "phantom",
		put(0, "k0", "v1", 2, 0, 10),
		failed(get(1, "k0", "", 0, 0, 20, 30)),
		get(1, "k0", "nobody-wrote-this", 2, 2, 40, 50),
	)
	expectRejected(t, r, "nobody-wrote-this")
}

func TestRejectsARepeatedRevision(t *testing.T) {
	r := check(t, "repeat",
		put(0, "k0", "v1", 2, 0, 10),
		put(1, "k1", "v2", 2, 0, 10), // another key, the same revision
	)
	expectRejected(t, r, "revision 2 was given to two writes")
	if r.Visualization != "" {
		t.Fatalf("each key alone linearizes, yet a visualization was written: %s", r.Visualization)
	}
}

func TestRejectsARevisionThatGoesBack(t *testing.T) {
	r := check(t, "back",
		put(0, "k0", "v1", 5, 0, 10),
		get(1, "k1", "", 0, 3, 20, 30), // served from a store behind rev 5
	)
	expectRejected(t, r, "revision went back")
}

func TestRejectsACompareThatCannotHaveSucceeded(t *testing.T) {
	r := check(t, "cas",
		put(0, "k0", "v1", 2, 0, 10),
		put(0, "k0", "v2", 3, 20, 30),
		cas(1, "k0", 2, "v3", true, 4, 40, 50), // k0 was at 3 already
	)
	expectRejected(t, r, "cas(k0, @2, v3) -> ok (rev 4)")
}

func TestAcceptsAValidConcurrentHistory(t *testing.T) {
	r := check(t, "valid",
		put(0, "k0", "a", 2, 0, 50),
		get(1, "k0", "", 0, 1, 10, 20),        // before the put took effect
		get(2, "k0", "a", 2, 2, 30, 60),       // after
		put(3, "k1", "x", 3, 35, 45),          // another key shares the revisions
		unknown(put(0, "k0", "b", 0, 70, 80)), // took effect: read below at rev 4
		get(1, "k0", "b", 4, 4, 90, 100),
		cas(2, "k0", 4, "c", true, 5, 110, 120),
		casLost(3, "k0", 4, "d", "c", 5, 5, 115, 130), // lost the race to client 2
		unknown(put(0, "k0", "never", 0, 140, 150)),   // never took effect
		get(1, "k0", "c", 5, 5, 160, 170),
		del(2, "k0", 1, 6, 180, 190),
		del(3, "k0", 0, 6, 200, 210),
		unknown(del(0, "k1", 0, 0, 220, 230)), // took effect: k1 is gone below
		failed(get(1, "k1", "", 0, 0, 240, 250)),
		get(2, "k1", "", 0, 7, 260, 270),
		cas(3, "k1", 0, "y", true, 8, 280, 290), // create-if-absent
	)
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestWriteGapsMeasureTheLongestTimeBetweenAcknowledgedWrites(t *testing.T) {
	h := History{Ops: []Op{
		put(0, "k0", "a", 2, 0, 100),
		get(1, "k0", "a", 2, 2, 200, 300), // a read does not count
		unknown(put(0, "k0", "b", 0, 300, 400)),
		del(0, "k0", 1, 3, 900, 1000),
		put(0, "k0", "c", 4, 1000, 1200),
	}}
	gap, writes := h.WriteGaps()
	if gap != 900*time.Millisecond || writes != 3 {
		t.Fatalf("longest gap %s over %d writes, want 900ms over 3", gap, writes)
	}
}
