module github.com/thaw-dev/thaw

go 1.26.0

require (
	go.uber.org/zap v1.28.0
	k8s.io/apimachinery v0.37.2
	k8s.io/utils v0.0.0-20260707023825-cf1189d6abe3
)

require (
	github.com/go-logr/logr v1.4.4 // indirect
	go.uber.org/multierr v1.10.0 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
)
