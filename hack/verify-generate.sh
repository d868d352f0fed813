#!/usr/bin/env bash
# Fails when the committed deepcopy code or CRD YAML differ from what
# controller-gen generates from api/ (and wake/'s policy types) now. Generates into a temporary
# directory; the work tree is never changed.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${CONTROLLER_GEN:?set by the Makefile}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
$CONTROLLER_GEN object paths=./wake output:object:dir="$tmp/wake"
$CONTROLLER_GEN object paths=./api/... crd:allowDangerousTypes=true paths=./api/... \
	output:object:dir="$tmp/obj" output:crd:dir="$tmp/crd"
status=0
diff -u wake/zz_generated.deepcopy.go "$tmp/wake/zz_generated.deepcopy.go" || status=1
diff -u api/v1alpha1/zz_generated.deepcopy.go "$tmp/obj/zz_generated.deepcopy.go" || status=1
diff -ru manifests/base/crd "$tmp/crd" -x kustomization.yaml || status=1
if [ "$status" != 0 ]; then
	echo "generated files are stale: run 'make generate' and commit the result" >&2
fi
exit "$status"
