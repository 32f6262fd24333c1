package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/sporectl/sporectl/internal/quote"
)

// flagError turns an error of cobra's flag parsing into a usage error
// that says what the flag wants, in the words of every other check of a
// flag value (`invalid value "x" for --tail: want a whole number`), not
// in strconv's ("strconv.ParseInt: parsing ...").
func flagError(err error) error {
	var bad *pflag.InvalidValueError
	if !errors.As(err, &bad) || bad.GetFlag() == nil {
		return &UsageError{Msg: err.Error()}
	}
	fl := bad.GetFlag()
	return usageErrorf("invalid value %s for --%s: %s", quote.Value(bad.GetValue()), fl.Name, wantOf(fl.Value.Type(), errors.Unwrap(bad)))
}

// wantOf says what a flag of pflag type typ accepts, given why the value
// was refused.
func wantOf(typ string, cause error) string {
	outOfRange := errors.Is(cause, strconv.ErrRange)
	switch {
	case strings.HasSuffix(typ, "Slice"), strings.HasSuffix(typ, "Array"):
		// Lists (none today) keep the parser's reason, below.
	case typ == "bool":
		return "want true or false"
	case typ == "duration":
		return "want a duration such as 30s, 5m or 1h30m"
	case typ == "count":
		return "want a whole number"
	case strings.HasPrefix(typ, "int"):
		if outOfRange {
			return "want a whole number " + bounds(typ)
		}
		return "want a whole number"
	case strings.HasPrefix(typ, "uint"):
		if outOfRange {
			return "want a whole number " + bounds(typ)
		}
		return "want a whole number, 0 or more"
	case strings.HasPrefix(typ, "float"):
		return "want a number"
	}
	// A type without words of its own: the parser's reason, without the
	// Go function that gave it.
	var num *strconv.NumError
	if errors.As(cause, &num) {
		return num.Err.Error()
	}
	if cause == nil {
		return "not a valid " + typ
	}
	return cause.Error()
}

// bounds is the range of a sized integer type: "from -128 to 127".
func bounds(typ string) string {
	bits := 64
	signed := strings.HasPrefix(typ, "int")
	if n, err := strconv.Atoi(strings.TrimLeft(typ, "uint")); err == nil {
		bits = n
	}
	if signed {
		return fmt.Sprintf("from %d to %d", -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
	}
	return fmt.Sprintf("from 0 to %d", uint64(1)<<bits-1)
}
