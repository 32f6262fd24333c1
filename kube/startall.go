package kube

import (
	"context"
	"errors"
	"sync"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// StartRequest is one spore to start with its credentials.
type StartRequest struct {
	Spore state.Spore
	Creds reconcile.Credentials
}

// DefaultParallelism is how many spores StartAll starts at once. Each
// start is three round trips that mostly wait on etcd, so a few dozen in
// flight keep the API server busy without tripping its fairness limits.
const DefaultParallelism = 32

// StartAll starts many spores concurrently (a colony coming up, a
// reconcile pass waking several). Every spore is tried; the failures are
// joined, each naming its spore.
func (r *Runtime) StartAll(ctx context.Context, reqs []StartRequest, parallelism int) error {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan StartRequest)
	)
	for range min(parallelism, len(reqs)) {
		wg.Go(func() {
			for req := range next {
				if err := r.Start(ctx, req.Spore, req.Creds); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, req := range reqs {
		next <- req
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
