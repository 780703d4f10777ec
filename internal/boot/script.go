package boot

import (
	"fmt"
	"strings"
)

// The iPXE scripts. Their shape follows Ironic's boot.ipxe (try each NIC's
// per-MAC configuration in turn) and ipxe_config.template (imgfree, kernel
// with BOOTIF=${mac} and ipa-api-url, initrd named on the command line,
// retry on a failed download).

// genericScript is {HTTPURL}/boot.ipxe: it chains the configuration of the
// first NIC Anvil knows and exits to the next boot device when none is.
func genericScript(httpURL string) []byte {
	return []byte(`#!ipxe
# Anvil: try the boot configuration of each network interface in turn.
set netid:int32 -1
:loop
inc netid
isset ${net${netid}/mac} || goto unknown
echo Anvil: looking up ${net${netid}/mac}
chain ` + httpURL + macPrefix + `${net${netid}/mac:hexhyp} || goto loop

:unknown
echo Anvil: no boot configuration for any network interface of this machine.
echo Anvil: exiting iPXE so the firmware boots the next device.
exit 1
`)
}

// macPath is the per-MAC script's path below HTTPURL, for a canonical MAC
// (aa:bb:...); iPXE asks for it with ${mac:hexhyp} (aa-bb-...).
func macPath(mac string) string { return macPrefix + strings.ReplaceAll(mac, ":", "-") }

// macPrefix starts the per-MAC scripts' paths below HTTPURL.
const macPrefix = "/mac/"

// ramdiskScript boots the node's kernel and ramdisk, found under base
// ({HTTPURL}/n/{token}).
func ramdiskScript(base, params, apiURL string) []byte {
	cmdline := strings.Join(strings.Fields(params), " ")
	if cmdline != "" {
		cmdline += " "
	}
	cmdline += "BOOTIF=${mac}"
	if apiURL != "" {
		cmdline += " ipa-api-url=" + apiURL
	}
	cmdline += " initrd=" + ramdiskFile
	return fmt.Appendf(nil, `#!ipxe
:deploy
imgfree
kernel %s/%s %s || goto retry
initrd %s/%s || goto retry
boot

:retry
echo Anvil: downloading the ramdisk failed; retrying in 10 seconds.
sleep 10
goto deploy
`, base, kernelFile, cmdline, base, ramdiskFile)
}

// localBootScript leaves iPXE so the firmware boots the disk.
func localBootScript() []byte {
	return []byte(`#!ipxe
echo Anvil: booting from the local disk.
exit 0
`)
}
