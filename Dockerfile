# The tether-worker image: the worker, its confine helper (tether-confine,
# beside it) with bubblewrap, its ask_user MCP server (tether-ask-user,
# beside it), the tether CLI and tether-certs (the
# cluster's certificates, docker-compose.yml's "certs"), the agent CLIs .env
# pins (every AGENT_CLI_<X>=<package>@<version> line, read from .env
# itself, so a new backend's CLI needs no line here), and what tool nodes
# such as `go test` need (the Go toolchain and git), so
# examples/fix-the-test.yaml runs on it. docker compose passes the
# toolchain versions from .env; a plain `docker build` uses the defaults
# below, which the compose test keeps equal to .env.
ARG GO_VERSION=1.26.8
ARG NODE_VERSION=20

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/tether-worker ./worker \
 && CGO_ENABLED=0 go build -trimpath -o /out/tether-confine ./internal/sandbox/cmd/tether-confine \
 && CGO_ENABLED=0 go build -trimpath -o /out/tether-ask-user ./internal/askuser/cmd/tether-ask-user \
 && CGO_ENABLED=0 go build -trimpath -o /out/tether ./starter \
 && CGO_ENABLED=0 go build -trimpath -o /out/tether-certs ./internal/pki/cmd/certs

FROM golang:${GO_VERSION}-bookworm AS go

FROM node:${NODE_VERSION}-bookworm-slim
COPY .env /tmp/tether-pins.env
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates bubblewrap \
 && rm -rf /var/lib/apt/lists/* \
 && npm install -g --no-audit --no-fund $(sed -n 's/^AGENT_CLI_[A-Z0-9_]*=//p' /tmp/tether-pins.env) \
 && npm cache clean --force \
 && rm /tmp/tether-pins.env
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
