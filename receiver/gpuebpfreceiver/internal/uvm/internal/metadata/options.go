package metadata

import "go.opentelemetry.io/collector/pdata/pmetric"

// WithMetrics appends, through fn, metrics that mdatagen cannot describe
// (histograms) to the scope of the ResourceMetrics being emitted, so they
// share its resource. Not generated: mdatagen leaves this file alone.
func WithMetrics(fn func(pmetric.MetricSlice)) ResourceMetricsOption {
	return resourceMetricsOptionFunc(func(rm pmetric.ResourceMetrics) {
		fn(rm.ScopeMetrics().At(0).Metrics())
	})
}
