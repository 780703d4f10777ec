#!/usr/bin/env bash
# Anvil's one test command (README: `make test`; CI: .ci/run).
# Installs what the tests need when it is missing (idempotent), then runs
# formatting and vet checks and every Go test with the race detector.
# Environment: ANVIL_TEST_POSTGRES_DSN to use an existing PostgreSQL instead of
# a throwaway one; GO_TEST_FLAGS for extra `go test` flags.
set -euo pipefail
cd "$(dirname "$0")/.."

need_pkgs=()
command -v baremetal >/dev/null 2>&1 || need_pkgs+=(python3-ironicclient)
/usr/bin/python3 -c 'import ironic.cmd.singleprocess' 2>/dev/null || need_pkgs+=(python3-ironic)   # test/ironic: real Ironic drives anvil agent
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need_pkgs+=(postgresql)
command -v ipmi_sim >/dev/null 2>&1 || need_pkgs+=(openipmi)
command -v qemu-system-x86_64 >/dev/null 2>&1 || need_pkgs+=(qemu-system-x86)
command -v busybox >/dev/null 2>&1 || need_pkgs+=(busybox-static)
command -v depmod >/dev/null 2>&1 || [ -x /usr/sbin/depmod ] || need_pkgs+=(kmod)   # test/vm: depmod checks the modules.dep/modules.alias anvil ramdisk build writes
command -v qemu-img >/dev/null 2>&1 || need_pkgs+=(qemu-utils)     # makes and converts the qcow2 images the agent tests deploy
[ -x /usr/sbin/dnsmasq ] || need_pkgs+=(dnsmasq-base)   # checks the config `anvil boot dnsmasq-config` prints
command -v tftp >/dev/null 2>&1 || need_pkgs+=(tftp-hpa)          # a real TFTP client for the boot service
[ -e /usr/lib/ipxe/undionly.kpxe ] || need_pkgs+=(ipxe)              # the iPXE binaries the TFTP service serves
command -v prlimit >/dev/null 2>&1 || need_pkgs+=(util-linux)         # test/agent: a disk write error (the agent's file size limit lowered)
# test/ironic-emu: Debian's Ironic (and its Redfish library) drives the BMC emulator; it builds ISOs with isolinux + mkisofs
/usr/bin/python3 -c 'import ironic' >/dev/null 2>&1 || need_pkgs+=(python3-ironic)
/usr/bin/python3 -c 'import sushy' >/dev/null 2>&1 || need_pkgs+=(python3-sushy)
command -v mkisofs >/dev/null 2>&1 || need_pkgs+=(genisoimage)
[ -e /usr/lib/ISOLINUX/isolinux.bin ] || need_pkgs+=(isolinux)       # BIOS loader of virtual media ISOs (Anvil's and Ironic's)
[ -e /usr/lib/syslinux/modules/bios/ldlinux.c32 ] || need_pkgs+=(syslinux-common)
[ -e /usr/lib/grub/x86_64-efi/monolithic/gcdx64.efi ] || need_pkgs+=(grub-efi-amd64-bin)  # UEFI loader of the ISOs; GRUB modules (http.mod) of the http boot interface's loader
[ -e /usr/share/OVMF/OVMF_CODE_4M.fd ] || need_pkgs+=(ovmf)   # UEFI firmware: the ISO boot test, bmc-emulator --qemu UEFI machines
# internal/agent, test/ironic: UEFI whole-disk images (an EFI system partition made by mkfs.fat, filled by mtools) and efibootmgr reading the boot entries the agent writes
{ command -v mkfs.fat || [ -x /usr/sbin/mkfs.fat ] || [ -x /sbin/mkfs.fat ]; } >/dev/null 2>&1 || need_pkgs+=(dosfstools)
command -v mcopy >/dev/null 2>&1 || need_pkgs+=(mtools)
command -v efibootmgr >/dev/null 2>&1 || need_pkgs+=(efibootmgr)
# test/efiboot: the agent's UEFI boot entry booted by OVMF: Debian's kernel (+ modules) runs the agent, grub-mkstandalone makes the loader
ls /boot/vmlinuz-* >/dev/null 2>&1 || need_pkgs+=(linux-image-amd64)
command -v grub-mkstandalone >/dev/null 2>&1 || need_pkgs+=(grub-common)   # also grub-mkimage: the http boot interface builds its GRUB loader
{ command -v mkfs.ext4 || [ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ]; } >/dev/null 2>&1 || need_pkgs+=(e2fsprogs)   # the test OS partition image (internal/testos)
# test/realos: `anvil ramdisk build --grub` puts this machine's GRUB in the ramdisk (grub-install, BIOS and UEFI files); the test OS's whole-disk image boots BIOS through GRUB's i386-pc image
[ -x /usr/sbin/grub-install ] || need_pkgs+=(grub2-common)
[ -e /usr/lib/grub/i386-pc/moddep.lst ] || need_pkgs+=(grub-pc-bin)
[ -e /usr/lib/ipxe/qemu/efi-virtio.rom ] || need_pkgs+=(ipxe-qemu)   # the NIC boot ROM of the qemu VMs (network boot, BIOS and UEFI)
command -v chromium >/dev/null 2>&1 || need_pkgs+=(chromium)         # the dashboard's browser tests (test/dashboard)
yes=""
for a in "$@"; do
  case "$a" in
    -y|--yes) yes=1 ;;
    *) echo "usage: scripts/test.sh [-y]  (-y: install missing Debian packages without asking)" >&2; exit 2 ;;
  esac
done
if [ ${#need_pkgs[@]} -gt 0 ]; then
  echo "== the tests need these Debian packages, missing here: ${need_pkgs[*]}"
  if [ -z "${CI:-}" ] && [ -z "$yes" ]; then
    if [ -t 0 ]; then
      printf "install them with apt-get now? [y/N] "
      read -r answer
      case "$answer" in y|Y|yes) ;; *) echo "not installed; run again with -y (make test TESTFLAGS=-y) or install them yourself" >&2; exit 1 ;; esac
    else
      echo "not installed: no terminal to ask; run again with -y (make test TESTFLAGS=-y), or with CI set" >&2
      exit 1
    fi
  fi
  echo "== installing test dependencies: ${need_pkgs[*]}"
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_pkgs[@]}" >/dev/null
fi

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change: $unformatted" >&2
  exit 1
fi

echo "== go vet"
go vet ./...

# The real `baremetal` CLI (installed above) runs in the API's and the
# server's CLI tests too; they take minutes, so a developer may turn them
# off with ANVIL_BAREMETAL_CLI=0.
export ANVIL_BAREMETAL_CLI="${ANVIL_BAREMETAL_CLI:-1}"

echo "== go test -race"
# shellcheck disable=SC2086
go test -race -count=1 -timeout 30m ${GO_TEST_FLAGS:-} ./...

# The fleet acceptance tests at the issue's size (1,000 machines enroll →
# active, a power-sync sweep of 2,000 BMCs, under session limits, latency
# and 503s): the race detector's cost per goroutine makes them shrink
# under -race, so they run once more at full size without it.
echo "== fleet acceptance at full size"
# shellcheck disable=SC2086
go test -count=1 -timeout 20m ${GO_TEST_FLAGS:-} -run 'TestFleetEnrollToActiveUnderBMCLimits|TestPowerSyncSweepUnderBMCLimits' ./internal/demo/
