package kube

import (
	"context"
	"errors"
	"net"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
)

// backoff bounds every retry: five tries over about three seconds, so a
// command stays interactive and a cron pass does not pile up behind a
// sick API server.
var backoff = wait.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.2, Steps: 5}

// transient reports whether err is worth trying again for a request that
// is safe to repeat: the server was overloaded, timed out or failed inside,
// or the connection broke. Conflicts are not here: they need a fresh read
// first, which the caller does.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsUnexpectedServerError(err) {
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && status.Status().Code >= 500 {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	return errors.Is(err, net.ErrClosed)
}

// withRetry runs fn until it succeeds, fails with a permanent error, the
// backoff is spent or ctx ends. retryIf decides which errors are worth
// another try; the last error is returned as it was.
func withRetry(ctx context.Context, retryIf func(error) bool, fn func() error) error {
	b := backoff
	for {
		err := fn()
		if err == nil || !retryIf(err) || b.Steps <= 1 {
			return err
		}
		t := time.NewTimer(b.Step())
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
	}
}
