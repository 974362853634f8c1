package gpupolicyprocessor

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"
	"go.opentelemetry.io/collector/processor/processorhelper"

	"github.com/otelcol-gpu/otelcol-gpu/processor/gpupolicyprocessor/internal/metadata"
)

// The processor reads telemetry and, but for the advice appended to metrics
// in advise mode, never changes it, so the pipeline need not clone data for it.
var processorCapabilities = consumer.Capabilities{MutatesData: false}

// NewFactory returns the factory of the gpupolicy processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		processor.WithTraces(createTraces, metadata.TracesStability),
		processor.WithMetrics(createMetrics, metadata.MetricsStability),
		processor.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createTraces(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	h := policies.acquire(cfg.(*Config), set)
	return processorhelper.NewTraces(ctx, set, cfg, next, h.policy.processTraces,
		processorhelper.WithCapabilities(processorCapabilities),
		processorhelper.WithStart(h.start),
		processorhelper.WithShutdown(h.shutdown))
}

func createMetrics(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	h := policies.acquire(cfg.(*Config), set)
	caps := processorCapabilities
	if h.policy.advice != nil {
		caps.MutatesData = true // advice is appended to the metrics
	}
	return processorhelper.NewMetrics(ctx, set, cfg, next, h.policy.processMetrics,
		processorhelper.WithCapabilities(caps),
		processorhelper.WithStart(h.start),
		processorhelper.WithShutdown(h.shutdown))
}

func createLogs(ctx context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	h := policies.acquire(cfg.(*Config), set)
	return processorhelper.NewLogs(ctx, set, cfg, next, h.policy.processLogs,
		processorhelper.WithCapabilities(processorCapabilities),
		processorhelper.WithStart(h.start),
		processorhelper.WithShutdown(h.shutdown))
}
