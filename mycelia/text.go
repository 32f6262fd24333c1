package mycelia

import (
	"fmt"

	"github.com/sporectl/sporectl/state"
)

// A message reaches its target as a prompt whose first words say who sent
// it and whose last line says how to answer (docs/mycologists.md
// "Messages"). The agent sees only the text, so the mark is part of it;
// the event's From ("spore:ID") is the store's own record of the sender.

// From is the event and outbox sender of a message from sp.
func From(sp state.Spore) string { return "spore:" + sp.ID }

// mark is how a message from sender is introduced to a spore below it.
func mark(sender state.Spore) string {
	switch sender.Rank {
	case state.RankArch, state.RankColony, state.RankSwarm:
		return fmt.Sprintf("[from the [%s] mycologist]", sender.Rank)
	}
	return "[from spore " + sender.ID + "]"
}

// summonsText is what a summons from asker says to the mycologist above
// it: the asker's short request and its id, never a copy of its chat.
func summonsText(asker state.Spore, text string) string {
	who := "[from spore " + asker.ID + "]"
	if asker.Rank != state.RankSpore {
		who = fmt.Sprintf("[from the [%s] mycologist %s of colony %s]", asker.Rank, asker.ID, asker.Colony)
	}
	return fmt.Sprintf("%s %s\n\n(%s summons you. Read its conversation: `mycologist spore %s --turns 5`. Answer it: `mycologist tell %s \"…\"`.)",
		who, text, asker.ID, asker.ID, asker.ID)
}

// tellText is what a mycologist's tell says to a spore below it.
func tellText(sender, target state.Spore, text string) string {
	return fmt.Sprintf("%s %s\n\n(Answer by replying here: the mycologist reads your conversation with `mycologist spore %s`. To summon your own mycologist: `mycologist ask \"…\"`.)",
		mark(sender), text, target.ID)
}

// swarmText is what a swarm teammate's message says.
func swarmText(sender state.Spore, text string) string {
	if sender.Role == "" {
		return fmt.Sprintf("[from swarm teammate spore %s] %s\n\n(It has no role to answer with `swarm tell`; reply here, or summon your mycologist with `mycologist ask \"…\"`.)", sender.ID, text)
	}
	return fmt.Sprintf("[from swarm teammate %s] %s\n\n(Answer it: `swarm tell %s \"…\"`.)", sender.Role, text, sender.Role)
}
