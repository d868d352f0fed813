// Package startgc raises the Go garbage collector's target (GOGC) while
// thaw starts and restores it once thaw is first ready. At 100,000
// revisions thaw's start (the config file, the first translation and its
// encoding) leaves garbage several times its live heap, and collecting it
// at the default GOGC=100 was 16% of the start's CPU. A GOGC or GOMEMLIMIT
// set by the user is never overridden; the raised target is bounded by a
// soft memory limit of half the memory the process may use (the machine's,
// or its cgroup's when lower). docs/scaling.md has the figures.
package startgc
