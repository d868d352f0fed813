package harness

import (
	"fmt"
	"os"
)

// kwok simulates kubelets with "stages": a selector over a Node or Pod (jq
// expressions) and a status template applied when it matches. kwok ships no
// stages in its binary, so the harness writes its own config:
//
//   - thaw-node-ready: a new node becomes Ready with room for many pods;
//   - thaw-pod-run: a scheduled, Pending pod becomes Running with an IP from
//     its node's spec.podCIDR (127.8.<i>.0/24). Whether it is also Ready
//     depends on ClusterOptions.ImmediateReady: by default it is not, and
//     the PodRunner marks it Ready once it serves HTTP on the pod IP, the way
//     a kubelet readiness probe would;
//   - thaw-pod-delete: a pod with a deletionTimestamp is deleted at once
//     (grace period 0), as if its containers exited on SIGTERM.
//
// Node leases are renewed by kwok itself (--node-lease-duration-seconds).

// nodeReadyStage makes a node Ready and gives it capacity.
const nodeReadyStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: thaw-node-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: NotIn
      values: ["True"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - type: Ready
        status: "True"
        reason: KubeletReady
        message: simulated by kwok for thaw e2e
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      - type: MemoryPressure
        status: "False"
        reason: KubeletHasSufficientMemory
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      - type: DiskPressure
        status: "False"
        reason: KubeletHasNoDiskPressure
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      - type: PIDPressure
        status: "False"
        reason: KubeletHasSufficientPID
        lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      addresses:
      - type: InternalIP
        address: {{ NodeIP | Quote }}
      - type: Hostname
        address: {{ .metadata.name | Quote }}
      allocatable: {cpu: "1000", memory: 1Ti, pods: "1000"}
      capacity: {cpu: "1000", memory: 1Ti, pods: "1000"}
      nodeInfo:
        architecture: amd64
        operatingSystem: linux
        kubeletVersion: {{ printf "kwok-%s" Version | Quote }}
        containerRuntimeVersion: {{ printf "kwok-%s" Version | Quote }}
        kernelVersion: ""
        kubeProxyVersion: ""
        osImage: ""
        machineID: ""
        systemUUID: ""
        bootID: ""
      phase: Running
`

// podRunStageFormat makes a scheduled Pending pod Running with a pod IP. Its
// one verb is the status ("True" or "False") of Ready and ContainersReady.
const podRunStageFormat = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: thaw-pod-run
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: DoesNotExist
    - key: '.spec.nodeName'
      operator: Exists
    - key: '.status.phase'
      operator: In
      values: ["Pending"]
  next:
    statusTemplate: |
      {{ $now := Now }}
      {{ $ready := %[1]q }}
      conditions:
      - type: Initialized
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      - type: ContainersReady
        status: {{ $ready | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      - type: Ready
        status: {{ $ready | Quote }}
        lastTransitionTime: {{ $now | Quote }}
      {{ range .spec.readinessGates }}
      - type: {{ .conditionType | Quote }}
        status: "True"
        lastTransitionTime: {{ $now | Quote }}
      {{ end }}
      containerStatuses:
      {{ range .spec.containers }}
      - name: {{ .name | Quote }}
        image: {{ .image | Quote }}
        ready: {{ eq $ready "True" }}
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      hostIP: {{ NodeIP | Quote }}
      hostIPs:
      - ip: {{ NodeIP | Quote }}
      {{ with PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
`

// podDeleteStage deletes terminating pods at once.
const podDeleteStage = `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: thaw-pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: Exists
  next:
    delete: true
`

// writeKwokConfig writes the stage config to path. immediateReady selects
// whether thaw-pod-run marks pods Ready itself.
func writeKwokConfig(path string, immediateReady bool) error {
	ready := "False"
	if immediateReady {
		ready = "True"
	}
	cfg := nodeReadyStage + "---\n" + fmt.Sprintf(podRunStageFormat, ready) + "---\n" + podDeleteStage
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("write kwok config: %w", err)
	}
	return nil
}
