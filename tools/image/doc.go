// Command image builds thaw's container image without a Docker daemon:
// an image tarball (the `docker save` layout that `docker load`,
// `podman load` and `crane push` read, with OCI media types) holding one
// static thaw binary at /thaw on an empty base, run as user 65532:65532
// with entrypoint /thaw. It refuses a dynamically linked binary or one
// built for another architecture. With -check it reads a tarball back and
// fails unless its config says exactly that. `make image` runs both.
//
//	go run ./tools/image -binary bin/linux_amd64/thaw -arch amd64 \
//	    -tag ghcr.io/thaw-dev/thaw:v0.1.0 -out bin/thaw-image.tar
//	go run ./tools/image -check bin/thaw-image.tar -arch amd64
package main
