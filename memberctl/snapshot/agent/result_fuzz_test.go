package agent_test

import (
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// FuzzParseResult feeds ParseResult termination messages: they come from a
// Pod of the workload cluster, whose status anyone controlling that
// cluster can write, and the artifact they describe is what a restore
// trusts (its sha256 is checked against the download). It checks that:
//   - any valid Result, as Run writes it (json.Marshal), parses back
//     unchanged;
//   - a message either parses to a result Run could have written (size > 0,
//     a sha256 of 64 lowercase hex digits, revision >= 0, an ETag of at
//     most 128 visible ASCII characters without quote or comma, as it
//     goes into If-Match headers and flags) that survives a
//     second round trip, or yields an error and the zero Result: never a
//     partial one.
func FuzzParseResult(f *testing.F) {
	sum := strings.Repeat("9f", 32)
	f.Add(`{"sizeBytes":12713984,"sha256":"`+sum+`","revision":4021}`, int64(12713984), []byte("\x9f\x00"), int64(4021))
	f.Add(`{"sizeBytes":4096,"sha256":"ab12","revision":77}`, int64(1), []byte(nil), int64(0))
	f.Add(`{"sizeBytes":4096,"sha256":"`+strings.ToUpper(sum)+`","revision":1}`, int64(1), []byte{0xff}, int64(1))
	f.Add(`{"sizeBytes":4096,"sha256":"`+sum+`","revision":-1}`, int64(4096), []byte(nil), int64(-1))
	f.Add(`{"sizeBytes":0,"sha256":"`+sum+`"}`, int64(0), []byte(nil), int64(0))
	f.Add(`{"SHA256":"`+sum+`","SizeBytes":1,"sha256":"`+sum[:63]+`g"}`, int64(1), []byte(nil), int64(1))
	f.Add(`{"sizeBytes":1e3,"sha256":"`+sum+`"}`, int64(1), []byte(nil), int64(1))
	f.Add(`null`, int64(1), []byte(nil), int64(1))
	f.Add(`store snapshot: put: 503 Service Unavailable`, int64(1), []byte(nil), int64(1))
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`"} trailing`, int64(1), []byte(nil), int64(1))
	// ETags: a multipart upload's, a single PUT's, and ones that must not
	// reach an If-Match header or a flag (quotes, commas, spaces, too long).
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`","revision":3,"etag":"f135b4807ca3ae5e57267e25cab377ac-1"}`, int64(1), []byte(nil), int64(3))
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`","revision":3,"etag":"f135b4807ca3ae5e57267e25cab377ac"}`, int64(1), []byte(nil), int64(3))
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`","etag":"\"abc\""}`, int64(1), []byte(nil), int64(1))
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`","etag":"a,b"}`, int64(1), []byte(nil), int64(1))
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`","etag":"a b\n--delete"}`, int64(1), []byte(nil), int64(1))
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`","etag":"`+strings.Repeat("e", 129)+`"}`, int64(1), []byte(nil), int64(1))
	f.Add(`{"sizeBytes":1,"sha256":"`+sum+`","etag":7}`, int64(1), []byte(nil), int64(1))
	f.Fuzz(func(t *testing.T, msg string, size int64, digest []byte, rev int64) {
		if r, err := agent.ParseResult(msg); err != nil {
			if r != (agent.Result{}) {
				t.Fatalf("ParseResult(%q) = %+v with error %v; want the zero Result", msg, r, err)
			}
		} else {
			checkResult(t, msg, r)
		}

		// A valid result: sizes and revisions are the fuzzer's, the digest
		// its bytes padded or cut to a sha256's 32.
		if size <= 0 || rev < 0 {
			return
		}
		want := agent.Result{SizeBytes: size, SHA256: hex.EncodeToString(append(digest, make([]byte, 32)...)[:32]), Revision: rev}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := agent.ParseResult(string(b)); err != nil || got != want {
			t.Fatalf("ParseResult(%s) = %+v, %v; want %+v", b, got, err, want)
		}
	})
}

// checkResult: r, parsed from msg, is a result Run could have written, and
// writing it again gives it back.
func checkResult(t *testing.T, msg string, r agent.Result) {
	t.Helper()
	if r.SizeBytes <= 0 || r.Revision < 0 || len(r.SHA256) != 64 || strings.Trim(r.SHA256, "0123456789abcdef") != "" ||
		len(r.ETag) > agent.MaxETagLength || strings.ContainsAny(r.ETag, "\",") || strings.IndexFunc(r.ETag, func(c rune) bool { return c <= ' ' || c > '~' }) >= 0 {
		t.Fatalf("ParseResult(%q) accepted %+v", msg, r)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := agent.ParseResult(string(b)); err != nil || again != r {
		t.Fatalf("%+v, from %q, parses back to %+v, %v", r, msg, again, err)
	}
}
