#!/usr/bin/python3
"""Enroll -> active of N fake-hardware nodes on OpenStack Ironic 21.4 (or on Anvil).

Starts Debian's Ironic 21.4 (python3-ironic: `apt-get install python3-ironic`) as one
process (ironic.cmd.singleprocess: API + conductor, rpc_transport none, noauth, SQLite,
every fake-hardware interface, fake delays none) on a free 127.0.0.1 port with its own
configuration in a temporary directory, and drives it over its HTTP API as
`baremetal node create|manage|provide|deploy` would, CONCURRENCY requests at a time:

  create  POST /v1/nodes (driver fake-hardware)
  manage  PUT .../states/provision {"target": "manage"}   -> manageable (verify)
  provide {"target": "provide"}                           -> available (automated clean)
  deploy  {"target": "active"}                            -> active

A verb answered 409 (node locked) or 503 (no free conductor worker) is retried after
0.5 s. After a phase's verbs the nodes are listed every 0.5 s until each is in the end
state; a node's phase time runs from its accepted verb to when it was first seen there.
Printed: per phase the time, nodes/s, p50/p99 of a node's phase time; the server's CPU
seconds per 1,000 nodes and its peak RSS (VmHWM).

  scripts/ironic-fleet-bench.py -n 100
  scripts/ironic-fleet-bench.py -n 1000 --concurrency 32

--api URL --pid PID drives a server already running instead (e.g. `anvil serve` with
fake-hardware) with the same client, for a side-by-side figure.
Everything stays on loopback.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

PY = "/usr/bin/python3"  # Debian's interpreter: python3-ironic is in its dist-packages
HEADERS = {"Content-Type": "application/json", "X-OpenStack-Ironic-API-Version": "1.82"}

CONF = """[DEFAULT]
debug = False
log_file = {state}/ironic.log
use_stderr = False
auth_strategy = noauth
rpc_transport = none
host = ironic-fleet-bench
my_ip = 127.0.0.1
state_path = {state}
tempdir = {state}/tmp
enabled_hardware_types = fake-hardware
enabled_bios_interfaces = fake
enabled_boot_interfaces = fake
enabled_console_interfaces = fake
enabled_deploy_interfaces = fake
enabled_inspect_interfaces = fake
enabled_management_interfaces = fake
enabled_network_interfaces = noop
enabled_power_interfaces = fake
enabled_raid_interfaces = fake
enabled_rescue_interfaces = fake
enabled_storage_interfaces = noop
enabled_vendor_interfaces = fake
default_deploy_interface = fake
default_boot_interface = fake
default_network_interface = noop

[api]
host_ip = 127.0.0.1
port = {port}
api_workers = 1

[database]
connection = sqlite:///{state}/ironic.sqlite

[dhcp]
dhcp_provider = none

[oslo_concurrency]
lock_path = {state}/locks

[oslo_messaging_notifications]
driver = noop
"""


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def call(api, method, path, body=None, timeout=600):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(api + path, data=data, method=method, headers=HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def start_ironic(state, port):
    os.makedirs(os.path.join(state, "tmp"))
    os.makedirs(os.path.join(state, "locks"))
    conf = os.path.join(state, "ironic.conf")
    with open(conf, "w") as f:
        f.write(CONF.format(state=state, port=port))
    dbsync = 'import sys; sys.argv[0]="ironic-dbsync"; from ironic.cmd.dbsync import main; sys.exit(main())'
    subprocess.run([PY, "-c", dbsync, "--config-file", conf, "create_schema"], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run = 'import sys; sys.argv[0]="ironic"; from ironic.cmd.singleprocess import main; main()'
    out = open(os.path.join(state, "ironic.stdout"), "w")
    proc = subprocess.Popen([PY, "-c", run, "--config-file", conf], stdout=out, stderr=out,
                            stdin=subprocess.DEVNULL)
    api = "http://127.0.0.1:%d" % port
    deadline = time.time() + 120
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit("ironic exited during start-up; see %s/ironic.log" % state)
        try:
            status, body = call(api, "GET", "/v1/drivers", timeout=5)
            if status == 200 and b"fake-hardware" in body:
                return proc, api
        except OSError:
            pass
        time.sleep(0.5)
    proc.kill()
    sys.exit("ironic not ready in 120 s; see %s/ironic.log" % state)


def proc_cpu(pid):
    """CPU seconds of pid and its children (utime+stime+cutime+cstime)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return sum(int(x) for x in fields[11:15]) / tick


def proc_hwm(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def pct(values, p):
    v = sorted(values)
    i = max(0, (len(v) * p + 99) // 100 - 1)
    return v[i]


def list_states(api):
    nodes, marker = [], ""
    while True:
        path = "/v1/nodes?fields=uuid,provision_state,target_provision_state,last_error&limit=1000"
        status, body = call(api, "GET", path + ("&marker=" + marker if marker else ""))
        if status != 200:
            raise RuntimeError("node list: HTTP %d %s" % (status, body[:300]))
        page = json.loads(body)["nodes"]
        nodes += page
        if len(page) < 1000:
            return nodes
        marker = page[-1]["uuid"]


def provision(api, uuid, target, deadline):
    while True:
        status, body = call(api, "PUT", "/v1/nodes/%s/states/provision" % uuid, {"target": target})
        if status == 202:
            return time.time()
        if status not in (409, 503) or time.time() > deadline:
            raise RuntimeError("%s %s: HTTP %d %s" % (target, uuid, status, body[:300]))
        time.sleep(0.5)


def phase(api, uuids, target, end, conc, bound):
    deadline = time.time() + bound
    start = time.time()
    with ThreadPoolExecutor(conc) as pool:
        accepted = dict(zip(uuids, pool.map(lambda u: provision(api, u, target, deadline), uuids)))
    done = {}
    while len(done) < len(uuids):
        now = time.time()
        for n in list_states(api):
            if n["uuid"] in done or n["uuid"] not in accepted:
                continue
            if n["provision_state"] == end and n["target_provision_state"] is None:
                done[n["uuid"]] = now
            elif n["provision_state"].endswith("failed"):
                raise RuntimeError("node %s: %s: %s" % (n["uuid"], n["provision_state"], n["last_error"]))
        if now > deadline:
            raise RuntimeError("%d nodes not %s in %d s" % (len(uuids) - len(done), end, bound))
        if len(done) < len(uuids):
            time.sleep(0.5)
    took = time.time() - start
    times = [done[u] - accepted[u] for u in uuids]
    return took, times


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=100, help="nodes")
    ap.add_argument("--concurrency", type=int, default=32, help="requests in flight")
    ap.add_argument("--bound", type=int, default=3600, help="seconds a phase may take")
    ap.add_argument("--api", help="drive this running server instead of starting Ironic")
    ap.add_argument("--pid", type=int, help="with --api: the server's process id (CPU, RSS)")
    ap.add_argument("--keep", action="store_true", help="keep Ironic's state directory")
    a = ap.parse_args()

    state, proc = None, None
    if a.api:
        api, pid, what = a.api.rstrip("/"), a.pid, "server at " + a.api
    else:
        state = tempfile.mkdtemp(prefix="ironic-fleet-bench-")
        proc, api = start_ironic(state, free_port())
        pid, what = proc.pid, "Ironic 21.4 (single process, SQLite, fake-hardware)"
    try:
        cpu0 = proc_cpu(pid) if pid else 0
        start = time.time()
        with ThreadPoolExecutor(16) as pool:
            def create(i):
                status, body = call(api, "POST", "/v1/nodes",
                                    {"driver": "fake-hardware", "name": "fleet-%05d" % i})
                if status != 201:
                    raise RuntimeError("create: HTTP %d %s" % (status, body[:300]))
                return json.loads(body)["uuid"]
            uuids = list(pool.map(create, range(a.n)))
        created = time.time() - start
        print("%s, %d nodes, %d requests in flight" % (what, a.n, a.concurrency))
        print("  create  %7.1f s  %7.1f nodes/s" % (created, a.n / created))
        for target, end, name in (("manage", "manageable", "manage"), ("provide", "available", "provide"),
                                  ("active", "active", "deploy")):
            took, times = phase(api, uuids, target, end, a.concurrency, a.bound)
            print("  %-7s %7.1f s  %7.1f nodes/s  a node's p50 %.1f s p99 %.1f s" %
                  (name, took, a.n / took, pct(times, 50), pct(times, 99)))
        total = time.time() - start
        print("  enroll -> active %.1f s (%.1f nodes/s)" % (total, a.n / total))
        if pid:
            print("  server: %.1f CPU-s per 1,000 nodes, peak RSS %d MiB" %
                  ((proc_cpu(pid) - cpu0) * 1000 / a.n, proc_hwm(pid) >> 20))
    finally:
        if proc:
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
            if a.keep:
                print("  state kept in", state)
            else:
                shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    main()
