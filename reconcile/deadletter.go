package reconcile

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sporectl/sporectl/bridge"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// An outbox is delivered in order, and an entry a bridge refuses waits
// for the next pass with everything behind it: right for a bridge that is
// busy, restarting or briefly wrong, fatal for an entry no bridge will
// ever take. Such an entry is made a dead letter (Tx.Bury) in the pass's
// commit, with an event on its spore's log and a summons to its
// mycologist, and the entries behind it are posted in the same pass
// (docs/bridge.md "Delivery").

// permanent are the answers of a bridge that judge the entry itself, so
// no later try can succeed: 400 (the bridge's checks of an id, a sender
// or a text), 413 (over its bound), 422. Every other failure is
// transient and the entry stays queued: 401 and 403 (the token, not the
// entry), 404 and 405 (something that is not a bridge of this version
// answered: a spore's agent may run its own server on the port), 408,
// 409, 429, every 5xx, and any error without an answer (a network
// error, a timeout). A bridge is the agent's, so a hostile one can bury
// only its own spore's entries.
var permanent = map[int]bool{
	http.StatusBadRequest:            true,
	http.StatusRequestEntityTooLarge: true,
	http.StatusUnprocessableEntity:   true,
}

// undeliverable is, for a delivery's error, the dead letter's reason when
// the bridge refused the entry for good ("" when the error is transient).
func undeliverable(err error) string {
	var ae *bridge.APIError
	if !errors.As(err, &ae) || !permanent[ae.Status] {
		return ""
	}
	return boundReason(fmt.Sprintf("the bridge answered %d %s: %s", ae.Status, http.StatusText(ae.Status), ae.Message))
}

// boundReason makes s a dead letter's reason (state.CheckDeadLetter):
// one line, no control character, at most state.MaxDeadReason bytes. It
// quotes a bridge, which is the agent's; its line breaks read as spaces.
func boundReason(s string) string {
	return untrustedText(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' {
			return ' '
		}
		return r
	}, s), state.MaxDeadReason)
}

// DeadLetterKey is the incident key of a spore's dead letter: its
// mycologist is summoned once per entry.
func DeadLetterKey(spore, entry string) string { return "dead-letter:" + spore + ":" + entry }

// buried is one entry the commit made a dead letter.
type buried struct {
	spore  state.Spore
	entry  string
	reason string
}

// bury makes d's entry a dead letter inside tx and returns its event;
// ok is false when the entry was no longer queued (an overlapping pass
// delivered or buried it, or a person dropped it): nothing is written.
func bury(ctx context.Context, tx state.Tx, id string, d Delivery, now time.Time) (ev state.Event, ok bool, err error) {
	err = tx.Bury(ctx, id, d.Entry.ID, state.DeadLetter{Reason: d.Dead, At: now})
	switch {
	case errors.Is(err, state.ErrNotFound):
		return state.Event{}, false, nil
	case err != nil:
		return state.Event{}, false, fmt.Errorf("make %s of %s a dead letter: %w", d.Entry.ID, id, err)
	}
	return state.Event{Kind: state.KindLifecycle, Action: "dead-letter", At: now, Text: fmt.Sprintf(
		"prompt %s refused for good (%s): moved to the dead letters; the queue goes on. `sporectl outbox %s` lists it, `sporectl outbox drop %s %s` drops it",
		d.Entry.ID, d.Dead, id, id, d.Entry.ID)}, true, nil
}

// deadLetterSummons summons, inside tx, the mycologist one rank up from
// each spore that got a dead letter (policy.Above): its colony
// mycologist, or the [arch] when the colony has none or the spore is its
// colony mycologist; once per entry (DeadLetterKey). The [arch], with no
// one above it, is not summoned about its own.
func deadLetterSummons(ctx context.Context, tx state.Tx, dead []buried, now time.Time) error {
	if len(dead) == 0 {
		return nil
	}
	myc, err := readMycologists(ctx, tx)
	if err != nil {
		return err
	}
	var out summonses
	for _, b := range dead {
		out.add(policy.Above(b.spore, myc, false), Summons{Key: DeadLetterKey(b.spore.ID, b.entry), By: b.spore.ID, Kind: "dead letter", At: now, Text: fmt.Sprintf(
			"Dead letter: a message to spore %s (entry %s) was refused by its bridge for good (%s) and moved out of its outbox; what was queued behind it is delivered. "+
				"Look: `mycologist spore %s`; a person lists it with `sporectl outbox %s`. No answer is expected.",
			b.spore.ID, b.entry, b.reason, b.spore.ID, b.spore.ID)})
	}
	return out.send(ctx, tx, now)
}
