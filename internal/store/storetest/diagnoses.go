package storetest

import (
	"errors"
	"testing"

	"github.com/anvil-metal/anvil/internal/store"
)

// testDiagnoses: a node's diagnosis is put, replaced by the next, got
// back byte for byte, refused for an unknown node and removed with the
// node.
func testDiagnoses(t *testing.T, su suite) {
	s := su.fresh(t)
	ctx := t.Context()
	n := mustCreateNode(t, s, newNode("diag"))
	other := mustCreateNode(t, s, newNode("other"))
	if _, err := s.Diagnoses().GetDiagnosis(ctx, n.UUID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("no diagnosis yet: %v, want ErrNotFound", err)
	}
	if err := s.Diagnoses().PutDiagnosis(ctx, "00000000-0000-0000-0000-000000000000", []byte(`{}`)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("diagnosis of an unknown node: %v, want ErrNotFound", err)
	}
	first, second := []byte(`{"class":"bmc-unreachable","console_tail":"é\u001b[0m"}`), []byte(`{"class":"callback-timeout"}`)
	wantErr(t, "put", s.Diagnoses().PutDiagnosis(ctx, n.UUID, first), nil)
	wantErr(t, "put other", s.Diagnoses().PutDiagnosis(ctx, other.UUID, first), nil)
	if got, err := s.Diagnoses().GetDiagnosis(ctx, n.UUID); err != nil || string(got) != string(first) {
		t.Fatalf("get = %s, %v; want %s", got, err, first)
	}
	wantErr(t, "replace", s.Diagnoses().PutDiagnosis(ctx, n.UUID, second), nil)
	if got, err := s.Diagnoses().GetDiagnosis(ctx, n.UUID); err != nil || string(got) != string(second) {
		t.Fatalf("after replace = %s, %v; want %s", got, err, second)
	}
	wantErr(t, "delete node", s.Nodes().DeleteNode(ctx, n.UUID), nil)
	if _, err := s.Diagnoses().GetDiagnosis(ctx, n.UUID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("diagnosis of a deleted node: %v, want ErrNotFound", err)
	}
	if got, err := s.Diagnoses().GetDiagnosis(ctx, other.UUID); err != nil || string(got) != string(first) {
		t.Fatalf("another node's diagnosis after the delete: %s, %v", got, err)
	}
}
