package mycelia

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/outbox"
	"github.com/sporectl/sporectl/reconcile/transcript"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

func (s *Server) healthz(c *call) (int, any, error) {
	err := s.Store.View(c.ctx(), func(tx state.Tx) error {
		_, err := tx.Settings(c.ctx())
		return err
	})
	if err != nil {
		s.logger().Warn("healthz: store not readable", "err", err)
		return 0, nil, errorf(http.StatusServiceUnavailable, CodeUnavailable, "the store is not readable")
	}
	return http.StatusOK, map[string]bool{"ok": true}, nil
}

// summons: POST /api/mycologist/summons — ask the mycologist one rank up,
// waking it if it sleeps.
func (s *Server) summons(c *call) (int, any, error) {
	var req AskRequest
	err := decodeBody(c.w, c.r, &req)
	if err != nil {
		return 0, nil, err
	}
	if err := checkText("text", req.Text); err != nil {
		return 0, nil, err
	}
	all, err := s.allSpores(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	to, err := Above(c.caller, all)
	if err != nil {
		return 0, nil, err
	}
	return s.send(c, to.ID, summonsLetter(c.caller), req.Text, true, nil)
}

// tell: POST /spores/{id}/prompt — a mycologist to a spore in its reach.
//
// Reach is judged on the target as the send's transaction reads it
// (outbox.Once.Check): a tell reads its target's record there and in its
// delivery pass's commit, nowhere else. A refusal met before the send
// (the body, the text, the address) is answered once reach has had its
// say (reachFirst), so every answer is the one reach judged first gave.
func (s *Server) tell(c *call) (int, any, error) {
	if err := state.ValidateID(c.id); err != nil {
		return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	}
	var req TellRequest
	if err := decodeBody(c.w, c.r, &req); err != nil {
		return 0, nil, s.reachFirst(c, err)
	}
	if err := checkText("text", req.Text); err != nil {
		return 0, nil, s.reachFirst(c, err)
	}
	checked := "forced"
	if !req.Force {
		v, err := s.checkAddress(c, req.Text)
		if err != nil {
			return 0, nil, s.reachFirst(c, err)
		}
		if v.Misaddressed {
			return 0, nil, s.reachFirst(c, misaddressed(c.id, v))
		}
		checked = v.By
	}
	reach := func(sp state.Spore, found bool) error {
		if !found {
			return outOfReach(c.id)
		}
		return reached(c, sp, nil)
	}
	status, body, err := s.send(c, c.id, tellLetter(c.caller, c.id), req.Text, req.Wake, reach)
	if res, ok := body.(SendResponse); ok {
		res.AddressCheck = checked
		body = res
	}
	return status, body, err
}

// swarmTell: POST /api/swarm/tell — to a teammate by role. It has no
// wake: a sleeping teammate is woken only as any message wakes one (idle
// put it to sleep and its colony wakes on a message, outbox's
// admission), never one a person put to sleep (docs/sleep.md); a
// mycologist that means to wake it tells it with wake.
func (s *Server) swarmTell(c *call) (int, any, error) {
	var req SwarmTellRequest
	err := decodeBody(c.w, c.r, &req)
	if err != nil {
		return 0, nil, err
	}
	if err := checkName("role", req.Role); err != nil {
		return 0, nil, err
	}
	if err := checkText("text", req.Text); err != nil {
		return 0, nil, err
	}
	all, err := s.allSpores(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	to, err := Teammate(c.caller, req.Role, all)
	if err != nil {
		return 0, nil, err
	}
	return s.send(c, to.ID, swarmLetter(c.caller), req.Text, false, nil)
}

// swarmLoop: POST /api/swarm/loop — the [swarm] mycologist starts,
// changes or ends its own loop: a prompt every interval, due times in its
// record, recorded and delivered by reconcile (reconcile/upkeep.go).
func (s *Server) swarmLoop(c *call) (int, any, error) {
	var req LoopRequest
	if err := decodeBody(c.w, c.r, &req); err != nil {
		return 0, nil, err
	}
	var every time.Duration
	switch {
	case req.Stop && req.Every != "":
		return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "give every or stop, not both")
	case !req.Stop:
		d, err := time.ParseDuration(req.Every)
		if err != nil || d < time.Duration(state.MinLoop) || d > time.Duration(state.MaxLoop) {
			return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "every must be a duration such as 30m, from %s to %s (or stop: true)", state.MinLoop, state.MaxLoop)
		}
		every = d
	}
	now := s.now().UTC()
	var res LoopResponse
	err := s.Store.Update(c.ctx(), func(tx state.Tx) error {
		// A loop is the caller's own wish: its rule and its write are wish's.
		sp, _, err := wish.SetLoop(c.ctx(), tx, c.caller.ID, every, From(c.caller), now)
		if err != nil {
			return err
		}
		res = LoopResponse{Spore: sp.ID, Due: state.Stamp(sp.LoopDue)}
		if sp.Loop > 0 {
			res.Every = sp.Loop.String()
		}
		return nil
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record the swarm loop of %s: %w", c.caller.ID, err)
	}
	return http.StatusOK, res, nil
}

// swarmCompact: POST /api/swarm/compact — the [swarm] mycologist compacts
// a teammate's context through its bridge.
func (s *Server) swarmCompact(c *call) (int, any, error) {
	var req CompactRequest
	if err := decodeBody(c.w, c.r, &req); err != nil {
		return 0, nil, err
	}
	if err := checkName("role", req.Role); err != nil {
		return 0, nil, err
	}
	all, err := s.allSpores(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	to, err := Teammate(c.caller, req.Role, all)
	if err != nil {
		return 0, nil, err
	}
	if to.Desired != state.Running {
		return 0, nil, errorf(http.StatusConflict, CodeAsleep, "spore %s is asleep (desired %s): there is nothing to compact", to.ID, to.Desired)
	}
	a, err := s.Pass.Compact(c.ctx(), to.ID)
	if err != nil {
		s.logger().Info("compact failed", "spore", to.ID, "err", err)
		return 0, nil, errorf(http.StatusConflict, CodeNotUp, "the bridge of spore %s did not take the compact (is it up?); try again when `mycologist spores` shows it Healthy", to.ID)
	}
	err = s.Store.Update(c.ctx(), func(tx state.Tx) error {
		_, err := tx.Append(c.ctx(), to.ID, []state.Event{{Kind: state.KindLifecycle, Action: "compact", From: From(c.caller), At: s.now(),
			Text: fmt.Sprintf("context compaction requested by the [swarm] mycologist %s (bridge prompt %s)", c.caller.ID, a.ID)}})
		return err
	})
	if err != nil {
		return 0, nil, fmt.Errorf("record the compaction of %s: %w", to.ID, err)
	}
	return http.StatusAccepted, CompactResponse{To: to.ID, ID: a.ID, Position: a.Position}, nil
}

// spores: GET /api/spores — every spore in reach, with effective health
// and each one's last event time, from one fleet read shared by the
// lists of every caller asking within SporesShare (sporesFleet), filtered
// by this caller's reach.
func (s *Server) spores(c *call) (int, any, error) {
	f, err := s.sporesFleet(c.ctx())
	if err != nil {
		return 0, nil, err
	}
	b, err := f.answerFor(c.caller)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, b, nil
}

// spore: GET /api/spores/{id}?turns=N — the last turns of one spore in
// reach, as text, from the store (after ingesting what its bridge has).
func (s *Server) spore(c *call) (int, any, error) {
	to, err := s.reachable(c)
	if err != nil {
		return 0, nil, err
	}
	turns := DefaultTurns
	q := c.r.URL.Query()
	if v, ok := q["turns"]; ok {
		n, err := strconv.Atoi(strings.Join(v, ","))
		if err != nil || n < 1 || n > MaxTurns {
			return 0, nil, errorf(http.StatusBadRequest, CodeBadRequest, "turns must be a number from 1 to %d", MaxTurns)
		}
		turns = n
	}
	out, err := s.Pass.Run(c.ctx(), reconcile.Options{IDs: []string{to.ID}})
	if err != nil {
		return 0, nil, err
	}
	if out.Missing != nil {
		return 0, nil, out.Missing
	}
	var evs []state.Event
	err = s.Store.View(c.ctx(), func(tx state.Tx) error {
		var err error
		evs, err = lastTurns(c.ctx(), tx, to.ID, turns)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	res := SporeTurns{ID: to.ID, Desired: string(to.Desired)}
	if len(out.Spores) == 1 {
		res.Desired, res.Effective = string(out.Spores[0].Desired), string(out.Spores[0].Effective)
	}
	for _, ev := range evs {
		if isTurnStart(ev) {
			res.Turns++
		}
	}
	var buf bytes.Buffer
	if err := transcript.WriteText(&buf, evs, transcript.TextOptions{Timestamps: true}); err != nil {
		return 0, nil, err
	}
	text := buf.String()
	if len(text) > MaxTurnsText {
		cut := len(text) - MaxTurnsText
		if nl := strings.IndexByte(text[cut:], '\n'); nl >= 0 {
			cut += nl + 1
		}
		text, res.Cut = text[cut:], true
	}
	res.Text = text
	if len(evs) > 0 {
		res.FirstSeq, res.LastSeq = evs[0].Seq, evs[len(evs)-1].Seq
	}
	return http.StatusOK, res, nil
}

// reachable is the route's {id} spore when the caller reaches it. An id
// out of reach and one that does not exist get the same 403.
func (s *Server) reachable(c *call) (state.Spore, error) {
	if err := state.ValidateID(c.id); err != nil {
		return state.Spore{}, errorf(http.StatusBadRequest, CodeBadRequest, "%v", err)
	}
	to, err := c.target.sp, c.target.err
	if c.target.id != c.id {
		err = s.Store.View(c.ctx(), func(tx state.Tx) error {
			var err error
			to, err = tx.Spore(c.ctx(), c.id)
			return err
		})
	}
	if err := reached(c, to, err); err != nil {
		return state.Spore{}, err
	}
	return to, nil
}

// reached is reach's answer on the route's {id} spore as read (err: the
// read's error): nil when the caller reaches it; the same 403 for one
// out of reach and one that does not exist; another error as it is.
func reached(c *call, to state.Spore, err error) error {
	switch {
	case err == nil && Reaches(c.caller, to):
		return nil
	case err == nil, errors.Is(err, state.ErrNotFound):
		return outOfReach(c.id)
	}
	return err
}

// reachFirst is the answer to a request refused before its send: reach's
// refusal when the caller does not reach the route's {id} spore (read
// now: a refusal's cost), else refusal.
func (s *Server) reachFirst(c *call, refusal error) error {
	if _, err := s.reachable(c); err != nil {
		return err
	}
	return refusal
}

// send records the caller's text framed by l (once per request id) and
// delivers it now when the target is up; a target it woke is followed in
// the background. check, when not nil, judges the target as the send's
// transaction reads it, first (outbox.Once.Check).
func (s *Server) send(c *call, to string, l letter, text string, wake bool, check func(sp state.Spore, found bool) error) (int, any, error) {
	id := messageID(c.caller.ID, to, c.requestID)
	m := outbox.Message{To: to, From: From(c.caller), Kind: state.KindMessage, Mark: l.mark, Text: text, Note: l.note, Wake: wake}
	// The delivery pass's snapshot is read in the send's transaction, on
	// the record the send read: that pass reads the target's record only
	// in its commit.
	var snap *reconcile.Snapshot
	// It may share its transaction with the sends arriving meanwhile
	// (sendgroup.go).
	sent, err := s.sendOnce(c.ctx(), m, outbox.Once{ID: id, Window: DedupWindow, KeepStopped: true,
		Sender: c.caller.ID, Limit: s.RateLimit, Per: s.ratePer(), Check: check,
		Then: func(ctx context.Context, tx state.Tx, sp state.Spore) (err error) {
			snap, err = reconcile.LoadIn(ctx, tx, sp)
			return err
		}})
	if err != nil {
		return 0, nil, err
	}
	Failpoint("committed")
	if sent.Held != "" {
		// Recorded and kept: it waits for the target's budget.
		return 0, nil, errorf(http.StatusConflict, CodeOverBudget, "spore %s is over budget (%s): the message %s is queued and is delivered the next UTC day or once its budget is raised", to, sent.Held, id)
	}
	res := SendResponse{ID: id, To: to, Woke: sent.Woke, Duplicate: sent.Duplicate, State: Delivered}
	if !sent.Pending {
		return http.StatusAccepted, res, nil
	}
	// A woken target is started now, whatever its backoff, as `prompt
	// --wake` does; so is one a repeated request had woken.
	start := sent.Woke || (sent.Duplicate && sent.Entry.Wake)
	d, err := s.Pass.DeliverFrom(c.ctx(), snap, sent.Entry, start, 0)
	if err != nil {
		// Recorded: the next pass delivers it. Not the caller's failure.
		s.logger().Warn("deliver now failed; left in the outbox", "message", id, "spore", to, "err", err)
		d = reconcile.DeliveryResult{State: Waiting, Detail: "left in the outbox; the next reconcile delivers it"}
	}
	res.State, res.Position, res.Detail = d.State, d.Position, d.Detail
	if d.State == Waiting && start {
		s.follow(sent.Entry)
	}
	return http.StatusAccepted, res, nil
}

// follow delivers e in the background once its woken target is up, for
// at most FollowWoken. It stops as soon as e has left the outbox: another
// pass (a retry, a reconcile, another serve) may deliver it first.
func (s *Server) follow(e state.OutboxEntry) {
	if s.Background == nil || s.FollowWoken <= 0 {
		return
	}
	s.followMu.Lock()
	if s.following >= maxFollowers {
		s.followMu.Unlock()
		return
	}
	s.following++
	s.followMu.Unlock()
	s.followers.Go(func() {
		defer func() { s.followMu.Lock(); s.following--; s.followMu.Unlock() }()
		ctx, cancel := context.WithTimeout(s.Background, s.FollowWoken)
		defer cancel()
		for {
			queued, err := s.queued(ctx, e)
			if err != nil || !queued {
				s.logger().Info("background delivery ends", "message", e.ID, "spore", e.Spore, "queued", queued, "err", err)
				return
			}
			d, err := s.Pass.Deliver(ctx, e, false, 0)
			if err == nil && d.State != Waiting {
				s.logger().Info("background delivery", "message", e.ID, "spore", e.Spore, "state", d.State)
				return
			}
			select {
			case <-ctx.Done():
				s.logger().Info("background delivery gives up; the next reconcile delivers it", "message", e.ID, "spore", e.Spore)
				return
			case <-time.After(followEvery):
			}
		}
	})
}

// followEvery is the pause between two background delivery passes.
const followEvery = 250 * time.Millisecond

// queued reports whether e is still in its spore's outbox.
func (s *Server) queued(ctx context.Context, e state.OutboxEntry) (bool, error) {
	var queued bool
	err := s.Store.View(ctx, func(tx state.Tx) error {
		list, err := tx.Outbox(ctx, e.Spore)
		for _, x := range list {
			queued = queued || x.ID == e.ID
		}
		return err
	})
	return queued, err
}

// allSpores reads every spore record.
func (s *Server) allSpores(ctx context.Context) ([]state.Spore, error) {
	var all []state.Spore
	err := s.Store.View(ctx, func(tx state.Tx) error {
		var err error
		all, err = tx.Spores(ctx)
		// A damaged record is left out: it is nobody's to see until it
		// is repaired, and the rest of the fleet is still seen.
		_, err = state.Damaged(err)
		return err
	})
	return all, err
}

// isTurnStart: a turn begins with a prompt or a message.
func isTurnStart(ev state.Event) bool {
	return ev.Kind == state.KindPrompt || ev.Kind == state.KindMessage
}

// maxTurnEvents bounds how far back lastTurns reads.
const maxTurnEvents = 20000

// lastTurns is the spore's log from the start of its n-th last turn (or
// as far back as maxTurnEvents), read from the end.
func lastTurns(ctx context.Context, tx state.Tx, id string, n int) ([]state.Event, error) {
	for size := 256; ; size *= 8 {
		size = min(size, maxTurnEvents)
		evs, err := tx.Tail(ctx, id, size)
		if err != nil {
			return nil, err
		}
		seen := 0
		for i := len(evs) - 1; i >= 0; i-- {
			if isTurnStart(evs[i]) {
				if seen++; seen == n {
					return evs[i:], nil
				}
			}
		}
		if len(evs) < size || size == maxTurnEvents {
			return evs, nil
		}
	}
}
