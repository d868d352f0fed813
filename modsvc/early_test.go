package modsvc

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thaw-dev/thaw/revision"
)

// TestEarlyBackends: on a server with Early, a module that asks
// (state.EarlyParam) gets a ready backend its Envoy has not ACKed marked
// unconfirmed, then the same backend unmarked after the ACK, with the
// same slots; a module that does not ask, or a server without Early, gets
// exactly the withheld form (no backend before the ACK, no field).
func TestEarlyBackends(t *testing.T) {
	type backend struct {
		Addr        string
		Slots       int32
		Unconfirmed bool
	}
	cases := []struct {
		name          string
		early         bool
		query         string
		before, after []backend
	}{
		{"asked", true, "&early=1",
			[]backend{{"127.0.0.1:81", 2, true}}, []backend{{"127.0.0.1:81", 2, false}}},
		{"not asked", true, "",
			nil, []backend{{"127.0.0.1:81", 2, false}}},
		{"server without early", false, "&early=1",
			nil, []backend{{"127.0.0.1:81", 2, false}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg, k := testRegistry(t, 2)
			conf := newFakeConfirmer()
			srv := httptest.NewServer(&Server{Registry: reg, Confirmer: conf, Early: tc.early})
			defer srv.Close()
			reg.SetBackends(k, []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}})
			resp, err := http.Get(srv.URL + StatePath + "?node=n1" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			read := updateReader(t, resp.Body)
			next := func() []backend {
				t.Helper()
				u := read()
				var out []backend
				for _, r := range u.Revisions {
					if r.Key == "ns/a" {
						for _, b := range r.Backends {
							out = append(out, backend(b))
						}
					}
				}
				return out
			}
			if diff := cmp.Diff(tc.before, next()); diff != "" {
				t.Errorf("before the ACK (-want +got):\n%s", diff)
			}
			conf.confirm(reg, k)
			if diff := cmp.Diff(tc.after, next()); diff != "" {
				t.Errorf("after the ACK (-want +got):\n%s", diff)
			}
		})
	}
}
