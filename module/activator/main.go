package main

// main is required by -buildmode=c-shared and never runs: Envoy calls the
// exported hooks.
func main() {}
