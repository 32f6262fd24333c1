# sporectl itself, for `serve` and the reconcile CronJob.
#   docker build -f kube/deploy/images/sporectl.Dockerfile -t ghcr.io/sporectl/sporectl .
# Without Docker, `make images` builds the same image as an OCI archive
# (docs/runtimes.md, "Building the images"; kube/images checks the two agree).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/sporectl ./cmd/sporectl

# No shell, no package manager: serve and reconcile need only the binary
# and CA certificates (Postgres over TLS, the model's endpoint).
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/sporectl /usr/local/bin/sporectl
USER 1000:1000
ENTRYPOINT ["/usr/local/bin/sporectl"]
