# A spore: Claude Code, git and sporectl (which runs as `sporectl bridge`
# and answers to `mycologist` and `swarm` through argv[0]).
#   docker build -f kube/deploy/images/spore.Dockerfile -t ghcr.io/sporectl/spore .
# Without Docker, `make images` builds the same image as an OCI archive
# (docs/runtimes.md, "Building the images"; kube/images checks the two agree).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /out/sporectl ./cmd/sporectl

FROM node:22-bookworm-slim
# The version the tests run (.ci/claude-code.sh); raise both together.
ARG CLAUDE_CODE_VERSION=2.1.328
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates openssh-client ripgrep \
 && rm -rf /var/lib/apt/lists/* \
 && npm install -g "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" \
 && npm cache clean --force
COPY --from=build /out/sporectl /usr/local/bin/sporectl
RUN ln -s sporectl /usr/local/bin/mycologist && ln -s sporectl /usr/local/bin/swarm
# UID 1000 matches the pod's runAsUser and fsGroup (kube/options.go), so
# the home claim is writable. The node image's own user holds that UID.
RUN userdel -r node && useradd --uid 1000 --user-group --home-dir /home/spore --create-home spore
USER 1000:1000
ENV HOME=/home/spore
WORKDIR /home/spore
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/sporectl"]
CMD ["bridge"]
