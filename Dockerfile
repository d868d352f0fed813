# thaw's image for Docker users: `docker build -t ghcr.io/thaw-dev/thaw:dev .`
# The same image as `make image` (no Docker needed there): one static
# binary at /thaw (and the activator module at /thaw-activator.so) on an
# empty base, run as 65532:65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH:-amd64} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/thaw ./cmd/thaw
# The activator module (Envoy dynamic module; cgo, glibc >= 2.34 where
# Envoy runs): `thaw install-module` copies it into the fleet's Envoy pods.
RUN CGO_ENABLED=1 go build -buildmode=c-shared -trimpath -ldflags "-s -w" \
    -o /out/thaw-activator.so ./module/activator

FROM scratch
COPY --from=build /out/thaw /thaw
COPY --from=build /out/thaw-activator.so /thaw-activator.so
USER 65532:65532
ENTRYPOINT ["/thaw"]
