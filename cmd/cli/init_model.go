package cli

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/sporectl/sporectl/bridge/sporeenv"
	"github.com/sporectl/sporectl/internal/quote"
	"github.com/sporectl/sporectl/state"
)

// init's model flags: how spores reach the model (--model-gateway) and
// how often one may call it through the gateway (--model-calls-per-minute).

func (o *initOptions) validateModel() error {
	if o.ModelGateway != state.GatewayOn && o.ModelGateway != state.GatewayOff {
		return usageErrorf("invalid value %s for --model-gateway: use %s or %s", quote.Value(o.ModelGateway), state.GatewayOn, state.GatewayOff)
	}
	if o.ModelCallsPerMinute < 0 || o.ModelCallsPerMinute > state.MaxModelCallsPerMinute {
		return usageErrorf("invalid value %d for --model-calls-per-minute: use 0 (the default, %d) to %d",
			o.ModelCallsPerMinute, state.DefaultModelCallsPerMinute, state.MaxModelCallsPerMinute)
	}
	return nil
}

// model applies the model flags that were given to s: a store keeps ""
// (the gateway, the default rate) until one is.
func (o *initOptions) model(s state.Settings) state.Settings {
	if o.changed("model-gateway") {
		s.ModelGateway = o.ModelGateway
	}
	if o.changed("model-calls-per-minute") {
		s.ModelCallsPerMinute = o.ModelCallsPerMinute
	}
	return s
}

// modelNotice says on stderr how the store's spores reach the model, and
// what that asks of the operator: with the gateway, serve must run (and
// hold the key) for any spore to reach the model; without it, the key is
// in every spore (docs/security.md "Secrets").
func modelNotice(w io.Writer, s state.Settings) {
	onKube := s.Runtime == "kube"
	if !s.Gateway() {
		where := "ANTHROPIC_* of the environment of the command that wakes it"
		if onKube {
			where = "the sporectl-model Secret"
		}
		fmt.Fprintf(w, "Model gateway off (direct mode): every spore gets the model's key from %s, where its agent can read it, "+
			"and budgets count what spores report of their own spend (see 'Security' in the docs). 'sporectl init --model-gateway on' puts the key behind serve.\n", where)
		return
	}
	api := s.APIURL
	switch {
	case api == "" && onKube:
		api = "http://sporectl-api." + cmp.Or(s.Namespace, "<namespace>") + ".svc" // as kube.Options says
	case api == "":
		api = "http://" + defaultServeAddr
	}
	url := strings.TrimSuffix(api, "/") + sporeenv.ModelPath
	if onKube {
		fmt.Fprintf(w, "Model gateway on: spores reach the model through serve at %s with their own token; the sporectl-model Secret goes to serve's Deployment alone.\n", url)
		return
	}
	fmt.Fprintf(w, "Model gateway on: spores reach the model through serve at %s with their own token; the key stays with serve ($ANTHROPIC_API_KEY or --model-key-file). "+
		"Run 'sporectl serve' for spores to reach the model (%d calls a minute per spore).\n", url, s.ModelCallRate())
}
