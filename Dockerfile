# thaw's image for Docker users: `docker build -t ghcr.io/thaw-dev/thaw:dev .`
# The same image as `make image` (no Docker needed there): one static
# binary at /thaw on an empty base, run as 65532:65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG TARGETARCH
RUN CGO_ENABLED=0 GOOS=linux GOARCH=${TARGETARCH:-amd64} \
    go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/thaw ./cmd/thaw

FROM scratch
COPY --from=build /out/thaw /thaw
USER 65532:65532
ENTRYPOINT ["/thaw"]
