package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// errNotConfirmed is a person's "no" (or no answer) to a destructive
// command's question: nothing was changed (exit 1).
var errNotConfirmed = errors.New("not confirmed: nothing changed")

// confirmFlag is --yes of a destructive command.
const confirmFlag = "yes"

// confirm asks before a command that destroys what cannot be recreated
// acts on many spores, as gh does (docs/cli.md, "Confirmation"). With
// --yes (yes) it asks nothing. On a terminal (ios.CanPrompt) it
// asks on stderr and proceeds only on y or yes; anything else, or the end
// of input, is errNotConfirmed. Not on a terminal it cannot ask: when
// selected is true (the spores were chosen by -l or --all, not named) it
// refuses with a usage error that says --yes is required, since a script
// that names nothing cannot know what it would destroy; named ids
// proceed, as kubectl's do, so existing scripts keep working.
func confirm(ios IOStreams, yes, selected bool, question string) error {
	if yes {
		return nil
	}
	if !ios.CanPrompt {
		if selected {
			return usageErrorf("--yes required when not running interactively (to %s)", question)
		}
		return nil
	}
	fmt.Fprintf(ios.ErrOut, "%s? [y/N] ", question)
	line, err := bufio.NewReader(ios.In).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	if err != nil {
		// The end of input: a person who closed stdin said nothing.
		fmt.Fprintln(ios.ErrOut)
	}
	return errNotConfirmed
}

// idList names ids in a question: the first few, then how many more.
func idList(ids []string) string {
	const shown = 5
	if len(ids) <= shown {
		return strings.Join(ids, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(ids[:shown], ", "), len(ids)-shown)
}
