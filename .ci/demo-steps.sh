# The demo's step lines (sourced by demo.sh; cmd/cli's TestDemoStepLines
# checks them). $bin is the sporectl binary.

# shquote prints its arguments as a shell needs them typed: a plain word
# as it is, anything else in single quotes (a ' inside as '\''), so a step
# line can be copied and run as printed.
shquote() {
	local out=() a
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
			out+=("$a")
		else
			out+=("'${a//\'/\'\\\'\'}'")
		fi
	done
	printf '%s' "${out[*]}"
}

# step prints the command line, quoted, then runs it.
step() { printf '\n$ sporectl %s\n' "$(shquote "$@")"; "$bin" "$@"; }
say() { printf '\n# %s\n' "$*"; }
