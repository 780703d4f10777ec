#!/bin/sh
# build-rootfs.sh builds the root filesystem the opt-in real-IPA test
# (test/realipa) boots in a qemu VM: Debian bookworm with the Ironic Python
# Agent of the OpenStack 2023.1 series (tag 9.4.3, whose requirements.txt
# bookworm's python3 packages satisfy), installed from IPA's source.
#
# Usage (as root; needs debootstrap, git and e2fsprogs; reaches only the
# Debian mirror apt uses):
#   scripts/real-ipa/build-rootfs.sh IPA_GIT_DIR [OUT_DIR]
# IPA_GIT_DIR is a clone (bare or not) of openstack/ironic-python-agent;
# OUT_DIR defaults to /var/tmp/anvil-ipa. It writes OUT_DIR/rootfs.img (raw
# ext4, the VM's /dev/vda), OUT_DIR/vmlinuz and OUT_DIR/initrd.img. The
# image never belongs in the repository.
#
# IPA runs only inside the VM: its cleaning and deploy commands erase and
# write disks, and the VM's only disks are files.
set -eu
IPA_GIT=${1:?usage: build-rootfs.sh IPA_GIT_DIR [OUT_DIR]}
OUT=${2:-/var/tmp/anvil-ipa}
IPA_TAG=${IPA_TAG:-9.4.3}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOT=$OUT/rootfs

mkdir -p "$OUT"
if [ ! -x "$ROOT/usr/bin/python3" ]; then
	debootstrap --variant=minbase \
		--include=python3,python3-cffi-backend,python3-pbr,python3-eventlet,python3-netifaces,python3-oslo.config,python3-oslo.concurrency,python3-oslo.log,python3-oslo.service,python3-oslo.utils,python3-pint,python3-psutil,python3-pyudev,python3-requests,python3-stevedore,python3-tenacity,python3-ironic-lib,python3-werkzeug,python3-cryptography,python3-tooz,python3-pip,python3-setuptools,qemu-utils,parted,gdisk,dmidecode,lshw,hdparm,pciutils,mdadm,e2fsprogs,dosfstools,kmod,lvm2,linux-image-amd64,systemd-sysv,udev,iproute2,util-linux,procps,psmisc,xfsprogs \
		bookworm "$ROOT" "$MIRROR"
fi

# IPA from its source, at the tag.
rm -rf "$ROOT/opt/ipa" && mkdir -p "$ROOT/opt/ipa"
git -C "$IPA_GIT" archive "$IPA_TAG" | tar -x -C "$ROOT/opt/ipa"
git -C "$IPA_GIT" rev-parse "$IPA_TAG^{commit}" > "$ROOT/opt/ipa/COMMIT"
chroot "$ROOT" env PBR_VERSION="$IPA_TAG" pip install --no-deps --no-index --no-build-isolation \
	--break-system-packages /opt/ipa

# Network: DHCP on every NIC (qemu's user network).
mkdir -p "$ROOT/etc/systemd/network"
cat > "$ROOT/etc/systemd/network/20-dhcp.network" <<'NET'
[Match]
Name=en* eth*

[Network]
DHCP=ipv4
NET
# IPA, configured from the kernel command line (ipa-api-url, ...).
cat > "$ROOT/etc/systemd/system/ironic-python-agent.service" <<'UNIT'
[Unit]
Description=Ironic Python Agent
After=network-online.target systemd-udev-settle.service
Wants=network-online.target

[Service]
ExecStart=/usr/local/bin/ironic-python-agent --debug
Restart=always
RestartSec=5
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
UNIT
mkdir -p "$ROOT/etc/systemd/system/multi-user.target.wants" "$ROOT/etc/systemd/system/network-online.target.wants"
ln -sf /etc/systemd/system/ironic-python-agent.service "$ROOT/etc/systemd/system/multi-user.target.wants/"
ln -sf /lib/systemd/system/systemd-networkd.service "$ROOT/etc/systemd/system/multi-user.target.wants/"
ln -sf /lib/systemd/system/systemd-networkd-wait-online.service "$ROOT/etc/systemd/system/network-online.target.wants/"
mkdir -p "$ROOT/etc/ironic-python-agent"
# rescue.finalize_rescue writes the password here (IPA's image builders
# create it; without it IPA answers 500 "OSError is not JSON serializable").
mkdir -p "$ROOT/etc/ipa-rescue-config"
: > "$ROOT/etc/ironic-python-agent.conf"
echo ipa-vm > "$ROOT/etc/hostname"
echo '/dev/vda / ext4 rw,errors=remount-ro 0 1' > "$ROOT/etc/fstab"
# A root shell on the serial console, for debugging a run by hand.
mkdir -p "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d"
cat > "$ROOT/etc/systemd/system/serial-getty@ttyS0.service.d/autologin.conf" <<'GETTY'
[Service]
ExecStart=
ExecStart=-/sbin/agetty --autologin root --keep-baud 115200,38400,9600 %I $TERM
GETTY

cp -L "$ROOT/vmlinuz" "$OUT/vmlinuz" 2>/dev/null || cp "$(ls "$ROOT"/boot/vmlinuz-* | tail -1)" "$OUT/vmlinuz"
cp -L "$ROOT/initrd.img" "$OUT/initrd.img" 2>/dev/null || cp "$(ls "$ROOT"/boot/initrd.img-* | tail -1)" "$OUT/initrd.img"
rm -f "$OUT/rootfs.img"
mkfs.ext4 -q -L ipa-root -d "$ROOT" "$OUT/rootfs.img" 3G
echo "built $OUT/rootfs.img (IPA $IPA_TAG $(cat "$ROOT/opt/ipa/COMMIT"))"
