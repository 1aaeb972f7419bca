# etcdfleet manager image. Build flags match `make build`.
#
# The base images are named by tag. To pin a release build to the exact
# bytes reviewed, pass them by digest (resolve one with
# `docker buildx imagetools inspect <image>`):
#   docker build --build-arg GO_IMAGE=golang:1.26@sha256:<digest> \
#     --build-arg BASE_IMAGE=gcr.io/distroless/static:nonroot@sha256:<digest> .
# With a digest the tag is only a label; the digest is what is pulled.
ARG GO_IMAGE=golang:1.26
ARG BASE_IMAGE=gcr.io/distroless/static:nonroot

FROM ${GO_IMAGE} AS build
WORKDIR /src
# Modules first, so source edits reuse the cached download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" -o /out/ ./cmd/...

FROM ${BASE_IMAGE}
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/etcdfleet-manager"]
