package ui

import (
	"time"

	"github.com/sporectl/sporectl/state"
)

// activityView is what the activity graph of a spore page shows.
type activityView struct{}

// activityOf builds the graph from the spore's record.
func activityOf(sp state.Spore, now time.Time) activityView { return activityView{} }
