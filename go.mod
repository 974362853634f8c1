module github.com/otelcol-gpu/otelcol-gpu

go 1.26.8

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/cilium/ebpf v0.20.0
	github.com/google/go-cmp v0.7.0
	github.com/ianlancetaylor/demangle v0.0.0-20260724033716-83e58baca724
	github.com/stretchr/testify v1.11.1
	go.opentelemetry.io/collector/component v1.61.0
	go.opentelemetry.io/collector/component/componentstatus v0.155.0
	go.opentelemetry.io/collector/component/componenttest v0.155.0
	go.opentelemetry.io/collector/confmap v1.61.0
	go.opentelemetry.io/collector/consumer v1.61.0
	go.opentelemetry.io/collector/consumer/consumertest v0.155.0
	go.opentelemetry.io/collector/filter v0.155.0
	go.opentelemetry.io/collector/pdata v1.61.0
	go.opentelemetry.io/collector/processor v1.61.0
	go.opentelemetry.io/collector/processor/processorhelper v0.155.0
	go.opentelemetry.io/collector/processor/processortest v0.155.0
	go.opentelemetry.io/collector/receiver v1.61.0
	go.opentelemetry.io/collector/receiver/receivertest v0.155.0
	go.opentelemetry.io/otel v1.44.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.28.0
	go.yaml.in/yaml/v3 v3.0.4
	golang.org/x/sys v0.46.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/davecgh/go-spew v1.1.2-0.20180830191138-d8f796af33cc // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/go-viper/mapstructure/v2 v2.5.0 // indirect
	github.com/gobwas/glob v0.2.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-version v1.9.0 // indirect
	github.com/inconshreveable/mousetrap v1.1.0 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/knadh/koanf/maps v0.1.2 // indirect
	github.com/knadh/koanf/providers/confmap v1.0.0 // indirect
	github.com/knadh/koanf/v2 v2.3.5 // indirect
	github.com/mitchellh/copystructure v1.2.0 // indirect
	github.com/mitchellh/reflectwalk v1.0.2 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/pmezard/go-difflib v1.0.1-0.20181226105442-5d4384ee4fb2 // indirect
	github.com/spf13/cobra v1.10.2 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/collector/cmd/mdatagen v0.155.0 // indirect
	go.opentelemetry.io/collector/confmap/provider/fileprovider v1.61.0 // indirect
	go.opentelemetry.io/collector/consumer/consumererror v0.155.0 // indirect
	go.opentelemetry.io/collector/consumer/xconsumer v0.155.0 // indirect
	go.opentelemetry.io/collector/featuregate v1.61.0 // indirect
	go.opentelemetry.io/collector/internal/componentalias v0.155.0 // indirect
	go.opentelemetry.io/collector/internal/schemagen v0.155.0 // indirect
	go.opentelemetry.io/collector/pdata/pprofile v0.155.0 // indirect
	go.opentelemetry.io/collector/pdata/testdata v0.155.0 // indirect
	go.opentelemetry.io/collector/pipeline v1.61.0 // indirect
	go.opentelemetry.io/collector/processor/xprocessor v0.155.0 // indirect
	go.opentelemetry.io/collector/receiver/xreceiver v0.155.0 // indirect
	go.opentelemetry.io/otel/metric v1.44.0 // indirect
	go.opentelemetry.io/otel/sdk v1.44.0 // indirect
	go.opentelemetry.io/otel/sdk/metric v1.44.0 // indirect
	go.opentelemetry.io/otel/trace v1.44.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/mod v0.37.0 // indirect
	golang.org/x/sync v0.21.0 // indirect
	golang.org/x/text v0.38.0 // indirect
	golang.org/x/tools v0.46.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260526163538-3dc84a4a5aaa // indirect
	google.golang.org/grpc v1.81.1 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

tool (
	github.com/cilium/ebpf/cmd/bpf2go
	go.opentelemetry.io/collector/cmd/mdatagen
)
