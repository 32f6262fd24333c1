package gateway

import (
	"strings"

	"github.com/sporectl/sporectl/state"
)

// price is a model's price in US cents per million tokens (so a token
// costs price/100 millionths of a dollar): input, output, cache writes
// (the 5-minute cache) and cache reads.
type price struct {
	input, output, cacheWrite, cacheRead int64
}

// prices are Anthropic's published prices of the Claude models
// (docs/gateway.md "Prices"), by the prefix of the model's name the
// upstream answers with; the first prefix that fits wins, so a longer
// one comes before the shorter it starts with.
var prices = []struct {
	prefix string
	price  price
}{
	{"claude-opus-4-5", price{500, 2500, 625, 50}},
	{"claude-opus-4", price{1500, 7500, 1875, 150}},
	{"claude-sonnet-4", price{300, 1500, 375, 30}},
	{"claude-haiku-4-5", price{100, 500, 125, 10}},
	{"claude-3-opus", price{1500, 7500, 1875, 150}},
	{"claude-3-7-sonnet", price{300, 1500, 375, 30}},
	{"claude-3-5-sonnet", price{300, 1500, 375, 30}},
	{"claude-3-5-haiku", price{80, 400, 100, 8}},
	{"claude-3-haiku", price{25, 125, 30, 3}},
}

// dearest prices a model the table does not know: as the dearest it
// does, so a new model is never counted cheaper than it is.
var dearest = price{1500, 7500, 1875, 150}

func priceOf(model string) price {
	for _, p := range prices {
		if strings.HasPrefix(model, p.prefix) {
			return p.price
		}
	}
	return dearest
}

// costMicros is u's price for model in millionths of a dollar, rounded
// up, each product stopping at the largest int64.
func costMicros(model string, u state.Usage) int64 {
	p := priceOf(model)
	mul := func(tokens, cents int64) int64 {
		if tokens > 0 && cents > 0 && tokens > (1<<63-1)/cents {
			return 1<<63 - 1
		}
		return tokens * cents
	}
	cents := state.AddCount(state.AddCount(mul(u.InputTokens, p.input), mul(u.OutputTokens, p.output)),
		state.AddCount(mul(u.CacheCreationTokens, p.cacheWrite), mul(u.CacheReadTokens, p.cacheRead)))
	if cents == 1<<63-1 {
		return cents / 100
	}
	return (cents + 99) / 100
}
