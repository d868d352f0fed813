// Command report renders docs/BENCHMARKS.md from what hack/bench.sh
// collected in one directory:
//
//	commands.tsv        one line per command: name, command, exit status, seconds
//	<name>.txt          each command's output (`go test -bench` text for the micro
//	                    and xDS benchmarks)
//	scenarios.json      bench/scenarios' figures
//	peers.json          bench/scenarios -only peers' figures
//	scale100k.json      bench/scenarios -only scale100k's figures (optional)
//	load-start, load-end  copies of /proc/loadavg around the run
//
// The document is a template (BENCHMARKS.md.tmpl); never edit the output by
// hand, rerun `make bench`. With -peers-only it rewrites just the peers
// section of an existing document (`make bench-peers`).
//
// Its input types are bench/results'; hack/bench.sh and hack/bench-peers.sh
// build and run it (`make bench`, `make bench-peers`).
package main
