package incident

import (
	"context"
	"sort"
	"time"

	"github.com/sporectl/sporectl/state"
)

// RecentEvents is the spore's events at or after since, oldest first,
// read inside tx from the end of its log in pages of ScanPage and never
// more than bound of them; cut says the bound stopped it before since.
// Its cost is what the window holds (at most bound), never the history.
func RecentEvents(ctx context.Context, tx state.Tx, id string, since time.Time, bound int) (evs []state.Event, cut bool, err error) {
	h, err := tx.Head(ctx, id)
	if err != nil {
		return nil, false, err
	}
	var pages [][]state.Event
	hi, scanned := h.LastSeq, 0
	for hi > 0 {
		if scanned >= bound {
			return flatten(pages), true, nil
		}
		n := min(uint64(ScanPage), uint64(bound-scanned), hi)
		page, err := tx.Events(ctx, id, hi-n, int(n))
		if err != nil {
			return nil, false, err
		}
		scanned += len(page)
		hi -= n
		i := sort.Search(len(page), func(i int) bool { return !page[i].At.Before(since) })
		pages = append(pages, page[i:])
		if i > 0 || len(page) == 0 {
			break
		}
	}
	return flatten(pages), false, nil
}

// flatten joins pages read newest first into one slice, oldest first.
func flatten(pages [][]state.Event) []state.Event {
	var out []state.Event
	for i := len(pages) - 1; i >= 0; i-- {
		out = append(out, pages[i]...)
	}
	return out
}
