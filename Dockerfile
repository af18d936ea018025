# The tether-worker image: the worker, the tether CLI and tether-certs (the
# cluster's certificates, docker-compose.yml's "certs"), the agent CLIs at
# the versions .env pins, and what tool nodes such as `go test` need (the Go
# toolchain and git), so examples/fix-the-test.yaml runs on it. docker
# compose passes the versions from .env; a plain `docker build` uses the
# defaults below, which the compose test keeps equal to .env.
ARG GO_VERSION=1.26.8
ARG NODE_VERSION=20

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/tether-worker ./worker \
 && CGO_ENABLED=0 go build -trimpath -o /out/tether ./starter \
 && CGO_ENABLED=0 go build -trimpath -o /out/tether-certs ./internal/pki/cmd/certs

FROM golang:${GO_VERSION}-bookworm AS go

FROM node:${NODE_VERSION}-bookworm-slim
ARG CLAUDE_CODE_VERSION=2.1.332
ARG CODEX_VERSION=0.171.0
ARG PI_VERSION=0.73.1
ARG GEMINI_CLI_VERSION=0.61.0
ARG GROK_CLI_VERSION=0.0.34
ARG OPENCODE_VERSION=1.18.33
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && npm install -g --no-audit --no-fund \
      @anthropic-ai/claude-code@${CLAUDE_CODE_VERSION} \
      @openai/codex@${CODEX_VERSION} \
      @mariozechner/pi-coding-agent@${PI_VERSION} \
      @google/gemini-cli@${GEMINI_CLI_VERSION} \
      @vibe-kit/grok-cli@${GROK_CLI_VERSION} \
      opencode-ai@${OPENCODE_VERSION} \
 && npm cache clean --force
COPY --from=go /usr/local/go /usr/local/go
ENV PATH=/usr/local/go/bin:$PATH
COPY --from=build /out/ /usr/local/bin/
USER node
WORKDIR /home/node
# Live session roots, working directories and the Go caches are per pod
# and disposable: session: persist and the run's workspace come back from
# the blob store on whatever pod runs the next visit.
ENV TETHER_HOME=/home/node/.tether \
    GOPATH=/home/node/go \
    GOCACHE=/home/node/.cache/go-build \
    TETHER_PASS_ENV=GOPATH,GOCACHE,GOMODCACHE,GOPROXY,GOFLAGS
ENTRYPOINT ["tether-worker"]
