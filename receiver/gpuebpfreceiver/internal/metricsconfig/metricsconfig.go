// Package metricsconfig validates an mdatagen MetricsConfig field by field,
// naming each metric, for the sub-sources (nvml, uvm) whose Validate is
// called directly as well as by the collector.
package metricsconfig

import (
	"fmt"
	"reflect"
)

// Validate runs the generated Validate of every metric's config in m (a
// pointer to a generated MetricsConfig) and names the metric in each error
// as "<prefix>metrics::<name>".
func Validate(prefix string, m any) []error {
	type validator interface{ Validate() error }
	var errs []error
	v := reflect.ValueOf(m).Elem()
	t := v.Type()
	for i := 0; i < v.NumField(); i++ {
		f, ok := v.Field(i).Addr().Interface().(validator)
		if !ok {
			continue
		}
		if err := f.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("%smetrics::%s: %w", prefix, t.Field(i).Tag.Get("mapstructure"), err))
		}
	}
	return errs
}
