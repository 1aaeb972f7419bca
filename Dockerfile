# etcdfleet manager image. Build flags match `make build`.
FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so source edits reuse the cached download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/...

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/etcdfleet-manager"]
