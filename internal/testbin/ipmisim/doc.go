// Package ipmisim runs OpenIPMI's ipmi_sim (Debian package openipmi) as one
// BMC on a loopback UDP port, for tests of the IPMI driver and of whole
// deployments: it writes the simulator's lan.conf and .emu files (LAN
// channel on 127.0.0.1, user 2 "admin" with a password, every
// authentication type, a chassis_control program) and starts it. The
// facts behind the files are in the project workspace's shared/tools/simulators.md ipmi_sim
// section: ipmi_sim binds its UDP port only once it is ready to answer.
//
// It is imported by tests only.
package ipmisim
