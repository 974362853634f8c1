package cudaprobe

import ev "github.com/otelcol-gpu/otelcol-gpu/internal/gpuevent"

func apisForTest() []ev.API { return ev.APIs() }
