#!/usr/bin/env bash
# Placeholder: filled in by the foundation work on the Kubernetes test cluster.
set -euo pipefail
echo "kube tools: not built yet"
