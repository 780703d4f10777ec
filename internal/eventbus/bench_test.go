package eventbus

import (
	"context"
	"testing"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
	"github.com/anvil-metal/anvil/pkg/events"
)

// nopStore answers node writes at once, so that a benchmark measures the
// decorator and the broker only.
type nopStore struct{ store.Store }

func (nopStore) Nodes() store.NodeStore { return nopNodes{} }

type nopNodes struct{ store.NodeStore }

func (nopNodes) UpdateNode(context.Context, *model.Node) error { return nil }
func (nopNodes) CreateNode(context.Context, *model.Node) error { return nil }

// BenchmarkPublishUpdate: one node update through the decorator to the
// in-process broker with one reader (the single-process path), per op.
func BenchmarkPublishUpdate(b *testing.B) {
	br := NewBroker(Config{SubscriberBuffer: 1 << 20})
	defer br.Close()
	st := Store(nopStore{}, br)
	n := &model.Node{UUID: "1be26c0b-03f2-4d2e-ae87-c02d7f33c123", Name: "n", ProvisionState: "available"}
	if err := st.Nodes().CreateNode(context.Background(), n); err != nil {
		b.Fatal(err)
	}
	sub := br.Subscribe(events.Filter{})
	defer sub.Close()
	var buf []events.Event
	states := []string{"deploying", "active"}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		n.Version++
		n.ProvisionState = states[i%2]
		if err := st.Nodes().UpdateNode(context.Background(), n); err != nil {
			b.Fatal(err)
		}
		if i%64 == 63 {
			buf, _, _ = sub.Take(buf[:0])
		}
	}
}
