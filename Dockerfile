# The tether-worker image: the worker and the tether CLI, plus the agent CLIs
# at the versions scripts/tools.sh pins. Build: docker build -t tether .
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -o /out/tether-worker ./worker \
 && CGO_ENABLED=0 go build -trimpath -o /out/tether ./starter

FROM node:20-bookworm-slim
RUN npm install -g --no-audit --no-fund \
      @anthropic-ai/claude-code@2.1.332 \
      @openai/codex@0.171.0 \
      @mariozechner/pi-coding-agent@0.73.1 \
 && npm cache clean --force
COPY --from=build /out/ /usr/local/bin/
USER node
WORKDIR /home/node
# Live session roots and working directories are per pod and disposable:
# session: persist restores what a visit needs from the blob store.
ENV TETHER_HOME=/home/node/.tether
ENTRYPOINT ["tether-worker"]
