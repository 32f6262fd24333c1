package images

import (
	"debug/elf"
	"fmt"
)

// staticArch is the image architecture of a static Linux ELF executable
// (GOARCH names, as image configs use). A dynamically linked binary is
// refused: the sporectl image has no C library for it to load, and the
// spore image's is Debian's, not the build machine's.
func staticArch(name string) (string, error) {
	f, err := elf.Open(name)
	if err != nil {
		return "", fmt.Errorf("sporectl binary %s: not an ELF executable: %w", name, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			return "", fmt.Errorf("sporectl binary %s is dynamically linked: build it with CGO_ENABLED=0", name)
		}
	}
	if f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
		return "", fmt.Errorf("sporectl binary %s is not a Linux executable (OS ABI %v)", name, f.OSABI)
	}
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	default:
		return "", fmt.Errorf("sporectl binary %s: machine %v is not amd64 or arm64", name, f.Machine)
	}
}
