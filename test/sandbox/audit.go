package sandbox

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// auditPolicy logs every request at the Metadata level (who, what, when:
// no bodies) when it completes, and a watch also when it opens
// (ResponseStarted): ReadAudit counts each request once, by its audit ID.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
`

// writeAuditPolicy writes auditPolicy into dir and returns its path.
func writeAuditPolicy(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	p := filepath.Join(dir, "audit-policy.yaml")
	return p, os.WriteFile(p, []byte(auditPolicy), 0o644)
}

// AuditLog is the path of cluster name's audit log under dir.
func AuditLog(dir, name string) string { return filepath.Join(dir, name+".audit.log") }

// AuditEvent is what a bench reads of one audit log entry.
type AuditEvent struct {
	AuditID string `json:"auditID"`
	User    struct {
		Username string `json:"username"`
	} `json:"user"`
	UserAgent  string    `json:"userAgent"`
	Verb       string    `json:"verb"`
	RequestURI string    `json:"requestURI"`
	Received   time.Time `json:"requestReceivedTimestamp"`
	// ResponseStatus is what the apiserver answered (its HTTP code).
	ResponseStatus struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// ReadAudit returns the requests of an audit log received in [from, to),
// each once.
func ReadAudit(path string, from, to time.Time) ([]AuditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []AuditEvent
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		var e AuditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if !seen[e.AuditID] && !e.Received.Before(from) && e.Received.Before(to) {
			seen[e.AuditID] = true
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

// Audit returns the requests the cluster's apiserver received in
// [from, to), each once; the sandbox must have been started with
// Options.Audit. The log is written as requests complete, so a caller
// that wants every request of a window waits a moment after it.
func (c *Cluster) Audit(from, to time.Time) ([]AuditEvent, error) {
	return ReadAudit(AuditLog(c.Dir, c.Name), from, to)
}
