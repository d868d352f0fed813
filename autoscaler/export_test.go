package autoscaler

// KeepTicking makes a Multiscaler built with o decide every revision every
// tick, dormant or not: the cost before dormancy, for benchmarks that
// compare both in one run.
func KeepTicking(o *MultiscalerOptions) { o.keepTicking = true }
