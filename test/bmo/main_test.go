// Package bmo_test replays Metal3's baremetal-operator (BMO) against Anvil:
// the calls BMO's Ironic provisioner makes, in its order, at the
// microversion it negotiates, with its request bodies, through the
// gophercloud calls and opts structs BMO uses.
//
// It follows baremetal-operator commit
// 02aa5059e3482f9dc3b5115c3a45cec4b000ae16 (github.com/metal3-io/
// baremetal-operator, pkg/provisioner/ironic: clients/features.go,
// register.go, ironic.go, inspecthardware.go, raid.go, servicing.go,
// hardwaredetails, devicehints; pkg/hardwareutils/bmc redfish.go and
// redfish_virtualmedia.go). BMO cannot be imported, so the deciding code is
// ported in bmoport_test.go, provisioner_test.go and lifecycle_test.go, each
// function naming the BMO function it follows (the phases are in
// phases_test.go and power_test.go); testdata/README.md lists
// what was left out.
//
// The machines are the BMC emulator (internal/bmcemu, the code of `anvil
// bmc-emulator`) in this process, Redfish on loopback, with the deploy
// agent booted in process when a machine boots the network or its virtual
// CD with an image inserted; Anvil is a built `anvil serve` on a temporary
// SQLite database; the deploy kernel, ramdisk and ISO, the image and the
// firmware file come from an HTTP server of the test on loopback.
//
// Each reconcile step loops as BMO's controller would (a fresh node cache
// per pass, polling faster than BMO's 3 s and 10 s requeues) until it is
// done, bounded by a deadline; an error BMO would only retry fails the
// phase, as does any error message BMO would record on the host.
package bmo_test

import (
	"os"
	"testing"

	"github.com/anvil-metal/anvil/internal/testbin"
)

var anvilBin string

func TestMain(m *testing.M) { os.Exit(testbin.Main(m, &anvilBin, nil)) }
