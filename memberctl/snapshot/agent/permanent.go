package agent

import (
	"errors"
	"io/fs"
	"net/http"

	"github.com/minio/minio-go/v7"
)

// ExitPermanent is etcdfleet-agent's exit code for a failure that another
// Pod of the same Job would meet again (Permanent). The Jobs that
// memberctl/etcdsnapshot builds fail at once on it (a podFailurePolicy
// FailJob rule), instead of retrying backoffLimit times 10 s, 20 s, ...
// apart: a verify Job that found its object replaced would otherwise hold
// a restore after total loss back for half a minute before it falls back
// to an older snapshot, for nothing.
const ExitPermanent = 3

// Permanent says whether err is one that a retry with the same Job spec
// meets again, because it is about what the store holds or what the
// credentials may do, not about the path to it:
//   - the location already holds an object (ErrObjectExists), or the
//     object is no longer the one recorded (ErrObjectChanged);
//   - the stored snapshot, or the etcd restored from it, differs from
//     what its EtcdSnapshot recorded (MarkPermanent);
//   - the object, its bucket or its file does not exist;
//   - the store refuses the credentials (HTTP 403: AccessDenied,
//     InvalidAccessKeyId, SignatureDoesNotMatch).
//
// Everything else, timeouts, stalls, refused connections and 5xx answers
// among them, is retried by the Job: a store or a member that blinks.
func Permanent(err error) bool {
	if err == nil {
		return false
	}
	var p permanentError
	if errors.As(err, &p) || errors.Is(err, ErrObjectExists) || errors.Is(err, ErrObjectChanged) || errors.Is(err, fs.ErrNotExist) {
		return true
	}
	// The store's answer, however deeply the agent wrapped it
	// (minio.ToErrorResponse looks at err itself only).
	var r minio.ErrorResponse
	if !errors.As(err, &r) {
		return false
	}
	return isNotFound(r) || r.StatusCode == http.StatusForbidden
}

// MarkPermanent marks err as Permanent without changing its text (the
// termination message, which conditions quote); nil stays nil.
func MarkPermanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentError{err}
}

type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }
