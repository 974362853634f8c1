package uvm

import (
	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-gpu/otelcol-gpu/receiver/gpuebpfreceiver/internal/uvm/internal/metadata"
)

// Factory names this source and makes its default configuration. The
// source is not a component of its own (the gpuebpf receiver runs it), so
// the factory has nothing to create; it exists so that what mdatagen's
// generated tests check (type, configuration struct) has one place.
type Factory struct{}

// NewFactory returns the source's factory.
func NewFactory() Factory { return Factory{} }

// Type is the source's type, "uvm".
func (Factory) Type() component.Type { return metadata.Type }

// CreateDefaultConfig returns a *Config holding NewDefaultConfig.
func (Factory) CreateDefaultConfig() component.Config {
	cfg := NewDefaultConfig()
	return &cfg
}
