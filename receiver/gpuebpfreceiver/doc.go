// Package gpuebpfreceiver traces CUDA work with eBPF and turns it into OTLP.
package gpuebpfreceiver

//go:generate go tool mdatagen metadata.yaml
