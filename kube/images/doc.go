// Package images builds the two OCI image archives the Kubernetes runtime
// and kube/deploy run — the spore image (a Debian userland, Claude Code,
// sporectl as `sporectl bridge`) and the sporectl image (the static binary
// and CA certificates, for `serve` and the reconcile CronJob) — with no
// Docker daemon and no registry, on go-containerregistry.
//
// It only packs what it is given: a Debian root filesystem as a tar (made
// by .ci/images.sh with mmdebstrap), Claude Code's npm tarballs, the
// static sporectl binary and a CA bundle. The same inputs give the same
// bytes: every layer's entries are sorted, their times are the one epoch
// the caller gives, owners are numeric only, the config holds no build
// time, and gzip's output depends only on the input and the Go release.
//
// Each archive is an OCI image layout in a tar whose index.json names the
// image (io.containerd.image.name and org.opencontainers.image.ref.name),
// with a Docker-style manifest.json beside it naming the same blobs, so
// `ctr images import`, `docker load`, crane and skopeo all read it.
//
// It must never reach the network, run a container, or write anywhere but
// the output directory and the layer cache it is given.
package images
