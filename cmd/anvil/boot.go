package main

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/anvil-metal/anvil/internal/boot"
)

// newBootCommand is `anvil boot`: helpers for the network boot service.
func newBootCommand(stdout io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "boot",
		Short: "Network boot helpers (dnsmasq configuration)",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newBootDnsmasqConfig(stdout))
	return cmd
}

func newBootDnsmasqConfig(stdout io.Writer) *cobra.Command {
	var opts boot.DnsmasqOptions
	cmd := &cobra.Command{
		Use:   "dnsmasq-config",
		Short: "Print a dnsmasq configuration: proxyDHCP, iPXE over TFTP, chain to Anvil's boot script",
		Long: "Print a dnsmasq configuration for a boot network whose own DHCP server leases the\n" +
			"addresses: dnsmasq answers PXE clients in proxy mode, serves the iPXE binaries by TFTP\n" +
			"and hands iPXE the URL of Anvil's boot script ({http-url}/boot.ipxe).\n\n" +
			"Example:\n  anvil boot dnsmasq-config --interface eth1 --subnet 10.0.2.0/24 \\\n" +
			"    --http-url http://10.0.2.100:6385/boot > /etc/dnsmasq.d/anvil.conf",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return boot.DnsmasqConfig(stdout, opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Interface, "interface", "", "boot network interface (default: all)")
	f.StringVar(&opts.Subnet, "subnet", "", "boot network, e.g. 10.0.2.0/24 (required)")
	f.StringVar(&opts.HTTPURL, "http-url", "", "Anvil's boot endpoint as machines reach it, e.g. http://10.0.2.100:6385/boot (required)")
	f.StringVar(&opts.ServerIP, "server-ip", "", "this host's IPv4 address on the boot network (default: the host of --http-url)")
	f.StringVar(&opts.TFTPRoot, "tftp-root", boot.DefaultTFTPDir, "directory holding the iPXE binaries")
	f.StringVar(&opts.EFIBinary, "efi-binary", boot.EFIBinary, "iPXE binary for UEFI: "+boot.EFIBinary+" or "+boot.SNPOnlyBinary)
	cmd.MarkFlagRequired("subnet")
	cmd.MarkFlagRequired("http-url")
	return cmd
}
