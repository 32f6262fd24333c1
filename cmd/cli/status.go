package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/reconcile"
	"github.com/sporectl/sporectl/state"
)

type statusOptions struct {
	f   *Factory
	IDs []string
}

func newCmdStatus(f *Factory) *cobra.Command {
	o := &statusOptions{f: f}
	cmd := &cobra.Command{
		Use:   "status [ID...]",
		Short: "Show desired, observed and effective health per spore",
		Long: `Show each spore's desired state, what is observed of it right now (its pod or
process tree, its bridge, the agent's activity), and the effective health that
follows (docs/health.md). Nothing observed is stored.

Exits 3 when any spore shown is Dead, Diverged, Suspect, Blocked or Error,
or when the runtime holds objects marked as sporectl's whose spore is not in
the store (orphans: listed, never removed by status).`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return sporeIDs(-1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			o.IDs = args
			return o.run(cmd.Context())
		},
	}
	return cmd
}

func (o *statusOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	var out statusList
	var missing []error
	err = st.View(ctx, func(tx state.Tx) error {
		var spores []state.Spore
		if len(o.IDs) == 0 {
			var err error
			if spores, err = tx.Spores(ctx); err != nil {
				return err
			}
		} else {
			for _, id := range o.IDs {
				s, err := tx.Spore(ctx, id)
				if errors.Is(err, state.ErrNotFound) {
					missing = append(missing, err)
					continue
				}
				if err != nil {
					return err
				}
				spores = append(spores, s)
			}
		}
		heads, err := tx.Heads(ctx)
		if err != nil {
			return err
		}
		out.Spores = make([]sporeStatus, 0, len(spores))
		for _, s := range spores {
			out.Spores = append(out.Spores, sporeStatus{
				ID: s.ID, Colony: s.Colony, Rank: s.Rank, Desired: s.Desired,
				LastSeq: heads[s.ID].LastSeq, breaker: s.BreakerOpen,
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	orphans, obsErr := o.observe(ctx, st, out.Spores)
	if len(o.IDs) == 0 {
		// Only a whole-fleet status can tell an orphan from a spore it
		// was not asked about.
		out.Orphans = orphans
	}
	if err := o.f.Print(out); err != nil {
		return err
	}
	if len(out.Orphans) > 0 {
		fmt.Fprintf(o.f.IO.ErrOut, "warning: %d runtime object(s) carry sporectl's marks but no spore in the store has their id: %s (remove with 'sporectl delete --orphan ID')\n",
			len(out.Orphans), strings.Join(out.Orphans, ", "))
	}
	if len(missing) > 0 {
		return fmt.Errorf("status: %w", errors.Join(missing...))
	}
	if obsErr != nil {
		return &UnhealthyError{Msg: "status: observation failed: " + obsErr.Error()}
	}
	bad := 0
	for _, s := range out.Spores {
		if s.Effective == nil || !reconcile.Effective(*s.Effective).OK() {
			bad++
		}
	}
	if bad > 0 || len(out.Orphans) > 0 {
		return &UnhealthyError{Msg: fmt.Sprintf("%d of %d spores need attention, %d orphan(s)", bad, len(out.Spores), len(out.Orphans))}
	}
	return nil
}

// observe fills observed and effective health. When the runtime cannot be
// observed every spore is Unknown and Suspect, and the error is returned
// after the table is printed.
func (o *statusOptions) observe(ctx context.Context, st state.Store, spores []sporeStatus) ([]string, error) {
	ids := make([]string, len(spores))
	for i, s := range spores {
		ids[i] = s.ID
	}
	var observed map[string]reconcile.Observed
	var orphans []string
	rt, err := o.f.Runtime(ctx, st)
	if err == nil {
		observed, orphans, err = reconcile.Observe(ctx, rt, ids)
	}
	for i := range spores {
		s := &spores[i]
		obs, ok := observed[s.ID]
		if err != nil || !ok {
			obs = reconcile.Observed{Pod: reconcile.PodUnknown, Bridge: reconcile.BridgeUnknown, Reason: "ObservationFailed"}
		}
		eff, reason := reconcile.Health(s.Desired, obs, s.breaker)
		e := string(eff)
		s.Observed, s.Effective, s.Reason = &obs, &e, reason
	}
	return orphans, err
}

// sporeStatus is one entry of `status -o json` (DESIGN "Commands").
type sporeStatus struct {
	ID        string              `json:"id"`
	Colony    string              `json:"colony"`
	Rank      state.Rank          `json:"rank"`
	Desired   state.Desired       `json:"desired"`
	Observed  *reconcile.Observed `json:"observed"`
	Effective *string             `json:"effective"`
	Reason    string              `json:"reason"`
	LastSeq   uint64              `json:"last_seq"`
	breaker   bool
}

type statusList struct {
	Spores []sporeStatus `json:"spores"`
	// Orphans are ids of runtime objects marked as sporectl's with no
	// spore in the store (whole-fleet status only).
	Orphans []string `json:"orphans,omitempty"`
}

func (l statusList) Table(wide bool) ([]string, [][]string) {
	h := []string{"ID", "COLONY", "RANK", "DESIRED", "OBSERVED", "EFFECTIVE", "LAST-SEQ", "REASON"}
	rows := make([][]string, 0, len(l.Spores))
	for _, s := range l.Spores {
		obs, eff := "-", "-"
		if s.Observed != nil {
			obs = string(s.Observed.Pod) + "/" + string(s.Observed.Bridge)
			if s.Observed.Activity != "" {
				obs += "/" + s.Observed.Activity
			}
		}
		if s.Effective != nil {
			eff = *s.Effective
		}
		rows = append(rows, []string{s.ID, s.Colony, string(s.Rank), string(s.Desired), obs, eff, strconv.FormatUint(s.LastSeq, 10), orDash(s.Reason)})
	}
	return h, rows
}

func (l statusList) Names() []string {
	out := make([]string, len(l.Spores))
	for i, s := range l.Spores {
		out[i] = "spore/" + s.ID
	}
	return out
}
