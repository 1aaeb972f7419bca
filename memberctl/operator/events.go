package operator

import (
	"io"

	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// eventRecorder returns cfg.Recorder when set. Otherwise it records Events
// into the cluster through one broadcaster whose only watcher is the sink,
// closed with the cluster. A controller-runtime cluster's
// GetEventRecorderFor starts two broadcasters (core/v1 and events/v1), each
// with a sink and a logging watcher buffering 1,000 events: about 130 KiB
// and eight goroutines per cluster, for the handful of Events an etcd
// cluster emits, which matters to a manager engaged to a whole fleet.
func eventRecorder(cfg ClusterConfig) (record.EventRecorder, io.Closer, error) {
	if cfg.Recorder != nil {
		return cfg.Recorder, nopCloser{}, nil
	}
	core, err := corev1client.NewForConfig(cfg.REST)
	if err != nil {
		return nil, nil, err
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: core.Events("")})
	return b.NewRecorder(cfg.Client.Scheme(), corev1.EventSource{Component: "etcdfleet"}), broadcasterCloser{b}, nil
}

// broadcasterCloser flushes and stops a broadcaster on Close.
type broadcasterCloser struct{ b record.EventBroadcaster }

func (c broadcasterCloser) Close() error {
	c.b.Shutdown()
	return nil
}
