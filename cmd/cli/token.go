package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/reconcile/wish"
	"github.com/sporectl/sporectl/state"
)

func newCmdToken(f *Factory) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage spores' API tokens and operators' logins to the page (for serve)",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newCmdTokenRotate(f, nil), newCmdTokenCreate(f, nil), newCmdTokenList(f, nil), newCmdTokenRevoke(f, nil))
	return cmd
}

// Operator tokens are people's logins to the page serve mounts at /ui/
// (docs/security.md "Operator tokens"). The store keeps only their hashes,
// in its settings; the token itself is printed once, by create.

type operatorOptions struct {
	f    *Factory
	Name string
}

// operatorName checks --operator NAME (the id grammar) for create and
// revoke.
func operatorName(cmd *cobra.Command, name string) error {
	if !cmd.Flags().Changed("operator") {
		return usageErrorf("%s needs --operator NAME: only operators' tokens are made and revoked here (a spore gets its token on every start; see token rotate)", cmd.CommandPath())
	}
	if err := state.ValidateName("operator name", name); err != nil {
		return usageErrorf("invalid value %s for --operator: %v", quote.Value(name), err)
	}
	return nil
}

// newCmdTokenCreate builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdTokenCreate(f *Factory, runF func(context.Context, *operatorOptions) error) *cobra.Command {
	o := &operatorOptions{f: f}
	cmd := &cobra.Command{
		Use:   "create --operator NAME",
		Short: "Make an operator's login token for the page (shown only now)",
		Long: `Make a fresh token for operator NAME to log in to the page that serve mounts at
/ui/, and print it on standard output, once: the store keeps only its SHA-256,
so nobody can show it again. Keep it in a password manager; revoke it and make
another if it is lost.

Every page needs a login, loopback callers included; with no operator token
in the store nobody can log in ('sporectl init' makes the first). A name has
one token at a time: revoke it first to replace it (exit 5 otherwise).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := operatorName(cmd, o.Name); err != nil {
				return err
			}
			if f.Global.Output == "name" {
				// -o name prints kind/name only (docs/cli.md): the token,
				// shown once, would be lost with it.
				return usageErrorf("token create -o name would not print the token: use the default output or -o json")
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.create(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Name, "operator", "", "the operator's name (lowercase letters, digits and dashes)")
	return cmd
}

// operatorCreated is what token create prints: the token alone by
// default (so that it can be captured), its name and time with -o json.
type operatorCreated struct {
	Operator string    `json:"operator"`
	Token    string    `json:"token"`
	Created  time.Time `json:"created"`
}

func (r operatorCreated) Table(bool) ([]string, [][]string) { return nil, [][]string{{r.Token}} }
func (r operatorCreated) Names() []string                   { return []string{"operator/" + r.Operator} }

func (o *operatorOptions) create(ctx context.Context) error {
	token, hash, err := state.NewOperatorToken()
	if err != nil {
		return err
	}
	now := o.f.Now().UTC().Truncate(time.Second)
	err = o.updateOperators(ctx, func(ops []state.OperatorToken) ([]state.OperatorToken, error) {
		if slices.ContainsFunc(ops, func(op state.OperatorToken) bool { return op.Name == o.Name }) {
			return nil, fmt.Errorf("operator %s already has a token (revoke it first: sporectl token revoke --operator %s): %w", o.Name, o.Name, state.ErrExists)
		}
		return append(ops, state.OperatorToken{Name: o.Name, Hash: hash, Session: state.SessionHash(state.OperatorSessionKey(token)), Created: now}), nil
	})
	if err != nil {
		return err
	}
	operatorNotice(o.f.IO.ErrOut, o.Name)
	return o.f.Print(operatorCreated{Operator: o.Name, Token: token, Created: now})
}

// operatorNotice is what token create and init say on standard error
// next to a token they print: that it is shown once, and how to log in.
func operatorNotice(w io.Writer, name string) {
	fmt.Fprintf(w, "operator/%s created. Its token is shown only now and cannot be shown again: keep it in a password manager.\n", name)
	fmt.Fprintf(w, "Log in to the page with it: run 'sporectl serve' and open http://%s/ui/ (or the address serve names).\n", defaultServeAddr)
}

// newCmdTokenRevoke builds the command; runF, when not nil, is called instead of
// running it (tests of what the flags parse into).
func newCmdTokenRevoke(f *Factory, runF func(context.Context, *operatorOptions) error) *cobra.Command {
	o := &operatorOptions{f: f}
	cmd := &cobra.Command{
		Use:   "revoke --operator NAME",
		Short: "Revoke an operator's login token: it and every session made with it stop working now",
		Long: `Remove operator NAME's token from the store. The page refuses it from then on,
and every session cookie it made ends at its next request, on every serve
replica (a session proves a key derived from the token, checked against the
store). Exit 4 if NAME has none.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := operatorName(cmd, o.Name); err != nil {
				return err
			}
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.revoke(cmd.Context())
		},
	}
	cmd.Flags().StringVar(&o.Name, "operator", "", "the operator's name")
	return cmd
}

func (o *operatorOptions) revoke(ctx context.Context) error {
	err := o.updateOperators(ctx, func(ops []state.OperatorToken) ([]state.OperatorToken, error) {
		i := slices.IndexFunc(ops, func(op state.OperatorToken) bool { return op.Name == o.Name })
		if i < 0 {
			return nil, fmt.Errorf("operator %s has no token: %w", o.Name, state.ErrNotFound)
		}
		return slices.Delete(ops, i, i+1), nil
	})
	if err != nil {
		return err
	}
	return o.f.Print(actionResults{Results: []actionResult{{Kind: "operator", ID: o.Name, Action: "revoked"}}})
}

// updateOperators changes the store's operator tokens in one transaction,
// validated like every write of settings.
func (o *operatorOptions) updateOperators(ctx context.Context, change func([]state.OperatorToken) ([]state.OperatorToken, error)) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	return st.Update(ctx, func(tx state.Tx) error {
		cur, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		ops, err := change(slices.Clone(cur.OperatorTokens()))
		if err != nil {
			return err
		}
		next := cur.WithOperators(ops)
		if err := next.Validate(); err != nil {
			return err
		}
		return tx.PutSettings(ctx, next)
	})
}

// tokenListOptions are token list's flags.
type tokenListOptions struct {
	f         *Factory
	Operators bool
}

// newCmdTokenList builds the command; runF, when not nil, is called
// instead of running it (tests of what the flags parse into).
func newCmdTokenList(f *Factory, runF func(context.Context, *tokenListOptions) error) *cobra.Command {
	o := &tokenListOptions{f: f}
	cmd := &cobra.Command{
		Use:   "list [--operator]",
		Short: "List who has a token: every spore's API token state and the operators' logins (never a token or its hash)",
		Long: `List every spore with the state of its API token (set: the store holds a hash
serve accepts; none: serve refuses every call as that spore until its next
start) and every operator with a login token for the page, with its time.
With --operator, only the operators. Never a token or a hash.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return listTokens(cmd.Context(), o.f, o.Operators)
		},
	}
	cmd.Flags().BoolVar(&o.Operators, "operator", false, "list only operators' tokens")
	return cmd
}

// listTokens reads, in one snapshot, the operators' tokens and (unless
// onlyOperators) whether each spore has an API token's hash.
func listTokens(ctx context.Context, f *Factory, onlyOperators bool) error {
	st, err := f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	ops := operatorList{Operators: []operatorRow{}}
	all := tokenList{Spores: []sporeTokenRow{}}
	err = st.View(ctx, func(tx state.Tx) error {
		s, err := tx.Settings(ctx)
		if err != nil {
			return err
		}
		for _, op := range s.OperatorTokens() {
			ops.Operators = append(ops.Operators, operatorRow{Name: op.Name, Created: op.Created.UTC()})
		}
		if onlyOperators {
			return nil
		}
		spores, err := tx.Spores(ctx)
		if err != nil {
			return err
		}
		for _, sp := range spores {
			row := sporeTokenRow{ID: sp.ID, Token: tokenNone}
			h, err := tx.TokenHash(ctx, sp.ID)
			switch {
			case errors.Is(err, state.ErrNotFound):
			case err != nil:
				return fmt.Errorf("read the token hash of spore %s: %w", sp.ID, err)
			case h.Valid():
				row.Token = tokenSet
			}
			all.Spores = append(all.Spores, row)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if onlyOperators {
		return f.Print(ops)
	}
	all.Operators = ops.Operators
	return f.Print(all)
}

// A spore's API token state in token list: whether serve would accept a
// token for it (the one it got on its last start, or none after rotate).
const (
	tokenSet  = "set"
	tokenNone = "none"
)

// sporeTokenRow is one spore in token list: its token's state only.
type sporeTokenRow struct {
	ID    string `json:"id"`
	Token string `json:"token"` // set | none
}

// tokenList is token list without --operator.
type tokenList struct {
	Spores    []sporeTokenRow `json:"spores"`
	Operators []operatorRow   `json:"operators"`
}

func (l tokenList) Table(bool) ([]string, [][]string) {
	rows := make([][]string, 0, len(l.Spores)+len(l.Operators))
	for _, sp := range l.Spores {
		rows = append(rows, []string{"spore", sp.ID, sp.Token, "-"})
	}
	for _, op := range l.Operators {
		rows = append(rows, []string{"operator", op.Name, tokenSet, op.Created.Format(time.RFC3339)})
	}
	return []string{"KIND", "NAME", "TOKEN", "CREATED"}, rows
}

func (l tokenList) Names() []string {
	out := make([]string, 0, len(l.Spores)+len(l.Operators))
	for _, sp := range l.Spores {
		out = append(out, "spore/"+sp.ID)
	}
	return append(out, operatorList{l.Operators}.Names()...)
}

// operatorRow is one line of token list --operator: no hash, ever.
type operatorRow struct {
	Name    string    `json:"name"`
	Created time.Time `json:"created"`
}

type operatorList struct {
	Operators []operatorRow `json:"operators"`
}

func (l operatorList) Table(bool) ([]string, [][]string) {
	rows := make([][]string, len(l.Operators))
	for i, op := range l.Operators {
		rows[i] = []string{op.Name, op.Created.Format(time.RFC3339)}
	}
	return []string{"OPERATOR", "CREATED"}, rows
}

func (l operatorList) Names() []string {
	out := make([]string, len(l.Operators))
	for i, op := range l.Operators {
		out[i] = "operator/" + op.Name
	}
	return out
}

type tokenRotateOptions struct {
	f  *Factory
	ID string
}

// newCmdTokenRotate builds the command; runF, when not nil, is called
// instead of the run function (tests check flag parsing with it).
func newCmdTokenRotate(f *Factory, runF func(context.Context, *tokenRotateOptions) error) *cobra.Command {
	o := &tokenRotateOptions{f: f}
	return &cobra.Command{
		Use:   "rotate ID",
		Short: "Replace a spore's API token: the old one stops working now, the spore gets a new one on its next start",
		Long: `Store the hash of a fresh token for the spore, in one transaction with an event
saying so. From then on serve refuses the old token (401). Nobody holds the
fresh one: the spore gets a token of its own on its next start, as on every
start (sleep and wake it to give it one now). No token is printed.`,
		Args: sporeIDs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.ID = args[0]
			if runF != nil {
				return runF(cmd.Context(), o)
			}
			return o.run(cmd.Context())
		},
	}
}

func (o *tokenRotateOptions) run(ctx context.Context) error {
	st, err := o.f.Store(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	now := o.f.Now().UTC()
	err = st.Update(ctx, func(tx state.Tx) error { return wish.RotateToken(ctx, tx, o.ID, now) })
	if err != nil {
		return err
	}
	return o.f.Print(actionResults{Results: []actionResult{{Kind: "token", ID: o.ID, Action: "rotated"}}})
}
