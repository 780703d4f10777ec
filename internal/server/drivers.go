package server

import (
	"github.com/anvil-metal/anvil/internal/driver"
	"github.com/anvil-metal/anvil/internal/driver/fake"
)

// Registry builds the driver registry with every enabled hardware type.
func Registry(fk *fake.Hardware) *driver.Registry {
	r := driver.NewRegistry()
	fk.Register(r)
	return r
}
