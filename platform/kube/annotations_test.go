package kube

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/thaw-dev/thaw/revision"
)

func TestParseSpec(t *testing.T) {
	template := &corev1.PodSpec{Containers: []corev1.Container{
		{Name: "sidecar"},
		{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {ContainerPort: 8080}}},
	}}
	tests := []struct {
		name        string
		annotations map[string]string
		template    *corev1.PodSpec
		check       func(t *testing.T, s revision.Spec)
		wantFields  []string
	}{
		{
			name:        "hosts trimmed and lowercased, port from the first TCP container port",
			annotations: map[string]string{AnnotationHosts: " Hello.Example.com , ,hello "},
			template:    template,
			check: func(t *testing.T, s revision.Spec) {
				if !slices.Equal(s.Hosts, []string{"hello.example.com", "hello"}) || s.Port != 8080 {
					t.Errorf("hosts %v port %d", s.Hosts, s.Port)
				}
			},
		},
		{
			name:        "port annotation wins",
			annotations: map[string]string{AnnotationHosts: "a", AnnotationPort: "9000"},
			template:    template,
			check: func(t *testing.T, s revision.Spec) {
				if s.Port != 9000 {
					t.Errorf("port %d, want 9000", s.Port)
				}
			},
		},
		{
			name:        "no port anywhere: per-pod ports",
			annotations: map[string]string{AnnotationHosts: "a"},
			template:    &corev1.PodSpec{},
			check: func(t *testing.T, s revision.Spec) {
				if s.Port != 0 {
					t.Errorf("port %d, want 0", s.Port)
				}
			},
		},
		{
			name: "thaw and knative settings, thaw wins; other annotations ignored",
			annotations: map[string]string{
				AnnotationHosts:                             "a",
				revision.ThawPrefix + revision.KeyTarget:    "10",
				revision.KnativePrefix + revision.KeyTarget: "50",
				revision.KnativePrefix + "maxScale":         "5",
				revision.KnativePrefix + revision.KeyWindow: "30s",
				"deployment.kubernetes.io/revision":         "3",
				"kubectl.kubernetes.io/last-applied":        "{}",
			},
			check: func(t *testing.T, s revision.Spec) {
				if s.Target != 10 || s.MaxScale != 5 || s.StableWindow != 30*time.Second {
					t.Errorf("target %v max %d window %v", s.Target, s.MaxScale, s.StableWindow)
				}
			},
		},
		{
			name:        "empty hosts",
			annotations: map[string]string{AnnotationHosts: " , "},
			wantFields:  []string{AnnotationHosts},
		},
		{
			name:        "bad port",
			annotations: map[string]string{AnnotationHosts: "a", AnnotationPort: "70000"},
			wantFields:  []string{AnnotationPort},
		},
		{
			name: "every bad setting named as written",
			annotations: map[string]string{
				AnnotationHosts: "a",
				revision.ThawPrefix + revision.KeyTargetUtilization: "150",
				revision.KnativePrefix + "minScale":                 "x",
				revision.ThawPrefix + "no-such-setting":             "1",
			},
			wantFields: []string{
				revision.KnativePrefix + "minScale",
				revision.ThawPrefix + revision.KeyTargetUtilization,
				revision.ThawPrefix + "no-such-setting",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := parseSpec(revision.DefaultSpec(), revision.Limits{}, tt.annotations, tt.template)
			if len(tt.wantFields) == 0 {
				if err != nil {
					t.Fatalf("parseSpec: %v", err)
				}
				tt.check(t, spec)
				return
			}
			if err == nil {
				t.Fatalf("parseSpec = %+v, want an error", spec)
			}
			if !errors.Is(err, revision.ErrInvalidSpec) {
				t.Errorf("error %v does not wrap ErrInvalidSpec", err)
			}
			got := fieldsOf(err)
			slices.Sort(got)
			want := slices.Clone(tt.wantFields)
			slices.Sort(want)
			if !slices.Equal(slices.Compact(got), want) {
				t.Errorf("fields %v, want %v (error %v)", got, want, err)
			}
			msg := describeError(err)
			for _, f := range want {
				if !strings.Contains(msg, f) {
					t.Errorf("event message %q does not name %s", msg, f)
				}
			}
			if !strings.Contains(msg, "want ") {
				t.Errorf("event message %q does not give the allowed values", msg)
			}
		})
	}
}

func TestPickWinner(t *testing.T) {
	d := fromDeployment(deployment("a", 1, hosts("a")))
	s := fromStatefulSet(statefulSet("a", 1, hosts("a")))
	if w, l := pickWinner(d, s); w != d || l != s {
		t.Errorf("same creation time: winner %v, want the Deployment", w.kind)
	}
	d.created.Time = time.Unix(200, 0)
	s.created.Time = time.Unix(100, 0)
	if w, l := pickWinner(d, s); w != s || l != d {
		t.Errorf("older StatefulSet: winner %v, want the StatefulSet", w.kind)
	}
	if w, l := pickWinner(nil, s); w != s || l != nil {
		t.Errorf("only StatefulSet: %v %v", w, l)
	}
	if w, l := pickWinner(nil, nil); w != nil || l != nil {
		t.Errorf("none: %v %v", w, l)
	}
}

func TestSelectorOf(t *testing.T) {
	if _, err := selectorOf(nil); err == nil {
		t.Error("nil selector accepted")
	}
	d := deployment("a", 1, nil)
	sel, err := selectorOf(d.Spec.Selector)
	if err != nil || !sel.Matches(labelSet(labelsFor("a"))) || sel.Matches(labelSet(labelsFor("b"))) {
		t.Errorf("selector %v, err %v", sel, err)
	}
}

func TestPortProtocol(t *testing.T) {
	tmpl := func(ports ...corev1.ContainerPort) *corev1.PodSpec {
		return &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: ports}}}
	}
	tests := []struct {
		name string
		spec *corev1.PodSpec
		port int32
		want revision.Protocol
	}{
		{"nil template", nil, 8080, ""},
		{"unnamed port", tmpl(corev1.ContainerPort{ContainerPort: 8080}), 8080, ""},
		{"name grpc", tmpl(corev1.ContainerPort{ContainerPort: 9000, Name: "grpc"}), 9000, revision.ProtocolH2C},
		{"name h2c-api", tmpl(corev1.ContainerPort{ContainerPort: 9000, Name: "h2c-api"}), 9000, revision.ProtocolH2C},
		{"name http2", tmpl(corev1.ContainerPort{ContainerPort: 9000, Name: "http2"}), 0, revision.ProtocolH2C},
		{"name http1", tmpl(corev1.ContainerPort{ContainerPort: 9000, Name: "http1"}), 9000, revision.ProtocolHTTP1},
		{"other port named grpc", tmpl(corev1.ContainerPort{ContainerPort: 9000, Name: "grpc"}, corev1.ContainerPort{ContainerPort: 8080}), 8080, ""},
		{"udp skipped", tmpl(corev1.ContainerPort{ContainerPort: 9000, Name: "grpc", Protocol: corev1.ProtocolUDP}), 9000, ""},
		{"name grpcweb is not grpc", tmpl(corev1.ContainerPort{ContainerPort: 9000, Name: "grpcweb"}), 9000, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := portProtocol(tt.spec, tt.port); got != tt.want {
				t.Errorf("portProtocol = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseSpecProtocolSettingWins(t *testing.T) {
	tmpl := &corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Ports: []corev1.ContainerPort{{ContainerPort: 9000, Name: "grpc"}}}}}
	base := revision.DefaultSpec()
	spec, err := parseSpec(base, revision.Limits{}, map[string]string{AnnotationHosts: "a.example.com"}, tmpl)
	if err != nil || spec.Protocol != revision.ProtocolH2C {
		t.Fatalf("from port name: protocol %q, err %v; want h2c", spec.Protocol, err)
	}
	spec, err = parseSpec(base, revision.Limits{}, map[string]string{AnnotationHosts: "a.example.com", revision.ThawPrefix + revision.KeyProtocol: "http1"}, tmpl)
	if err != nil || spec.Protocol != revision.ProtocolHTTP1 {
		t.Fatalf("setting: protocol %q, err %v; want http1", spec.Protocol, err)
	}
	_, err = parseSpec(base, revision.Limits{}, map[string]string{AnnotationHosts: "a.example.com", revision.ThawPrefix + revision.KeyProtocol: "h3"}, tmpl)
	if err == nil || !strings.Contains(err.Error(), revision.ThawPrefix+revision.KeyProtocol) {
		t.Fatalf("bad protocol: err %v, want an error naming the annotation", err)
	}
}
