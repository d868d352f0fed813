package autoscaler

// KeepTicking makes a Multiscaler built with o decide every revision every
// tick, dormant or not: the cost before dormancy, for benchmarks that
// compare both in one run.
func KeepTicking(o *MultiscalerOptions) { o.keepTicking = true }

// TickWarmWindows makes a Multiscaler built with o decide revisions with
// warm windows every tick at zero instead of sleeping until their alarm:
// the cost before alarms, for benchmarks that compare both in one run.
func TickWarmWindows(o *MultiscalerOptions) { o.tickWarmWindows = true }
