package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
)

func main() {
	var opts Options
	check := flag.String("check", "", "check this image tarball instead of building one")
	flag.StringVar(&opts.Binary, "binary", "", "static linux thaw binary (CGO_ENABLED=0)")
	flag.StringVar(&opts.Module, "module", "", "the activator module for the image (thaw-activator.so, -buildmode=c-shared); with -check: require it")
	flag.StringVar(&opts.Arch, "arch", runtime.GOARCH, "GOARCH of the binary")
	flag.StringVar(&opts.Tag, "tag", "ghcr.io/thaw-dev/thaw:dev", "image name inside the tarball")
	flag.StringVar(&opts.Version, "version", "dev", "org.opencontainers.image.version label")
	flag.StringVar(&opts.Out, "out", "bin/thaw-image.tar", "tarball to write")
	flag.Parse()
	if *check != "" {
		if err := Check(*check, opts.Arch, opts.Module != ""); err != nil {
			fmt.Fprintln(os.Stderr, "image check:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: user %s, entrypoint [%s], %s/%s, static binary: ok\n", *check, User, BinaryPath, OS, opts.Arch)
		if opts.Module != "" {
			fmt.Printf("%s: activator module %s: ok\n", *check, ModulePath)
		}
		return
	}
	if err := Build(opts); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%s, %s/%s)\n", opts.Out, opts.Tag, OS, opts.Arch)
}
