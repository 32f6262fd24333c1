// Command mkimages writes the spore and sporectl image archives from
// their inputs (kube/images); `make images` runs it after .ci/images.sh
// has made the inputs. A build tool, not part of sporectl: it exits 2 on
// a bad flag and 1 when a build fails.
//
//	go run ./cmd/mkimages -sporectl bin/images/sporectl [-rootfs … -claude-code … -claude-code-native … -claude-code-version …]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sporectl/sporectl/kube/images"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

type usageError struct{ error }

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	err := build(ctx, args, stdout, stderr, getenv)
	var usage usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "mkimages: %v\n", err)
		return 2
	default:
		fmt.Fprintf(stderr, "mkimages: %v\n", err)
		return 1
	}
}

func build(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fl := flag.NewFlagSet("mkimages", flag.ContinueOnError)
	fl.SetOutput(stderr)
	out := fl.String("out", "bin/images", "directory the archives are written to")
	which := fl.String("images", "sporectl,spore", "the images to build, comma-separated: sporectl, spore")
	sporectl := fl.String("sporectl", "", "the static (CGO_ENABLED=0) sporectl binary both images hold")
	caCerts := fl.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle of the sporectl image")
	rootfs := fl.String("rootfs", "", "the spore image's root filesystem, a tar (.ci/images.sh)")
	claude := fl.String("claude-code", "", "npm tarball of @anthropic-ai/claude-code")
	native := fl.String("claude-code-native", "", "npm tarball of Claude Code's native package for the architecture")
	version := fl.String("claude-code-version", "", "the pinned Claude Code version both tarballs must be")
	cache := fl.String("layer-cache", "", "directory of compressed layers kept across builds (none when empty)")
	if err := fl.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fl.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fl.Arg(0))}
	}
	epoch, err := sourceDateEpoch(getenv("SOURCE_DATE_EPOCH"))
	if err != nil {
		return usageError{err}
	}
	want := map[string]bool{}
	for _, w := range strings.Split(*which, ",") {
		switch w = strings.TrimSpace(w); w {
		case "sporectl", "spore":
			want[w] = true
		default:
			return usageError{fmt.Errorf("invalid value %q for -images: want sporectl, spore or both", w)}
		}
	}
	if *sporectl == "" {
		return usageError{errors.New("-sporectl is required: the static binary (CGO_ENABLED=0 go build ./cmd/sporectl)")}
	}
	if want["spore"] {
		for name, v := range map[string]string{"-rootfs": *rootfs, "-claude-code": *claude, "-claude-code-native": *native, "-claude-code-version": *version} {
			if v == "" {
				return usageError{fmt.Errorf("%s is required for the spore image", name)}
			}
		}
	}

	b := images.Builder{Epoch: epoch, LayerCache: *cache}
	// Each archive is read back as an importer reads it and checked
	// against what the builder promises before it is reported.
	report := func(a images.Archive, took time.Duration) error {
		img, err := images.Read(ctx, a.Path, *out)
		if err != nil {
			return err
		}
		if err := img.Check(a.Name); err != nil {
			return fmt.Errorf("%s: %w", a.Path, err)
		}
		fmt.Fprintf(stdout, "%s\t%s\t%s\t%.1f MB\t%s\n", a.Path, a.Name, a.Manifest, float64(a.Size)/1e6, took.Round(100*time.Millisecond))
		return nil
	}
	if want["sporectl"] {
		t := time.Now()
		a, err := b.Sporectl(ctx, images.SporectlInputs{Sporectl: *sporectl, CACerts: *caCerts}, filepath.Join(*out, "sporectl.tar"))
		if err != nil {
			return err
		}
		if err := report(a, time.Since(t)); err != nil {
			return err
		}
	}
	if want["spore"] {
		t := time.Now()
		a, err := b.Spore(ctx, images.SporeInputs{
			Sporectl: *sporectl, Rootfs: *rootfs,
			ClaudeCode: *claude, ClaudeCodeNative: *native, ClaudeCodeVersion: *version,
		}, filepath.Join(*out, "spore.tar"))
		if err != nil {
			return err
		}
		if err := report(a, time.Since(t)); err != nil {
			return err
		}
	}
	return nil
}

// sourceDateEpoch is the reproducible-builds convention: the time every
// file and the config carry, in seconds since 1970; 0 when unset.
func sourceDateEpoch(v string) (time.Time, error) {
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("invalid SOURCE_DATE_EPOCH %q: want seconds since 1970", v)
	}
	return time.Unix(n, 0).UTC(), nil
}
