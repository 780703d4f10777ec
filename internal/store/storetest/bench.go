package storetest

import (
	"fmt"
	"testing"

	"github.com/google/uuid"

	"github.com/anvil-metal/anvil/internal/model"
	"github.com/anvil-metal/anvil/internal/store"
)

// BenchNode is a node of realistic size for benchmarks: driver info,
// properties, interfaces, traits, extra.
func BenchNode(i int) *model.Node {
	return &model.Node{
		UUID: uuid.NewString(), Name: fmt.Sprintf("node-%06d", i), Driver: "redfish",
		DriverInfo: model.JSON{"redfish_address": "https://10.0.0.1", "redfish_username": "admin",
			"redfish_password": "secret", "redfish_system_id": "/redfish/v1/Systems/1"},
		Properties: model.JSON{"cpus": 64.0, "memory_mb": 262144.0, "local_gb": 1800.0,
			"cpu_arch": "x86_64", "capabilities": "boot_mode:uefi"},
		Interfaces: model.Interfaces{Boot: "ipxe", Deploy: "direct", Management: "redfish",
			Power: "redfish", Network: "flat", Inspect: "agent"},
		ResourceClass: "baremetal", ProvisionState: "available", PowerState: "power off",
		Traits: []string{"CUSTOM_GPU", "HW_CPU_X86_AVX2"},
		Extra:  model.JSON{"rack": "r12", "unit": 7.0},
	}
}

// BenchCreateNode measures CreateNode of BenchNodes on s.
func BenchCreateNode(b *testing.B, s store.Store) {
	i := 0
	for b.Loop() {
		if err := s.Nodes().CreateNode(b.Context(), BenchNode(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchCreateNodeParallel measures CreateNode from GOMAXPROCS goroutines.
func BenchCreateNodeParallel(b *testing.B, s store.Store) {
	b.SetParallelism(8) // 16 writers on 2 cores, as the HTTP benchmark's clients
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := BenchNode(0)
			n.Name = n.UUID
			if err := s.Nodes().CreateNode(b.Context(), n); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchListNodes measures listing count BenchNodes, all fields decoded.
func BenchListNodes(b *testing.B, s store.Store, count int) {
	for i := range count {
		if err := s.Nodes().CreateNode(b.Context(), BenchNode(i)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		ns, err := s.Nodes().ListNodes(b.Context(), store.NodeQuery{})
		if err != nil || len(ns) != count {
			b.Fatal(len(ns), err)
		}
	}
}
