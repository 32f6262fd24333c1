package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

// lifecycleOptions serve wake, sleep and stop: each records the new
// desired state (with an event) in one transaction, then makes the runtime
// match it. If the runtime step fails the desired state stays recorded, so
// the next command (or reconcile) carries on from it.
type lifecycleOptions struct {
	f       *Factory
	verb    string
	desired state.Desired
	action  string // event action and printed result
	IDs     []string
}

func newCmdWake(f *Factory) *cobra.Command {
	return newLifecycleCmd(&lifecycleOptions{f: f, verb: "wake", desired: state.Running, action: "woken"},
		"Wake spores: desired Running, and start them now")
}

func newCmdSleep(f *Factory) *cobra.Command {
	return newLifecycleCmd(&lifecycleOptions{f: f, verb: "sleep", desired: state.Paused, action: "asleep"},
		"Put spores to sleep: desired Paused; their processes end, their homes stay")
}

func newCmdStop(f *Factory) *cobra.Command {
	return newLifecycleCmd(&lifecycleOptions{f: f, verb: "stop", desired: state.Stopped, action: "stopped"},
		"Stop spores until a person wakes them: desired Stopped; homes stay")
}

func newLifecycleCmd(o *lifecycleOptions, short string) *cobra.Command {
	return &cobra.Command{
		Use:   o.verb + " ID...",
		Short: short,
		Args:  sporeIDs(-1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			return o.run(cmd.Context())
		},
	}
}

func (o *lifecycleOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	rt, err := o.f.Runtime(ctx, st)
	if err != nil {
		return err
	}
	now := o.f.Now().UTC()
	spores := map[string]state.Spore{}
	err = st.Update(ctx, func(tx state.Tx) error {
		for _, id := range o.IDs {
			sp, err := tx.Spore(ctx, id)
			if err != nil {
				return err
			}
			if sp.Desired != o.desired {
				prev := sp.Desired
				sp.Desired, sp.Updated = o.desired, now
				if err := tx.UpdateSpore(ctx, sp); err != nil {
					return err
				}
				if _, err := tx.Append(ctx, id, []state.Event{{Kind: state.KindLifecycle, Action: o.verb, At: now,
					Text: fmt.Sprintf("desired %s → %s", prev, o.desired)}}); err != nil {
					return err
				}
			}
			spores[id] = sp
		}
		return nil
	})
	if err != nil {
		return err
	}
	var errs []error
	res := actionResults{}
	for _, id := range o.IDs {
		var err error
		if o.desired == state.Running {
			err = rt.Start(ctx, spores[id], &tokenIssuer{st: st, id: id})
		} else {
			err = rt.Stop(ctx, id)
		}
		if err != nil {
			errs = append(errs, &RuntimeError{Op: fmt.Sprintf("%s %s (desired %s is recorded; the next %s retries)", o.verb, id, o.desired, o.verb), Err: err})
			continue
		}
		res.Results = append(res.Results, actionResult{Kind: "spore", ID: id, Action: o.action})
	}
	if len(res.Results) > 0 {
		if err := o.f.Print(res); err != nil {
			return err
		}
	}
	return errors.Join(errs...)
}

// tokenIssuer gives a starting spore fresh tokens. The runtime asks only
// when it really starts the spore, under its per-spore lock where it has
// one, and the API token's hash is committed before the plaintext leaves
// here: the store always knows the token the spore got. A running spore
// is never asked, so it keeps the tokens its processes read at start.
type tokenIssuer struct {
	st state.Store
	id string
}

func (i *tokenIssuer) Credentials(ctx context.Context) (reconcile.Credentials, error) {
	tok, hash, err := state.NewToken()
	if err != nil {
		return reconcile.Credentials{}, err
	}
	bt, err := bridgeToken()
	if err != nil {
		return reconcile.Credentials{}, err
	}
	err = i.st.Update(ctx, func(tx state.Tx) error { return tx.SetTokenHash(ctx, i.id, hash) })
	if err != nil {
		return reconcile.Credentials{}, fmt.Errorf("record token of %s: %w", i.id, err)
	}
	return reconcile.Credentials{APIToken: tok, BridgeToken: bt}, nil
}

// bridgeToken is a fresh secret for sporectl → bridge calls. It lives only
// in the spore's home (local) or Secret (kube).
func bridgeToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("generate bridge token: %w", err)
	}
	return "sbt_" + base64.RawURLEncoding.EncodeToString(b), nil
}
