package ramdisk

import (
	"path/filepath"
	"strings"
)

// VirtioModules are the modules a Debian kernel builds as =m that a qemu
// machine with virtio disks and NICs needs, in dependency order.
func VirtioModules() []string {
	return []string{"virtio_ring", "virtio", "virtio_pci_legacy_dev", "virtio_pci_modern_dev",
		"virtio_pci", "virtio_blk", "failover", "net_failover", "virtio_net"}
}

// Paths inside the initramfs.
const (
	modulesDir = "lib/modules/anvil"
	dhcpScript = "usr/share/udhcpc/default.script"
)

// InitScript is the ramdisk's /init (a busybox sh script, PID 1): it mounts
// proc, sys and dev, insmods modules (names without .ko, from
// /lib/modules/anvil, in the order given), configures every NIC that has a
// device behind it with DHCP and runs `anvil agent` with no flags, again
// whenever it exits. The agent takes its settings from /proc/cmdline.
func InitScript(modules []string) string {
	return `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /var/run /etc /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
log() { echo "anvil-ramdisk: $* (uptime $(cut -d' ' -f1 /proc/uptime)s)"; }
log "init"
for m in ` + strings.Join(modules, " ") + `; do
  insmod /` + modulesDir + `/$m.ko || log "insmod $m failed"
done
# NICs with a device behind them (not lo, not virtual ones)
nics() {
  for d in /sys/class/net/*; do
    [ -e "$d/device" ] && echo "${d##*/}"
  done
}
ip link set lo up
i=0
while [ -z "$(nics)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
for n in $(nics); do
  ip link set "$n" up
  # foreground until a lease (3 tries), then in the background to renew it
  udhcpc -i "$n" -s /` + dhcpScript + ` -b -t 3 -T 2 -A 3 || log "udhcpc on $n failed"
done
ip addr
ip route
log "starting anvil agent"
while true; do
  /bin/anvil agent
  log "anvil agent exited with $?; restarting"
  sleep 2
done
`
}

// udhcpcScript is busybox udhcpc's event script: it applies the lease
// (address, netmask, default route, DNS servers) from its environment.
const udhcpcScript = `#!/bin/sh
case "$1" in
deconfig)
  ip -4 addr flush dev "$interface"
  ip link set "$interface" up
  ;;
bound|renew)
  ifconfig "$interface" "$ip" ${subnet:+netmask "$subnet"} ${broadcast:+broadcast "$broadcast"}
  for r in $router; do
    ip route replace default via "$r" dev "$interface" && break
  done
  if [ -n "$dns" ]; then
    : >/etc/resolv.conf
    for s in $dns; do echo "nameserver $s" >>/etc/resolv.conf; done
  fi
  echo "anvil-ramdisk: $interface $1 $ip/$subnet router $router"
  ;;
esac
exit 0
`

// moduleName is a module file's name without directory and .ko.
func moduleName(path string) string {
	return strings.TrimSuffix(filepath.Base(path), ".ko")
}
