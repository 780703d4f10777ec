package drivertest_test

import (
	"testing"

	"github.com/anvil-metal/anvil/internal/driver/drivertest"
	"github.com/anvil-metal/anvil/internal/driver/fake"
	"github.com/anvil-metal/anvil/internal/model"
)

// The fake has no BMC: no credentials to get wrong, no address to miss.
func TestFake(t *testing.T) {
	h := fake.New()
	drivertest.Run(t, drivertest.Target{
		Power: h, Management: h,
		Good: func(*testing.T) *model.Node {
			return &model.Node{UUID: "0d9c3a53-5b0e-4a63-9d0b-3f3e7a3a3f10", Driver: fake.Name}
		},
		SoftPower:          true,
		PersistentReadback: true,
	})
}
