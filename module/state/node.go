package state

import (
	"bytes"
	"strings"
)

// ServiceNode returns the node id given on Envoy's command line (args as
// in /proc/self/cmdline: NUL-separated) by --service-node VALUE or
// --service-node=VALUE, the last one if repeated, or "" if none.
//
// The module runs inside Envoy's process and the dynamic-module ABI
// exposes no node id, so a filter configuration without "node" (the same
// listener is sent to every Envoy of a fleet) identifies its Envoy this
// way: thaw's fleet manifests start each Envoy with
// --service-node=$(POD_NAME), the id Envoy's xDS stream carries.
func ServiceNode(cmdline []byte) string {
	const flag = "--service-node"
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	node := ""
	for i := 0; i < len(args); i++ {
		a := string(args[i])
		switch {
		case a == flag && i+1 < len(args):
			node = string(args[i+1])
			i++
		case strings.HasPrefix(a, flag+"="):
			node = a[len(flag)+1:]
		}
	}
	return node
}
