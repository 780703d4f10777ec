#!/usr/bin/env python3
"""refresh-replay.py refreshes test/agent/testdata/ipa/exchanges.json (the CI
replay of IPA's side, test/agent/ipa_replay_test.go) from a recording of the
real IPA (test/realipa, ANVIL_REAL_IPA_RECORD=DIR → DIR/exchanges.json).

Usage: scripts/real-ipa/refresh-replay.py RECORDING.json FIXTURE.json DATE

It takes from the recording what IPA sent and answered: the lookup and
heartbeat requests (path, query, headers, body keys), the inspection data
(the whole body, MAC and token placeholders put back), each command's
answer shape and the failure shape IPA gave a failed command. The command
signatures and the faults stay as they are in the fixture (they come from
IPA's source; the recording holds no fault). Values the replay fills in
become {{...}} placeholders.
"""
import json
import sys

rec_path, fix_path, date = sys.argv[1], sys.argv[2], sys.argv[3]
rec = json.load(open(rec_path))
fix = json.load(open(fix_path))
MAC = None


def first(pred):
    for e in rec:
        if pred(e):
            return e
    raise SystemExit("recording lacks an exchange the fixture needs")


def headers(e):
    return {k: v for k, v in e["headers"].items() if k != "User-Agent"}


lookup = first(lambda e: e["path"] == "/v1/lookup" and e["status"] == 200)
MAC = lookup["query"].split("=", 1)[1].replace("%3A", ":")
node = json.loads(json.dumps(lookup["answer"]))["node"]["uuid"]


def placeholders(v):
    """Puts the replay's placeholders back into recorded values."""
    s = json.dumps(v)
    s = s.replace(MAC, "{{mac}}").replace("01-" + MAC.replace(":", "-"), "{{bootif}}")
    s = s.replace(node, "{{node}}")
    return json.loads(s)


fix["lookup"] = {"method": "GET", "path": "/v1/lookup", "query": {"addresses": "{{macs}}"},
                 "headers": headers(lookup)}
hb = first(lambda e: e["path"].startswith("/v1/heartbeat/") and e["status"] < 300)
body = {k: "{{%s}}" % k if k in ("callback_url", "agent_token", "agent_verify_ca") else v
        for k, v in hb["body"].items()}
body["agent_token"] = "{{token}}"
fix["heartbeat"] = {"method": "POST", "path": "/v1/heartbeat/{{node}}", "headers": headers(hb), "body": body}
ins = first(lambda e: e["path"] == "/v1/continue_inspection" and e["status"] < 300)
body = placeholders(ins["body"])
if "logs" in body:  # IPA's gzipped journal (~80 KB): only in the recording
    body["logs"] = "(left out of the replay: the recording has it)"
fix["inspection"] = {"method": "POST", "path": "/v1/continue_inspection", "headers": headers(ins), "body": body}
disc = first(lambda e: e["path"] == "/" and e["dir"] == "ipa->anvil")
fix["version_discovery"] = {"method": "GET", "path": "/", "headers": headers(disc), "reads": "default_version.version"}

# Commands: the answers IPA gave (the last poll of each command), with
# the parameters Anvil sent it.
final, params = {}, {}
for e in rec:
    if e["dir"] != "anvil->ipa" or e["status"] != 200 or not isinstance(e.get("answer"), dict):
        continue
    a = e["answer"]
    if e["method"] == "POST" and isinstance(e.get("body"), dict):
        params[a.get("id")] = e["body"].get("params") or {}
    if "command_name" in a and a["command_status"] != "RUNNING":
        final[a["command_name"]] = (a, params.get(a["id"], {}))


def param_placeholders(v, p):
    """Puts {{params.X}} back where a result repeats a parameter."""
    for k, pv in p.items():
        if isinstance(v, dict) and any(x == pv and isinstance(pv, dict) for x in v.values()):
            v = {kk: ("{{params.%s}}" % k if x == pv else x) for kk, x in v.items()}
    img = (p.get("image_info") or {}).get("id")
    if img:
        v = json.loads(json.dumps(v).replace("(%s)" % img, "({{params.image_info.id}})"))
    return v
for full, spec in fix["commands"].items():
    name = full.split(".", 1)[1]
    a, p = final.get(name, (None, None))
    if not a:
        spec.pop("recorded", None)
        continue
    spec["recorded"] = True
    if a["command_status"] == "SUCCEEDED":
        spec["result"] = param_placeholders(placeholders(a["command_result"]), p)
    else:
        # Kept beside the failure the replay plays (built from source), as
        # a record of the real shape.
        spec["recorded_failure"] = placeholders(a["command_error"])

commit = open(sys.argv[4]).read().strip() if len(sys.argv) > 4 else fix["provenance"].get("commit")
fix["provenance"] = {
    "repository": "https://opendev.org/openstack/ironic-python-agent (GitHub mirror openstack/ironic-python-agent)",
    "ref": "9.4.3", "commit": commit,
    "release": "9.4.3 (stable/2023.1, the series of Ironic 21.4)",
    "recorded": "recorded from IPA 9.4.3 on %s running in a qemu VM against anvil serve "
                "(test/realipa; the recording is test/agent/testdata/ipa-real/exchanges.json): lookup, heartbeat, "
                "inspection data and every command marked \"recorded\": true" % date,
    "built_from": "commands without \"recorded\": their signature, result and failure from IPA's source "
                  "(extensions/{standby,clean,deploy,rescue,image,log}.py, errors.py); the signatures and the "
                  "faults of every command from api/app.py and extensions/base.py",
}
json.dump(fix, open(fix_path, "w"), indent=1)
open(fix_path, "a").write("\n")
