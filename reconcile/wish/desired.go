package wish

import (
	"context"
	"fmt"
	"time"

	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/state"
)

// ArchFrom is the sender of the wake the [arch]'s rule records.
const ArchFrom = "sporectl:arch-always-on"

// RefusedError is a wish the rules refuse (an [arch] put to sleep, a
// [swarm] mycologist without a swarm); nothing was written for it. The
// CLI reports it as a usage error.
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }

// verbs is the event action of each desired state a person asks for.
var verbs = map[state.Desired]string{state.Running: "wake", state.Paused: "sleep", state.Stopped: "stop"}

// Wake records that a person wants spore id running (see Set).
func Wake(ctx context.Context, tx state.Tx, id string, now time.Time) error {
	return Set(ctx, tx, id, state.Running, now)
}

// Sleep records that a person wants spore id asleep: desired Paused (see Set).
func Sleep(ctx context.Context, tx state.Tx, id string, now time.Time) error {
	return Set(ctx, tx, id, state.Paused, now)
}

// Stop records that a person wants spore id stopped until woken (see Set).
func Stop(ctx context.Context, tx state.Tx, id string, now time.Time) error {
	return Set(ctx, tx, id, state.Stopped, now)
}

// Set records desired d for spore id as `wake`, `sleep` or `stop` asks
// it: when it changes, the record with a new generation and a lifecycle
// event (its action the verb, "desired Paused → Running"); nothing when
// the spore wants d already. An [arch] mycologist is refused anything but
// Running with *RefusedError (reconcile would wake it again at once,
// docs/mycologists.md); an id that does not exist is state.ErrNotFound.
func Set(ctx context.Context, tx state.Tx, id string, d state.Desired, now time.Time) error {
	verb, ok := verbs[d]
	if !ok {
		return fmt.Errorf("record desired %q for %s: not a desired state", d, id)
	}
	sp, err := tx.Spore(ctx, id)
	if err != nil {
		return err
	}
	if policy.AlwaysOn(sp) && d != state.Running {
		return &RefusedError{Msg: fmt.Sprintf("%s %s: spore %s is the [arch] mycologist, which is always on: it cannot be put to sleep or stopped (nothing was changed)", verb, id, id)}
	}
	if sp.Desired == d && sp.DesiredBy == state.ByPerson {
		return nil
	}
	// A spore idle put to sleep that a person puts to sleep is theirs
	// from now on: a message no longer wakes it (docs/sleep.md).
	_, _, err = desire(ctx, tx, sp, d, verb, "", "", now)
	return err
}

// WakeToDeliver wakes sp, as read in tx, so that the message entryID can
// be delivered: desired Running, a new generation and a "wake" event
// saying why. A spore that wants to run already is left alone. It
// reports whether it woke sp; the caller decides whether a message may
// wake its target at all.
func WakeToDeliver(ctx context.Context, tx state.Tx, sp state.Spore, entryID string, now time.Time) (bool, error) {
	if sp.Desired == state.Running {
		return false, nil
	}
	_, _, err := desire(ctx, tx, sp, state.Running, "wake", "", ", to deliver "+entryID, now)
	return err == nil, err
}

// ArchAsleep reports whether sp is an [arch] mycologist not wished awake,
// which KeepArchOn corrects.
func ArchAsleep(sp state.Spore) bool {
	return policy.AlwaysOn(sp) && sp.Desired != state.Running
}

// KeepArchOn keeps the rule that the [arch] mycologist is always on: for
// sp, as read in tx, an [arch] with a desired state other than Running,
// it records desired Running (a new generation, a "wake" event from
// ArchFrom). It returns the record as written and the event's sequence
// number; sp unchanged and 0 when the rule holds already.
func KeepArchOn(ctx context.Context, tx state.Tx, sp state.Spore, now time.Time) (state.Spore, uint64, error) {
	if !ArchAsleep(sp) {
		return sp, 0, nil
	}
	return desire(ctx, tx, sp, state.Running, "wake", ArchFrom, ": the [arch] mycologist is always on", now)
}

// desire writes sp with desired d, set by a person (DesiredBy cleared),
// and a new generation, and its lifecycle event ("desired X → d" and
// why). It returns the record as written and the event's sequence number.
func desire(ctx context.Context, tx state.Tx, sp state.Spore, d state.Desired, action, from, why string, now time.Time) (state.Spore, uint64, error) {
	return desireBy(ctx, tx, sp, d, state.ByPerson, action, from, why, now)
}

// desireBy is desire with who set d (DesiredBy).
func desireBy(ctx context.Context, tx state.Tx, sp state.Spore, d state.Desired, by state.DesiredBy, action, from, why string, now time.Time) (state.Spore, uint64, error) {
	prev := sp.Desired
	sp.Desired, sp.DesiredBy = d, by
	bump(&sp, now)
	if err := tx.PutWish(ctx, sp.Wish); err != nil {
		return sp, 0, err
	}
	evs, err := tx.Append(ctx, sp.ID, []state.Event{{Kind: state.KindLifecycle, Action: action, From: from, At: now,
		Text: fmt.Sprintf("desired %s → %s", prev, d) + why}})
	if err != nil {
		return sp, 0, err
	}
	return sp, evs[len(evs)-1].Seq, nil
}

// bump marks sp's wish as changed at now. It is the one place a
// generation grows (see the package doc); the store refuses a wish that
// does not grow it.
func bump(sp *state.Spore, now time.Time) {
	sp.Generation++
	sp.Updated = now
}
