package mycelia

import (
	"fmt"

	"github.com/sporectl/sporectl/state"
)

// A message reaches its target as a prompt whose first line is the mark
// of who sent it, then the sender's text, then a note on how to answer
// (docs/mycologists.md "Messages"). The agent sees only the text, so the
// mark is part of it: serve chooses it from the authenticated caller and
// outbox.Compose puts it alone on the first line and rewrites every
// mark-shaped token of the sender's text, so no sender can write one.
// The event's From ("spore:ID") is the store's own record of the sender.

// From is the event and outbox sender of a message from sp.
func From(sp state.Spore) string { return "spore:" + sp.ID }

// letter is a message's mark and note around the sender's text.
type letter struct{ mark, note string }

// mark is how a message from sender is introduced to a spore below it.
func mark(sender state.Spore) string {
	switch sender.Rank {
	case state.RankArch, state.RankColony, state.RankSwarm:
		return fmt.Sprintf("[from the [%s] mycologist]", sender.Rank)
	}
	return "[from spore " + sender.ID + "]"
}

// summonsLetter is what frames a summons from asker to the mycologist
// above it: the asker's short request and its id, never a copy of its
// chat.
func summonsLetter(asker state.Spore) letter {
	who := "[from spore " + asker.ID + "]"
	if asker.Rank != state.RankSpore {
		who = fmt.Sprintf("[from the [%s] mycologist %s of colony %s]", asker.Rank, asker.ID, asker.Colony)
	}
	return letter{mark: who, note: fmt.Sprintf("(%s summons you. Read its conversation: `mycologist spore %s --turns 5`. Answer it: `mycologist tell %s \"…\"`.)",
		asker.ID, asker.ID, asker.ID)}
}

// tellLetter is what frames a mycologist's tell to a spore below it.
func tellLetter(sender state.Spore, target string) letter {
	return letter{mark: mark(sender), note: fmt.Sprintf("(Answer by replying here: the mycologist reads your conversation with `mycologist spore %s`. To summon your own mycologist: `mycologist ask \"…\"`.)",
		target)}
}

// swarmLetter is what frames a swarm teammate's message.
func swarmLetter(sender state.Spore) letter {
	if sender.Role == "" {
		return letter{mark: "[from swarm teammate spore " + sender.ID + "]",
			note: "(It has no role to answer with `swarm tell`; reply here, or summon your mycologist with `mycologist ask \"…\"`.)"}
	}
	return letter{mark: "[from swarm teammate " + sender.Role + "]", note: fmt.Sprintf("(Answer it: `swarm tell %s \"…\"`.)", sender.Role)}
}
