package agent_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/etcdfleet/etcdfleet/memberctl/snapshot/agent"
)

// TestPermanentIsWhatARetryMeetsAgain: the errors the agent's Jobs fail
// on at once (agent.ExitPermanent) are the answers of a real store about
// its objects and the credentials, and the agent's own findings about
// what it read; a store that cannot be reached is retried.
func TestPermanentIsWhatARetryMeetsAgain(t *testing.T) {
	ctx := context.Background()
	s3, bucket := startStore(t)
	good := t.TempDir()
	writeCreds(t, good, s3.AccessKey, s3.SecretKey)
	wrong := t.TempDir()
	writeCreds(t, wrong, "nobody", "wrong")
	sum := strings.Repeat("a", 64)
	check := func(creds, endpoint, bucket string) error {
		return agent.Check(ctx, agent.Config{CheckSHA256: sum, CheckSize: 1, Timeout: 10 * time.Second,
			S3: &agent.S3{Endpoint: endpoint, Bucket: bucket, Key: "gone.db", Region: "us-east-1", CredentialsDir: creds}})
	}
	cases := map[string]struct {
		err       error
		permanent bool
	}{
		"the object is gone":                    {check(good, s3.Endpoint, bucket), true},
		"the bucket is gone":                    {check(good, s3.Endpoint, bucket+"-none"), true},
		"the store refuses the credentials":     {check(wrong, s3.Endpoint, bucket), true},
		"the store does not answer":             {check(good, "http://127.0.0.1:1", bucket), false},
		"the location holds an object":          {fmt.Errorf("store snapshot: %w", agent.ErrObjectExists), true},
		"the object was replaced":               {fmt.Errorf("read back: %w", agent.ErrObjectChanged), true},
		"what was read differs from the record": {fmt.Errorf("drill: %w", agent.MarkPermanent(errors.New("sha256 differs"))), true},
		"the file is gone":                      {fmt.Errorf("open: %w", os.ErrNotExist), true},
		"a deadline":                            {fmt.Errorf("read back: %w", context.DeadlineExceeded), false},
		"no error":                              {nil, false},
	}
	for name, c := range cases {
		if c.err == nil && c.permanent {
			t.Errorf("%s: no error", name)
		}
		if got := agent.Permanent(c.err); got != c.permanent {
			t.Errorf("%s: Permanent(%v) = %v, want %v", name, c.err, got, c.permanent)
		}
	}
	if err := agent.MarkPermanent(errors.New("as recorded")); err.Error() != "as recorded" {
		t.Errorf("MarkPermanent changed the text to %q: the termination message quotes it", err)
	}
}

// TestACheckOfAReplacedFileIsPermanent: the check's own mismatch is
// marked, and so is the file a claim no longer holds.
func TestACheckOfAReplacedFileIsPermanent(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.db")
	if err := os.WriteFile(file, []byte("not the snapshot that was recorded"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{file, filepath.Join(dir, "gone.db")} {
		err := agent.Check(context.Background(), agent.Config{File: f, CheckSHA256: strings.Repeat("b", 64), CheckSize: 34})
		if err == nil || !agent.Permanent(err) {
			t.Errorf("check of %s: %v, want a permanent error", f, err)
		}
	}
}
