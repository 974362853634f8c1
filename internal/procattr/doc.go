// Package procattr answers "who is this process?" for the resource attributes
// the receiver attaches to its telemetry: process.pid, process.executable.name,
// container.id and k8s.pod.uid.
//
// Everything is read from a procfs tree whose root is configurable, because the
// collector usually runs in a container that sees the host's /proc mounted
// elsewhere (for example /host/proc), and because tests build fake trees.
//
// Container and pod identity come from the cgroup path alone (see
// ParseCgroup). That needs no container runtime socket and no Kubernetes API
// access; names and labels are left to the k8sattributes processor, which
// associates on k8s.pod.uid and container.id.
package procattr
