package extproc

import (
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"
)

func TestRouteCacheKeepsRecentlyUsedPastTheBound(t *testing.T) {
	const size = 8
	c := newRouteCache(size)
	hot := c.to("127.0.0.1:1", false)
	// Many more addresses than the bound, the hot one used between each.
	for i := range 10 * size {
		c.to(fmt.Sprintf("127.0.1.%d:80", i), i%2 == 0)
		if got := c.to("127.0.0.1:1", false); got != hot {
			t.Fatalf("after %d other addresses the hot address's answer was rebuilt", i+1)
		}
	}
	if n := c.lru.Len(); n > size {
		t.Fatalf("cache holds %d addresses, bound %d", n, size)
	}
	// The oldest cold address was evicted: its answer is built anew, and
	// equal to the first.
	first := routeTo("127.0.1.0:80", true)
	if got := c.to("127.0.1.0:80", true); !proto.Equal(got, first) {
		t.Fatalf("rebuilt answer = %v, want %v", got, first)
	}
}

func TestRouteCacheAnswers(t *testing.T) {
	c := newRouteCache(4)
	for _, short := range []bool{false, true} {
		got := c.to("10.0.0.1:8080", short)
		if want := routeTo("10.0.0.1:8080", short); !proto.Equal(got, want) {
			t.Errorf("short=%v: answer = %v, want %v", short, got, want)
		}
		if again := c.to("10.0.0.1:8080", short); again != got {
			t.Errorf("short=%v: second lookup built a new answer", short)
		}
	}
}

func TestRouteCacheConcurrent(t *testing.T) {
	c := newRouteCache(16)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 500 {
				addr := fmt.Sprintf("127.0.2.%d:80", (i*7+g)%40)
				if got := c.to(addr, i%3 == 0); got == nil {
					t.Errorf("%s: nil answer", addr)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := c.lru.Len(); n > 16 {
		t.Fatalf("cache holds %d addresses, bound 16", n)
	}
}
