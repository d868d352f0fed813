//go:build e2e

package e2e

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestKubeRevisionSplitFleet: `thaw run` on the real control plane with a
// real Envoy (no Envoy Gateway) routes a RevisionSplit with spec.hosts:
//
//   - shop.example.com 90/10 over two Revisions without hosts of their
//     own, measured over 600 requests within ±4 points; the 10% Revision
//     starts at zero and wakes on its share (no request fails); the
//     RevisionSplit's status lists its hosts and tag hosts;
//   - a 0% member (reachable only by its tag, never asked) never wakes:
//     no pod, its Deployment stays at 0 replicas;
//   - a percent change (90/10 to 50/50) under load fails no request and
//     moves the shares;
//   - the split wins over a Revision listing its host, and that
//     Revision's Ready says so (HostTakenBySplit) with a Normal Event;
//   - an invalid split (a missing Revision; another naming a Revision of
//     the first split) answers 404 on its own hosts with a status
//     condition, a Warning Event, a log line and thaw_xds_skipped_splits,
//     while the good split keeps serving;
//   - a split the registry accepts whose member the Envoy translation
//     leaves out (its per-Revision traffic.percent on another host sums
//     to 90) is Ready False RevisionNotRouted with the translation's
//     reason and a Warning Event, and its host answers 404; that member
//     Revision itself is Ready False NotRouted with the same reason and
//     a Warning Event.
func TestKubeRevisionSplitFleet(t *testing.T) {
	env := startKubeEnvWith(t, harness.PodRunnerOptions{StartupDelay: 200 * time.Millisecond})
	c := env.Cluster
	const ns = "fleet"
	dyn := revisionNamespace(t, env, ns)
	revs := dyn.Resource(v1alpha1.RevisionsResource).Namespace(ns)
	splits := dyn.Resource(v1alpha1.RevisionSplitsResource).Namespace(ns)
	names := map[string]int32{"shop-v1": 1, "shop-v2": 0, "shop-v0": 0, "other": 1, "odd": 0}
	for name, replicas := range names {
		if _, err := c.Client.AppsV1().Deployments(ns).Create(t.Context(), smokeDeployment(ns, name, 8080, replicas), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		spec := map[string]any{"scaleTargetRef": deployRef(name), "port": 8080}
		if name == "other" {
			// lists the split's host: the split wins, other keeps its own
			spec["hosts"] = []any{"other.example.com", "shop.example.com"}
		}
		if name == "odd" {
			// alone at 90% on its host: an invalid per-Revision split that
			// only the translation sees, so it leaves odd out
			spec["hosts"] = []any{"odd.example.com"}
			spec["traffic"] = map[string]any{"percent": int64(90)}
		}
		createRevision(t, revs, ns, name, spec)
	}
	mkSplit := func(name string, hosts []any, traffic ...any) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": v1alpha1.RevisionSplitKind,
			"metadata": map[string]any{"namespace": ns, "name": name},
			"spec":     map[string]any{"hosts": hosts, "traffic": traffic},
		}}
		if _, err := splits.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create RevisionSplit %s: %v", name, err)
		}
	}
	entry := func(name string, percent int64, tag string) map[string]any {
		e := map[string]any{"revisionName": name, "percent": percent}
		if tag != "" {
			e["tag"] = tag
		}
		return e
	}
	mkSplit("shop", []any{"shop.example.com"}, entry("shop-v1", 90, ""), entry("shop-v2", 10, "canary"), entry("shop-v0", 0, "previous"))
	mkSplit("ghost", []any{"ghost.example.com"}, entry("shop-nope", 100, ""))
	// Created after shop (creationTimestamp has whole seconds): the
	// conflict is dup's, though its name sorts first.
	time.Sleep(1100 * time.Millisecond)
	mkSplit("dup", []any{"dup.example.com"}, entry("shop-v1", 100, ""))
	mkSplit("lost", []any{"lost.example.com"}, entry("odd", 100, ""))

	run, proxy, th := startThawRunEnvoy(t, thawKubeconfig(t, c), thawRunEnvoyOptions{})

	shop := waitSplit(t, splits, "shop", v1alpha1.ReasonResolved, 1)
	if want := []string{"shop.example.com", "canary-shop.example.com", "previous-shop.example.com"}; !slices.Equal(shop.Status.Hosts, want) {
		t.Errorf("shop status.hosts %v, want %v", shop.Status.Hosts, want)
	}
	if c := meta.FindStatusCondition(shop.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "shop.example.com (fleet/other)") {
		t.Errorf("shop Ready %q does not name the host it takes from Revision other", c.Message)
	}
	waitEvent(t, c.Client, ns, "shop", v1alpha1.ReasonResolved, "takes these hosts", "shop.example.com (fleet/other)")
	ghost := waitSplit(t, splits, "ghost", v1alpha1.ReasonRevisionNotFound, 1)
	if c := meta.FindStatusCondition(ghost.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "shop-nope") || len(ghost.Status.Hosts) != 0 {
		t.Errorf("ghost Ready %q, hosts %v; want the missing Revision named and no hosts", c.Message, ghost.Status.Hosts)
	}
	dup := waitSplit(t, splits, "dup", v1alpha1.ReasonSplitConflict, 1)
	if c := meta.FindStatusCondition(dup.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "member of split fleet/shop") {
		t.Errorf("dup Ready %q, want the conflict with fleet/shop named", c.Message)
	}
	// The Revision whose host the split takes says so.
	waitRevisionStatus(t, revs, "other", "Ready HostTakenBySplit naming the split", func(st v1alpha1.RevisionStatus) bool {
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.ReasonHostTakenBySplit &&
			strings.Contains(c.Message, "shop.example.com (RevisionSplit fleet/shop)")
	})
	waitEvent(t, c.Client, ns, "other", v1alpha1.ReasonHostTakenBySplit, "shop.example.com (RevisionSplit fleet/shop)")
	// The translation's verdict reaches the status of a split the
	// registry accepts.
	lost := waitSplit(t, splits, "lost", v1alpha1.ReasonRevisionNotRouted, 1)
	if c := meta.FindStatusCondition(lost.Status.Conditions, v1alpha1.ConditionReady); c.Status != metav1.ConditionFalse ||
		!strings.Contains(c.Message, "odd (100%): left out of Envoy configuration") || !strings.Contains(c.Message, "percents sum to 90") ||
		len(lost.Status.Hosts) != 0 || len(lost.Status.Traffic) != 1 || lost.Status.Traffic[0].Reason != v1alpha1.ReasonRevisionNotRouted {
		t.Errorf("lost Ready %s %q, hosts %v, traffic %+v; want False naming odd and the translation's reason, no hosts",
			c.Status, c.Message, lost.Status.Hosts, lost.Status.Traffic)
	}
	// The Revision the translation leaves out says so in its own status
	// (not only in `thaw status`).
	waitRevisionStatus(t, revs, "odd", "Ready False NotRouted with the translation's reason", func(st v1alpha1.RevisionStatus) bool {
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.ReasonNotRouted && strings.Contains(c.Message, "sum to 90")
	})
	waitEvent(t, c.Client, ns, "odd", v1alpha1.ReasonNotRouted, "sum to 90")
	waitEnvoyRoutes(t, proxy, revision.Key{Namespace: ns, Name: "other"})
	// The split's virtual host in Envoy (no request yet: one would wake
	// shop-v2 on its share before the check that it starts at zero).
	wantVH := strconv.Quote(translate.SplitVirtualHostName([]string{"shop.example.com"}))
	if err := pollFor(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		out, _, err := proxy.Admin(ctx, "/config_dump?resource=dynamic_route_configs")
		return err == nil && strings.Contains(out, wantVH)
	}); err != nil {
		t.Fatalf("Envoy never received virtual host %s: %v", wantVH, err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cl := client(30 * time.Second)
	// The split's virtual host reaches Envoy with the Resolved status
	// (both follow one registry snapshot); wait for the first answer.
	waitAnswer := func(host, want string) {
		t.Helper()
		var code int
		var body string
		for range 100 {
			code, body, _, _ = get(ctx, cl, th, host, "/")
			if code == 200 && strings.HasPrefix(body, want) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: last answer %d %q, want 200 from %s", host, code, body, want)
	}
	waitAnswer("other.example.com", ns+"/other-")

	for pod := range env.Runner.Stats() {
		if strings.HasPrefix(pod, ns+"/shop-v2-") {
			t.Fatalf("the 10%% member shop-v2 has a pod before the load (%s): it must start at zero", pod)
		}
	}
	const n = 600
	counts, failed, fails := fleetLoad(ctx, th, "shop.example.com", n, 10)
	t.Logf("%d requests to shop.example.com: %v, %d failed", n, counts, failed)
	if failed > 0 {
		t.Fatalf("%d of %d requests failed, first: %v", failed, n, fails)
	}
	if counts["shop-v1"]+counts["shop-v2"] != n {
		t.Errorf("answers by Revision %v, want only shop-v1 and shop-v2 (the split wins over other's host)", counts)
	}
	// 10% ± 4 points of 600: 36..84 (more than 3.5 standard deviations).
	if v2 := counts["shop-v2"]; v2 < 36 || v2 > 84 {
		t.Errorf("the 10%% Revision answered %d of %d, want 60 ± 24", v2, n)
	}
	for range 5 {
		if code, body, _, err := get(ctx, cl, th, "canary-shop.example.com", "/"); err != nil || code != 200 || !strings.HasPrefix(body, ns+"/shop-v2-") {
			t.Fatalf("tag host canary-shop.example.com: %d %q %v, want shop-v2", code, body, err)
		}
	}
	// A percent change re-translates the split without a failed request.
	type loadResult struct {
		counts map[string]int
		failed int
		fails  []string
	}
	during := make(chan loadResult, 1)
	go func() {
		c, f, fs := fleetLoad(ctx, th, "shop.example.com", 400, 10)
		during <- loadResult{c, f, fs}
	}()
	time.Sleep(100 * time.Millisecond)
	patch := []byte(`{"spec":{"traffic":[{"revisionName":"shop-v1","percent":50},{"revisionName":"shop-v2","percent":50,"tag":"canary"},{"revisionName":"shop-v0","percent":0,"tag":"previous"}]}}`)
	if _, err := splits.Patch(ctx, "shop", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := <-during; r.failed > 0 {
		t.Fatalf("%d of 400 requests failed during the percent change, first: %v", r.failed, r.fails)
	} else {
		t.Logf("400 requests during the change to 50/50: %v", r.counts)
	}
	waitSplit(t, splits, "shop", v1alpha1.ReasonResolved, 2)
	counts, failed, fails = fleetLoad(ctx, th, "shop.example.com", 300, 10)
	t.Logf("300 requests after the change to 50/50: %v, %d failed", counts, failed)
	// 50% ± 12 points of 300: 114..186 (more than 4 standard deviations).
	if v2 := counts["shop-v2"]; failed > 0 || v2 < 114 || v2 > 186 {
		t.Errorf("after 50/50: shop-v2 answered %d of 300 (%d failed: %v), want 150 ± 36", v2, failed, fails)
	}
	for _, host := range []string{"ghost.example.com", "dup.example.com", "lost.example.com"} {
		if code, _, _, err := get(ctx, cl, th, host, "/"); err != nil || code != 404 {
			t.Errorf("%s (invalid split): %d %v, want 404", host, code, err)
		}
	}
	waitSplitEvents(t, env, ns, map[string]string{"ghost": v1alpha1.ReasonRevisionNotFound, "dup": v1alpha1.ReasonSplitConflict,
		"lost": v1alpha1.ReasonRevisionNotRouted})
	if m := metricsText(t, th); !strings.Contains(m, "thaw_xds_skipped_splits 3\n") {
		t.Errorf("thaw_xds_skipped_splits: %q, want 3", grepLines(m, "thaw_xds_skipped_splits"))
	}
	if log, err := os.ReadFile(run.proc.LogPath()); err != nil || !strings.Contains(string(log), "traffic split left out of Envoy configuration") {
		t.Errorf("thaw log lacks the skipped splits (err %v)", err)
	}
	// The 0% member was never asked: no pod, no replica.
	d, err := c.Client.AppsV1().Deployments(ns).Get(t.Context(), "shop-v0", metav1.GetOptions{})
	if err != nil || *d.Spec.Replicas != 0 {
		t.Errorf("shop-v0 Deployment: %v replicas, err %v; want 0 (a 0%% member never wakes)", d.Spec.Replicas, err)
	}
	for pod := range env.Runner.Stats() {
		if strings.HasPrefix(pod, ns+"/shop-v0-") {
			t.Errorf("the 0%% member shop-v0 had a pod: %s", pod)
		}
	}
}

// fleetLoad sends n GET / to host from conc workers (tallyByBackend)
// and counts the answers by Deployment (the pod runner answers
// "<namespace>/<pod>").
func fleetLoad(ctx context.Context, th *harness.Thaw, host string, n, conc int) (counts map[string]int, failed int, fails []string) {
	return tallyByBackend(ctx, th, host, n, conc, func(body string) string {
		_, pod, _ := strings.Cut(strings.TrimSpace(body), "/")
		dep := ""
		for _, d := range []string{"shop-v1", "shop-v2", "shop-v0", "other"} {
			if strings.HasPrefix(pod, d+"-") {
				dep = d
			}
		}
		return dep
	})
}
