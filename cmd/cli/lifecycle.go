package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/reconcile/policy"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

// lifecycleOptions serve wake, sleep and stop: each records the new
// desired state (with an event, and a new generation: wish.Set) in one
// transaction, then runs the pass over the named spores, which makes the
// runtime match it. If the runtime step fails the desired state stays
// recorded, so the next command (or reconcile) carries on from it.
type lifecycleOptions struct {
	f       *Factory
	verb    string
	desired state.Desired
	action  string // event action and printed result
	IDs     []string
	Targets targetFlags
	Wait    time.Duration
}

func newCmdWake(f *Factory, runF func(context.Context, *lifecycleOptions) error) *cobra.Command {
	o := &lifecycleOptions{f: f, verb: "wake", desired: state.Running, action: "woken"}
	cmd := newLifecycleCmd(o, "Wake spores: desired Running, and start them now", runF)
	cmd.Flags().DurationVar(&o.Wait, "wait", 0, "wait up to this long for each spore's bridge to answer (0: return once started)")
	return cmd
}

func newCmdSleep(f *Factory, runF func(context.Context, *lifecycleOptions) error) *cobra.Command {
	return newLifecycleCmd(&lifecycleOptions{f: f, verb: "sleep", desired: state.Paused, action: "asleep"},
		"Put spores to sleep: desired Paused; their processes end, their homes stay", runF)
}

func newCmdStop(f *Factory, runF func(context.Context, *lifecycleOptions) error) *cobra.Command {
	return newLifecycleCmd(&lifecycleOptions{f: f, verb: "stop", desired: state.Stopped, action: "stopped"},
		"Stop spores until a person wakes them: desired Stopped; homes stay", runF)
}

// newLifecycleCmd builds wake, sleep or stop; runF, when not nil, is
// called instead of running it (tests of what the flags parse into).
func newLifecycleCmd(o *lifecycleOptions, short string, runF func(context.Context, *lifecycleOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   o.verb + " (ID... | -l SELECTOR | --all)",
		Short: short,
		Args:  sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			if o.Wait < 0 {
				return usageErrorf("invalid value %s for --wait: must be 0 or more", o.Wait)
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
	addTargetFlags(cmd, &o.Targets)
	return cmd
}

func (o *lifecycleOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var ok bool
	if o.IDs, ok, err = resolveTargets(ctx, o.f, st, o.IDs, o.Targets); err != nil || !ok {
		return err
	}
	changed, err := setDesired(ctx, st, o.IDs, o.desired, o.f.Now().UTC())
	if err != nil {
		return err
	}
	opt := reconcile.Options{IDs: o.IDs, Heal: true}
	if o.desired == state.Running {
		// A person asked: now, whatever the backoff timer says.
		opt.Force = o.IDs
	}
	out, err := o.f.Pass(st).Run(ctx, opt)
	if err != nil {
		return err
	}
	if out.Missing != nil {
		// Deleted between recording the wish and the pass.
		return fmt.Errorf("%s: %w", o.verb, out.Missing)
	}
	if out.ObserveErr != nil {
		return &RuntimeError{Op: fmt.Sprintf("%s: observe (desired %s is recorded; the next %s retries)", o.verb, o.desired, o.verb), Err: out.ObserveErr}
	}
	var errs []error
	var waiting []string
	res := actionResults{}
	for _, p := range out.Plans {
		id := p.Spore.ID
		if o.desired == state.Running && p.Verdict.Code == reconcile.ReasonOldPodTerminating {
			// Its previous pod is still going away: the new one can only
			// be created once it is gone.
			waiting = append(waiting, id)
		}
		switch {
		case errors.Is(p.StartErr, state.ErrNotFound):
			errs = append(errs, fmt.Errorf("%s %s: deleted meanwhile, nothing started: %w", o.verb, id, p.StartErr))
		case p.StartErr != nil:
			errs = append(errs, &RuntimeError{Op: fmt.Sprintf("%s %s (desired %s is recorded; the next %s retries)", o.verb, id, o.desired, o.verb), Err: p.StartErr})
		case p.StopErr != nil:
			errs = append(errs, &RuntimeError{Op: fmt.Sprintf("%s %s (desired %s is recorded; the next %s retries)", o.verb, id, o.desired, o.verb), Err: p.StopErr})
		case o.desired == state.Running && p.Verdict.Effective == policy.Error:
			errs = append(errs, &UnhealthyError{Msg: fmt.Sprintf("%s %s: desired %s is recorded, but its circuit breaker is open; run 'sporectl reset %s'", o.verb, id, o.desired, id)})
		default:
			action := o.action
			if !changed[id] && !p.Start && !p.Stop {
				// Wished so already, and so already: kubectl apply's word
				// for a no-op.
				action = "unchanged"
			}
			res.Results = append(res.Results, actionResult{Kind: "spore", ID: id, Action: action})
			if o.desired == state.Running && p.Observed.Exited && p.Observed.Message != "" {
				// Woken again after its bridge died saying why: the person
				// should hear it now, not only from status.
				fmt.Fprintf(o.f.IO.ErrOut, "warning: the bridge of %s had exited: %s (see 'sporectl logs --previous %s')\n", id, p.Observed.Message, id)
			}
		}
	}
	if len(res.Results) > 0 {
		if err := o.f.Print(res); err != nil {
			return err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if o.Wait > 0 {
		return waitUp(ctx, o.f, st, o.IDs, waiting, o.Wait)
	}
	for _, id := range waiting {
		fmt.Fprintf(o.f.IO.ErrOut, "note: the old pod of %s is still terminating; its new pod is started once it is gone (by the next reconcile, or 'sporectl wake --wait' waits for it)\n", id)
	}
	return nil
}

// setDesired records a new wish for ids in one transaction (package
// wish writes it: desired state, a new generation, a lifecycle event
// where it changed) and says of which ids it changed the wish (a new
// generation). Every id must exist, or nothing is written.
func setDesired(ctx context.Context, st state.Store, ids []string, desired state.Desired, now time.Time) (map[string]bool, error) {
	var changed map[string]bool
	err := st.Update(ctx, func(tx state.Tx) error {
		changed = make(map[string]bool, len(ids)) // a retried transaction starts afresh
		for _, id := range ids {
			before, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			if err := wish.Set(ctx, tx, id, desired, now); err != nil {
				return err
			}
			after, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			changed[id] = after.Generation != before.Generation
		}
		return nil
	})
	return changed, err
}

// waitUp runs passes over ids until every one's bridge answers, or
// timeout. They are read-only, but for the spores in waiting, whose old
// pod was still terminating: those get healing passes (forced, as the
// wake was), which start the new pod as soon as the old one is gone,
// until they are no longer waiting on it.
func waitUp(ctx context.Context, f *Factory, st state.Store, ids, waiting []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		spores, still, err := waitPass(ctx, f, st, ids, waiting)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		waiting = still
		if err := exitedBridges(spores); err != nil {
			// Dead already: waiting longer would only say less.
			return err
		}
		if err := agentsThatCannotStart(spores); err != nil {
			// Up, but its agent cannot run: up is not what was asked.
			return err
		}
		if !slices.ContainsFunc(spores, func(s reconcile.SporeHealth) bool { return s.Observed.Bridge != reconcile.BridgeUp }) {
			return nil
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
			continue
		}
		break
	}
	if err := context.Cause(ctx); !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return &UnhealthyError{Msg: fmt.Sprintf("bridges not answering after %s; see 'sporectl status'", timeout)}
}

// waitPass is one round of waitUp: a healing pass over the spores in
// waiting, a read-only one over the others. still are those whose old pod
// is still terminating.
func waitPass(ctx context.Context, f *Factory, st state.Store, ids, waiting []string) (spores []reconcile.SporeHealth, still []string, err error) {
	if len(waiting) > 0 {
		out, err := f.Pass(st).Run(ctx, reconcile.Options{IDs: waiting, Heal: true, Force: waiting})
		if err != nil {
			return nil, waiting, err
		}
		for _, p := range out.Plans {
			if p.StartErr != nil {
				return nil, nil, &RuntimeError{Op: fmt.Sprintf("wake %s: start once its old pod was gone (desired Running is recorded; the next wake retries)", p.Spore.ID), Err: p.StartErr}
			}
		}
		for _, s := range out.Spores {
			if s.Code == reconcile.ReasonOldPodTerminating {
				still = append(still, s.ID)
			}
		}
		spores = out.Spores
	}
	var rest []string
	for _, id := range ids {
		if !slices.Contains(waiting, id) {
			rest = append(rest, id)
		}
	}
	if len(rest) == 0 {
		return spores, still, nil
	}
	out, err := f.Pass(st).Run(ctx, reconcile.Options{IDs: rest})
	if err != nil {
		return nil, still, err
	}
	return append(spores, out.Spores...), still, nil
}

// exitedBridges is the runtime error (exit 9) of the spores whose bridge
// exited instead of coming up, each with the bridge's own reason when it
// gave one; nil when none did.
func exitedBridges(spores []reconcile.SporeHealth) error {
	var errs []error
	for _, s := range spores {
		if s.Observed.Bridge == reconcile.BridgeUp || !s.Observed.Exited {
			continue
		}
		why := string(s.Observed.LastTermination)
		if s.Observed.Message != "" {
			why = s.Observed.Message
		}
		errs = append(errs, &RuntimeError{Op: fmt.Sprintf("wake %s: its bridge exited at start", s.ID),
			Err: fmt.Errorf("%s (see 'sporectl logs %s')", cmp.Or(why, "no reason given"), s.ID)})
	}
	return errors.Join(errs...)
}

// agentsThatCannotStart is the runtime error (exit 9) of the spores whose
// bridge answers but says its agent's last start failed, each with the
// bridge's words; nil when none does.
func agentsThatCannotStart(spores []reconcile.SporeHealth) error {
	var errs []error
	for _, s := range spores {
		if s.Observed.Bridge != reconcile.BridgeUp || s.Observed.AgentError == "" {
			continue
		}
		errs = append(errs, &RuntimeError{Op: fmt.Sprintf("wake %s: its bridge is up but its agent cannot start", s.ID),
			Err: fmt.Errorf("%s (see 'sporectl logs %s')", s.Observed.AgentError, s.ID)})
	}
	return errors.Join(errs...)
}
