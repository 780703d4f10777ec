package ramdisk

import (
	"path/filepath"
	"strings"
)

// Paths inside the initramfs.
const (
	dhcpScript = "usr/share/udhcpc/default.script"
)

// InitScript is the ramdisk's /init (a busybox sh script, PID 1): it mounts
// proc, sys and dev, loads the drivers of the devices present by modalias
// (`anvil ramdisk coldplug`, as udev would at boot), brings every NIC up,
// waits a bounded time for links, configures those with a link by DHCP and
// runs `anvil agent` with no flags, again whenever it exits. The agent takes
// its settings from /proc/cmdline.
func InitScript() string {
	return `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /var/run /etc /sbin /usr/bin /usr/sbin
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
log() { echo "anvil-ramdisk: $* (uptime $(cut -d' ' -f1 /proc/uptime)s)"; }
log "init, kernel $(uname -r)"
# drivers by modalias: /sys/bus/*/devices/*/modalias against modules.alias
/bin/anvil ramdisk coldplug || log "coldplug failed"
# NICs with a device behind them (not lo, not virtual ones)
nics() {
  for d in /sys/class/net/*; do
    [ -e "$d/device" ] && echo "${d##*/}"
  done
}
ip link set lo up
i=0
while [ -z "$(nics)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done
for n in $(nics); do ip link set "$n" up; done
# links come up within seconds of the NIC (autonegotiation): wait for any
# carrier, then give the others a little longer
i=0
while [ $i -lt 150 ]; do
  up=0; down=0
  for n in $(nics); do
    if [ "$(cat /sys/class/net/$n/carrier 2>/dev/null)" = 1 ]; then up=$((up+1)); else down=$((down+1)); fi
  done
  [ $down -eq 0 ] && break
  [ $up -gt 0 ] && [ $i -ge 30 ] && break
  sleep 0.1; i=$((i+1))
done
for n in $(nics); do
  if [ "$(cat /sys/class/net/$n/carrier 2>/dev/null)" != 1 ]; then
    log "$n ($(cat /sys/class/net/$n/address)): no link, not configured"
    continue
  fi
  log "$n ($(cat /sys/class/net/$n/address)): link up, DHCP"
  # foreground until a lease (3 tries), then in the background to renew it
  udhcpc -i "$n" -s /` + dhcpScript + ` -b -t 3 -T 2 -A 3 || log "udhcpc on $n failed"
done
ip addr
ip route
log "disks: $(ls /sys/block | tr '\n' ' ')"
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
