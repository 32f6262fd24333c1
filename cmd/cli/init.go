package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sporectl/sporectl/state"
)

type initOptions struct {
	f            *Factory
	Runtime      string
	Agent        string
	StorageClass string
	Image        string
	CPU, Memory  string
	Storage      string
	changed      func(string) bool
}

func newCmdInit(f *Factory) *cobra.Command {
	o := &initOptions{f: f}
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Create a store, or update the settings of an existing one",
		Long: `Create the store named by --store (or $SPORECTL_STORE, or the default directory).
On an existing store, init changes only the settings whose flags are given.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.changed = cmd.Flags().Changed
			if err := o.validate(); err != nil {
				return err
			}
			return o.run(cmd.Context())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Runtime, "runtime", "local", "where spores run: local|kube")
	fl.StringVar(&o.Agent, "agent", "claude", "the agent each bridge runs: claude|echo (echo is a demo agent)")
	fl.StringVar(&o.StorageClass, "storage-class", "local-path", "storage class of spore homes (kube)")
	fl.StringVar(&o.Image, "image", "", "default spore image (kube)")
	fl.StringVar(&o.CPU, "cpu", "2", "default CPU per spore")
	fl.StringVar(&o.Memory, "memory", "3Gi", "default memory per spore")
	fl.StringVar(&o.Storage, "storage", "5Gi", "default size of a spore's home")
	return cmd
}

func (o *initOptions) validate() error {
	if o.Runtime != "local" && o.Runtime != "kube" {
		return usageErrorf("invalid value %q for --runtime: use local or kube", o.Runtime)
	}
	if o.Agent != "claude" && o.Agent != "echo" {
		return usageErrorf("invalid value %q for --agent: use claude or echo", o.Agent)
	}
	for flag, v := range map[string]string{"cpu": o.CPU, "memory": o.Memory, "storage": o.Storage} {
		if err := validateQuantity(flag, v); err != nil {
			return err
		}
	}
	return nil
}

func (o *initOptions) settings() state.Settings {
	ns := o.f.Global.Namespace
	if ns == "" && o.Runtime == "kube" {
		ns = "sporectl"
	}
	return state.Settings{
		Runtime: o.Runtime, Agent: o.Agent, Namespace: ns, StorageClass: o.StorageClass, Image: o.Image,
		DefaultSpec: state.Spec{CPU: o.CPU, Memory: o.Memory, Storage: o.Storage},
	}
}

func (o *initOptions) run(ctx context.Context) error {
	st, created, err := o.f.InitStore(ctx, o.settings())
	if err != nil {
		return err
	}
	defer st.Close()
	action := "created"
	if !created {
		action = "unchanged"
		err := st.Update(ctx, func(tx state.Tx) error {
			cur, err := tx.Settings(ctx)
			if err != nil {
				return err
			}
			next := o.merge(cur)
			if next == cur {
				return nil
			}
			action = "configured"
			return tx.PutSettings(ctx, next)
		})
		if err != nil {
			return fmt.Errorf("update store settings: %w", err)
		}
	}
	return o.f.Print(actionResults{Results: []actionResult{{Kind: "store", ID: st.Info().Location, Action: action}}})
}

// merge applies the flags the user gave to the stored settings.
func (o *initOptions) merge(cur state.Settings) state.Settings {
	n := cur
	set := func(flag string, dst *string, v string) {
		if o.changed(flag) {
			*dst = v
		}
	}
	set("runtime", &n.Runtime, o.Runtime)
	set("agent", &n.Agent, o.Agent)
	set("storage-class", &n.StorageClass, o.StorageClass)
	set("image", &n.Image, o.Image)
	set("cpu", &n.DefaultSpec.CPU, o.CPU)
	set("memory", &n.DefaultSpec.Memory, o.Memory)
	set("storage", &n.DefaultSpec.Storage, o.Storage)
	if o.f.Global.Namespace != "" {
		n.Namespace = o.f.Global.Namespace
	}
	return n
}
