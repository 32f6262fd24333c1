package state

import "context"

// ViewValue runs read in one read-only transaction of st and returns what
// it read (the zero value with the error): the shape of a View whose
// closure only fetches one value.
func ViewValue[T any](ctx context.Context, st Store, read func(Tx) (T, error)) (T, error) {
	var v T
	err := st.View(ctx, func(tx Tx) error {
		var err error
		v, err = read(tx)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}
